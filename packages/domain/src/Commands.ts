/**
 * Commands: what a client asks of Skein. Each command's fields are also the payload
 * of its RPC method; the tagged classes are the serialisable form a thread's mailbox
 * (or, later, a cluster entity) receives. Every mutating command takes a `commandId`
 * that makes it idempotent.
 */
import { Schema } from "effect"
import { ApprovalId, CheckpointId, CommandId, ProviderName, RunId, ThreadId } from "./Ids.js"
import { ValidatedTaggedClass } from "./ValidatedClass.js"

const commandId = Schema.optional(CommandId)

export const Title = Schema.String.pipe(Schema.maxLength(500))
/** A user message, at most 1 MiB of text. */
export const Message = Schema.String.pipe(
  Schema.minLength(1, { message: () => "message must not be empty" }),
  Schema.maxLength(1_048_576, { message: () => "message is over 1 MiB" })
)
/** Handoff budget in tokens: 1,024 to 64,000 (default 16,000). */
export const HandoffBudgetTokens = Schema.Int.pipe(Schema.between(1024, 64_000))
export const DEFAULT_HANDOFF_BUDGET_TOKENS = 16_000

export const CreateThreadFields = {
  title: Schema.optional(Title),
  workspace: Schema.optional(Schema.String),
  commandId
}
export class CreateThread extends ValidatedTaggedClass<CreateThread>()("CreateThread", CreateThreadFields) {}

/** What `run.start` does when the thread already has a run going. */
export const WhenBusy = Schema.Literal("refuse", "queue", "steer", "interrupt")
export type WhenBusy = typeof WhenBusy.Type

export const StartRunFields = {
  threadId: ThreadId,
  provider: ProviderName,
  message: Message,
  model: Schema.optional(Schema.String),
  /** Ask for a clean context: a fresh provider thread with a full summary. */
  cleanContext: Schema.optional(Schema.Boolean),
  /** Return only once the run is terminal. */
  wait: Schema.optional(Schema.Boolean),
  /**
   * When the thread has a run going: `refuse` (the default) answers `RunAlreadyActive`;
   * `queue` answers at once with the run `queued` and starts it when the runs before it
   * have ended (queued runs survive a restart); `steer` adds the message to the running
   * turn where its provider can take it (capability `steer`), else does `ifCannotSteer`;
   * `interrupt` stops that run, waits for its end, and starts this one.
   */
  whenBusy: Schema.optional(WhenBusy),
  /** With `whenBusy: steer`: what to do when the running turn cannot take the message (default `refuse`). */
  ifCannotSteer: Schema.optional(Schema.Literal("refuse", "queue", "interrupt")),
  handoffBudgetTokens: Schema.optional(HandoffBudgetTokens),
  commandId
}
export class StartRun extends ValidatedTaggedClass<StartRun>()("StartRun", StartRunFields) {}

export const InterruptRunFields = {
  threadId: ThreadId,
  /** A queued run to take out of the queue (it ends `interrupted`); without it, the run going. */
  runId: Schema.optional(RunId),
  commandId
}
export class InterruptRun extends ValidatedTaggedClass<InterruptRun>()("InterruptRun", InterruptRunFields) {}

export const SourcePointSpec = Schema.Union(
  Schema.Literal("latest_stable"),
  Schema.Struct({ runId: RunId }),
  Schema.Struct({ checkpointId: CheckpointId })
)
export type SourcePointSpec = typeof SourcePointSpec.Type

export const ForkThreadFields = {
  sourceThreadId: ThreadId,
  sourcePoint: SourcePointSpec,
  sideChat: Schema.optional(Schema.Boolean),
  title: Schema.optional(Title),
  commandId
}
export class ForkThread extends ValidatedTaggedClass<ForkThread>()("ForkThread", ForkThreadFields) {}

export const MergeBackFields = { forkThreadId: ThreadId, commandId }
export class MergeBack extends ValidatedTaggedClass<MergeBack>()("MergeBack", MergeBackFields) {}

export const RollbackFields = {
  threadId: ThreadId,
  toRunOrdinal: Schema.Int.pipe(Schema.nonNegative()),
  restoreFiles: Schema.optional(Schema.Boolean),
  /** With `restoreFiles`: say what the rollback and the restore would do, changing nothing. */
  dryRun: Schema.optional(Schema.Boolean),
  commandId
}
export class Rollback extends ValidatedTaggedClass<Rollback>()("Rollback", RollbackFields) {}

export const SpawnSubagentFields = {
  parentThreadId: ThreadId,
  provider: ProviderName,
  prompt: Message,
  /** The child thread's title (default: the prompt's first 80 characters). */
  title: Schema.optional(Title),
  /** The model of the child's run (default: the provider instance's). */
  model: Schema.optional(Schema.String),
  commandId
}
export class SpawnSubagent extends ValidatedTaggedClass<SpawnSubagent>()("SpawnSubagent", SpawnSubagentFields) {}

export const ApprovalDecision = Schema.Literal("accept", "decline", "cancel")
export type ApprovalDecision = typeof ApprovalDecision.Type

export const RespondApprovalFields = {
  threadId: ThreadId,
  approvalId: ApprovalId,
  decision: ApprovalDecision,
  commandId
}
export class RespondApproval extends ValidatedTaggedClass<RespondApproval>()(
  "RespondApproval",
  RespondApprovalFields
) {}

export const ThreadCommand = Schema.Union(
  CreateThread,
  StartRun,
  InterruptRun,
  ForkThread,
  MergeBack,
  Rollback,
  SpawnSubagent,
  RespondApproval
)
export type ThreadCommand = typeof ThreadCommand.Type
