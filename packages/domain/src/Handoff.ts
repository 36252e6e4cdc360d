import { Schema } from "effect"
import { ContextHandoffId, ContextTransferId, ProviderName, ProviderThreadId, RunId, ThreadId } from "./Ids.js"

export const HandoffKind = Schema.Literal("portable_context", "delta_context", "checkpoint_context")
export type HandoffKind = typeof HandoffKind.Type

export const HandoffStrategy = Schema.Literal(
  "delta_since_target_last_seen",
  "full_thread_summary",
  "checkpoint_summary",
  "manual_context",
  "fork_delta"
)
export type HandoffStrategy = typeof HandoffStrategy.Type

export const HandoffStatus = Schema.Literal("pending", "ready", "failed", "superseded")
export type HandoffStatus = typeof HandoffStatus.Type

/** Section kinds, most important first: the budget drops from the end of this list. */
export const HandoffSectionKind = Schema.Literal(
  "goals",
  "constraints",
  "open_questions",
  "known_failures",
  "plan",
  "decisions",
  "files_changed",
  "checkpoint",
  "commands",
  "subagent_results",
  "conversation"
)
export type HandoffSectionKind = typeof HandoffSectionKind.Type

export const HandoffSection = Schema.Struct({
  kind: HandoffSectionKind,
  title: Schema.String,
  lines: Schema.Array(Schema.String)
})
export type HandoffSection = typeof HandoffSection.Type

export const HandoffOmission = Schema.Struct({
  section: HandoffSectionKind,
  /** How many lines of that section were dropped. */
  lines: Schema.Int,
  reason: Schema.String
})
export type HandoffOmission = typeof HandoffOmission.Type

export const HandoffPayload = Schema.Struct({
  sections: Schema.Array(HandoffSection),
  omitted: Schema.Array(HandoffOmission)
})
export type HandoffPayload = typeof HandoffPayload.Type

export const CoveredRunOrdinals = Schema.Struct({ from: Schema.Int, to: Schema.Int })
export type CoveredRunOrdinals = typeof CoveredRunOrdinals.Type

/** The materialised, auditable context artifact. Superseded, never edited in place. */
export const ContextHandoff = Schema.Struct({
  id: ContextHandoffId,
  transferId: ContextTransferId,
  threadId: ThreadId,
  targetRunId: Schema.NullOr(RunId),
  kind: HandoffKind,
  strategy: HandoffStrategy,
  fromProviderThreadIds: Schema.Array(ProviderThreadId),
  toProviderThreadId: Schema.NullOr(ProviderThreadId),
  coveredRunOrdinals: CoveredRunOrdinals,
  payload: HandoffPayload,
  summaryText: Schema.String,
  tokenEstimate: Schema.Int,
  budgetTokens: Schema.Int,
  status: HandoffStatus,
  supersededBy: Schema.NullOr(ContextHandoffId),
  /** Who wrote the summary; null is the local deterministic summariser. */
  createdByProvider: Schema.NullOr(ProviderName),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type ContextHandoff = typeof ContextHandoff.Type

/** A handoff without its payload and text (what coverage arithmetic reads). */
const { payload: _payload, summaryText: _summaryText, ...handoffHeadFields } = ContextHandoff.fields
export const ContextHandoffHead = Schema.Struct(handoffHeadFields)
export type ContextHandoffHead = typeof ContextHandoffHead.Type

/** The head of a handoff record. */
export const handoffHead = (handoff: ContextHandoffHead): ContextHandoffHead => {
  const { payload: _, summaryText: __, ...rest } = handoff as ContextHandoff
  return rest
}

/**
 * A new handoff record: `ready` unless said otherwise, superseded by nothing, its summary
 * the local summariser's (no provider), last updated when created.
 */
export const makeContextHandoff = (
  input: Omit<ContextHandoff, "status" | "supersededBy" | "createdByProvider" | "updatedAt"> &
    Partial<Pick<ContextHandoff, "status" | "supersededBy" | "createdByProvider" | "updatedAt">>
): ContextHandoff => ({
  id: input.id,
  transferId: input.transferId,
  threadId: input.threadId,
  targetRunId: input.targetRunId,
  kind: input.kind,
  strategy: input.strategy,
  fromProviderThreadIds: input.fromProviderThreadIds,
  toProviderThreadId: input.toProviderThreadId,
  coveredRunOrdinals: input.coveredRunOrdinals,
  payload: input.payload,
  summaryText: input.summaryText,
  tokenEstimate: input.tokenEstimate,
  budgetTokens: input.budgetTokens,
  status: input.status ?? "ready",
  supersededBy: input.supersededBy ?? null,
  createdByProvider: input.createdByProvider ?? null,
  createdAt: input.createdAt,
  updatedAt: input.updatedAt ?? input.createdAt
})
