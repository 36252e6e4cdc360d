import { Schema } from "effect"
import { CommandId, ContextHandoffId, ProviderName, ProviderThreadId, RunId, ThreadId } from "./Ids.js"

export const RunStatus = Schema.Literal("queued", "running", "completed", "failed", "interrupted", "rolled_back")
export type RunStatus = typeof RunStatus.Type

export const terminalRunStatuses: ReadonlyArray<RunStatus> = ["completed", "failed", "interrupted", "rolled_back"]
export const isTerminalRunStatus = (status: RunStatus): boolean => terminalRunStatuses.includes(status)

/**
 * Why a run did not complete. `provider_timeout`: a provider call passed its deadline;
 * `provider_defect`: the adapter died with a defect; `runtime_error`: Skein itself
 * failed while driving the run (the message says where); `runner_lost`: in a cluster,
 * the thread moved to another process while the run was in flight (the one that held it
 * died or was cut off from the database, or let the thread go to a runner that joined).
 */
export const RunFailureReason = Schema.Literal(
  "provider_error",
  "provider_crash",
  "provider_timeout",
  "provider_defect",
  "runtime_error",
  "user_interrupt",
  "runtime_restart",
  "runner_lost",
  "shutdown",
  "unsupported_context",
  "resume_failed"
)
export type RunFailureReason = typeof RunFailureReason.Type

export const RunFailure = Schema.Struct({ reason: RunFailureReason, message: Schema.String })
export type RunFailure = typeof RunFailure.Type

/** How the run's provider learned what it missed (see ContextResolver). */
export const ContextResolutionKind = Schema.Literal("none", "native", "delta", "portable")
export type ContextResolutionKind = typeof ContextResolutionKind.Type

const TokenCount = Schema.Int.pipe(Schema.nonNegative())

/** Tokens a turn used, as the provider counted them: whole, finite, not negative. */
export const TurnUsage = Schema.Struct({
  inputTokens: TokenCount,
  outputTokens: TokenCount,
  cachedInputTokens: Schema.optional(TokenCount)
})
export type TurnUsage = typeof TurnUsage.Type

export const Run = Schema.Struct({
  id: RunId,
  threadId: ThreadId,
  ordinal: Schema.Int.pipe(Schema.positive()),
  provider: ProviderName,
  model: Schema.NullOr(Schema.String),
  /** The user's message: the run's real input. */
  message: Schema.String,
  status: RunStatus,
  providerThreadId: Schema.NullOr(ProviderThreadId),
  contextHandoffId: Schema.NullOr(ContextHandoffId),
  contextResolution: Schema.NullOr(ContextResolutionKind),
  failure: Schema.NullOr(RunFailure),
  commandId: Schema.NullOr(CommandId),
  createdAt: Schema.String,
  startedAt: Schema.NullOr(Schema.String),
  completedAt: Schema.NullOr(Schema.String),
  /** When a rollback removed it from the live history (forks made earlier still hold it). */
  rolledBackAt: Schema.optional(Schema.String),
  /** What its turn cost, as the provider counted it; absent when the provider did not say. */
  usage: Schema.optional(TurnUsage)
})
export type Run = typeof Run.Type
