import { Schema } from "effect"
import {
  CheckpointId,
  ContextHandoffId,
  ContextTransferId,
  makeId,
  NativeThreadRef,
  NativeTurnRef,
  ProviderName,
  RunId,
  ThreadId,
  TurnItemId
} from "./Ids.js"

/** The exact state being transferred. Stable points only: completed runs, ready checkpoints. */
export const ContextSourcePoint = Schema.Struct({
  threadId: ThreadId,
  runId: Schema.optional(RunId),
  runOrdinal: Schema.optional(Schema.Int),
  checkpointId: Schema.optional(CheckpointId),
  turnItemId: Schema.optional(TurnItemId),
  providerThreadRef: Schema.optional(NativeThreadRef),
  providerTurnRef: Schema.optional(NativeTurnRef)
})
export type ContextSourcePoint = typeof ContextSourcePoint.Type

export const TransferType = Schema.Literal(
  "fork",
  "provider_handoff",
  "merge_back",
  "subagent_spawn",
  "subagent_result"
)
export type TransferType = typeof TransferType.Type

export const TransferStatus = Schema.Literal(
  "pending",
  "resolved_native",
  "resolved_portable",
  "failed",
  "consumed",
  "superseded"
)
export type TransferStatus = typeof TransferStatus.Type

export const TransferResolution = Schema.Union(
  Schema.Struct({ strategy: Schema.Literal("native_fork"), providerThreadRef: NativeThreadRef }),
  Schema.Struct({ strategy: Schema.Literal("native_resume"), providerThreadRef: NativeThreadRef }),
  Schema.Struct({ strategy: Schema.Literal("portable_context"), contextHandoffId: ContextHandoffId }),
  Schema.Struct({ strategy: Schema.Literal("delta_context"), contextHandoffId: ContextHandoffId }),
  Schema.Struct({ strategy: Schema.Literal("checkpoint_context"), contextHandoffId: ContextHandoffId })
)
export type TransferResolution = typeof TransferResolution.Type

/**
 * Named staleness signals: why a provider thread was not resumed and a full summary
 * went into a fresh provider thread instead.
 */
export const StalenessReason = Schema.Literal(
  "too_many_foreign_runs",
  "too_many_chained_handoffs",
  "settings_incompatible",
  "resume_failed",
  "divergent",
  "clean_context",
  "delta_over_budget",
  "resume_unsupported"
)
export type StalenessReason = typeof StalenessReason.Type

export const CreatedBy = Schema.Literal("user", "agent", "system")

/** The durable, cheap record linking a source to a target. */
export const ContextTransfer = Schema.Struct({
  id: ContextTransferId,
  type: TransferType,
  sourceThreadId: ThreadId,
  targetThreadId: ThreadId,
  sourcePoint: ContextSourcePoint,
  basePoint: Schema.NullOr(ContextSourcePoint),
  sourceProvider: Schema.NullOr(ProviderName),
  targetProvider: Schema.NullOr(ProviderName),
  status: TransferStatus,
  resolution: Schema.NullOr(TransferResolution),
  /** Staleness reasons that shaped the resolution, recorded for audit. */
  reasons: Schema.Array(StalenessReason),
  createdBy: CreatedBy,
  createdAt: Schema.String,
  consumedAt: Schema.NullOr(Schema.String),
  consumedByRunId: Schema.NullOr(RunId)
})
export type ContextTransfer = typeof ContextTransfer.Type

/**
 * A new transfer record: a fresh id (unless given), nothing resolved or consumed yet
 * (`pending`, no resolution, no reasons) unless the caller says otherwise.
 */
export const makeContextTransfer = (
  input: Pick<
    ContextTransfer,
    "type" | "sourceThreadId" | "targetThreadId" | "sourcePoint" | "createdBy" | "createdAt"
  > &
    Partial<
      Omit<ContextTransfer, "type" | "sourceThreadId" | "targetThreadId" | "sourcePoint" | "createdBy" | "createdAt">
    >
): ContextTransfer => ({
  id: input.id ?? makeId.transfer(),
  type: input.type,
  sourceThreadId: input.sourceThreadId,
  targetThreadId: input.targetThreadId,
  sourcePoint: input.sourcePoint,
  basePoint: input.basePoint ?? null,
  sourceProvider: input.sourceProvider ?? null,
  targetProvider: input.targetProvider ?? null,
  status: input.status ?? "pending",
  resolution: input.resolution ?? null,
  reasons: input.reasons ?? [],
  createdBy: input.createdBy,
  createdAt: input.createdAt,
  consumedAt: input.consumedAt ?? null,
  consumedByRunId: input.consumedByRunId ?? null
})

/** The transfer offered again under a new id, as if never taken in (after the runs that took it were rolled back). */
export const reopenedTransfer = (transfer: ContextTransfer): ContextTransfer => ({
  ...transfer,
  id: makeId.transfer(),
  status: "pending",
  resolution: null,
  reasons: [],
  consumedAt: null,
  consumedByRunId: null
})
