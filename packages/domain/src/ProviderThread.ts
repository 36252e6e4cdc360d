import { Schema } from "effect"
import { ContextHandoffId, NativeThreadRef, NativeTurnRef, ProviderName, ProviderThreadId, ThreadId } from "./Ids.js"

/** Which runs a provider thread saw natively, and which handoffs told it about the rest. */
export const Coverage = Schema.Struct({
  nativeRunOrdinals: Schema.Array(Schema.Int),
  handoffIds: Schema.Array(ContextHandoffId)
})
export type Coverage = typeof Coverage.Type

export const NativeRefStrength = Schema.Literal("strong", "weak", "none")
export type NativeRefStrength = typeof NativeRefStrength.Type

export const ProviderThreadStatus = Schema.Literal("active", "idle", "divergent", "rolled_back", "stale", "failed")
export type ProviderThreadStatus = typeof ProviderThreadStatus.Type

/** Settings that must match for a native thread to be resumed as it is. */
export const SettingsFingerprint = Schema.Struct({
  model: Schema.NullOr(Schema.String),
  runtimeMode: Schema.String
})
export type SettingsFingerprint = typeof SettingsFingerprint.Type

/** The provider's turn handle for one app run served natively by this thread. */
export const NativeTurn = Schema.Struct({ runOrdinal: Schema.Int, turnRef: NativeTurnRef })
export type NativeTurn = typeof NativeTurn.Type

/** A provider's native conversation attached to an app thread. */
export const ProviderThread = Schema.Struct({
  id: ProviderThreadId,
  threadId: ThreadId,
  provider: ProviderName,
  driver: Schema.String,
  nativeRef: Schema.NullOr(NativeThreadRef),
  nativeRefStrength: NativeRefStrength,
  firstRunOrdinal: Schema.NullOr(Schema.Int),
  lastRunOrdinal: Schema.NullOr(Schema.Int),
  handoffIds: Schema.Array(ContextHandoffId),
  coverage: Coverage,
  nativeTurns: Schema.Array(NativeTurn),
  settings: SettingsFingerprint,
  status: ProviderThreadStatus,
  /** Why the status is what it is (e.g. the staleness reason that retired it). */
  statusReason: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type ProviderThread = typeof ProviderThread.Type

/**
 * A provider thread without its per-run lists (the native run ordinals and turn
 * handles, which grow with every run it serves): what a decision about it reads, and
 * what a thread actor keeps in memory. Its handoff lists stay (the runs they cover
 * are what coverage is judged by).
 */
const { coverage: _coverage, nativeTurns: _nativeTurns, ...headFields } = ProviderThread.fields
export const ProviderThreadHead = Schema.Struct({
  ...headFields,
  coverage: Schema.Struct({ handoffIds: Schema.Array(ContextHandoffId) })
})
export type ProviderThreadHead = typeof ProviderThreadHead.Type

/** The head of a provider thread record. */
export const providerThreadHead = (pt: ProviderThreadHead): ProviderThreadHead => {
  const { coverage, nativeTurns: _, ...rest } = pt as ProviderThread
  return { ...rest, coverage: { handoffIds: coverage.handoffIds } }
}
