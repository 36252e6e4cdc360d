/**
 * The thread actor's protocol. Client commands (StartRun, InterruptRun,
 * RespondApproval from the domain) plus the messages a run's own fiber sends back
 * while it drives the provider. All are Schema classes, so the same protocol can run
 * as a cluster entity later.
 */
import {
  InterruptRun,
  ProviderThreadId,
  RespondApproval,
  RunFailure,
  RunId,
  StartRun,
  TurnItemContent,
  ValidatedTaggedClass
} from "@skein/domain"
import { Schema } from "effect"

/**
 * Provider events that become turn items of the run: all those that had arrived when
 * the run's fiber read them, recorded in one commit.
 */
export class RecordItems extends ValidatedTaggedClass<RecordItems>()("RecordItems", {
  runId: RunId,
  items: Schema.NonEmptyArray(TurnItemContent)
}) {}

/** The run's provider thread now has a native ref (a new provider thread was started). */
export class BindNativeThread extends ValidatedTaggedClass<BindNativeThread>()("BindNativeThread", {
  runId: RunId,
  providerThreadId: ProviderThreadId,
  nativeRef: Schema.String,
  strength: Schema.Literal("strong", "weak", "none")
}) {}

/** Resuming the target provider thread failed: re-plan with a full summary into a new one. */
export class ResumeFailed extends ValidatedTaggedClass<ResumeFailed>()("ResumeFailed", {
  runId: RunId,
  detail: Schema.String
}) {}

export const RunOutcome = Schema.Literal("completed", "failed", "interrupted")

export class FinishRun extends ValidatedTaggedClass<FinishRun>()("FinishRun", {
  runId: RunId,
  outcome: RunOutcome,
  failure: Schema.NullOr(RunFailure),
  /** The provider's turn handle, when the turn reached the provider. */
  turnRef: Schema.NullOr(Schema.String),
  /** Items that arrived together with the end of the turn, recorded in the same commit. */
  items: Schema.Array(TurnItemContent)
}) {}

/** Ask the active run to stop, with the reason recorded on the run. */
export class StopRun extends ValidatedTaggedClass<StopRun>()("StopRun", {
  reason: Schema.Literal("user_interrupt", "shutdown")
}) {}

/** Read the actor's current state (for tests, benchmarks and waiting). */
export class Inspect extends ValidatedTaggedClass<Inspect>()("Inspect", {}) {}

export const ThreadMessage = Schema.Union(
  StartRun,
  InterruptRun,
  RespondApproval,
  RecordItems,
  BindNativeThread,
  ResumeFailed,
  FinishRun,
  StopRun,
  Inspect
)
export type ThreadMessage = typeof ThreadMessage.Type
