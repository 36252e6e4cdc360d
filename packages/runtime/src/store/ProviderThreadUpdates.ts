/**
 * What serving a run and receiving a handoff change in a provider thread's record: pure
 * updates that the projection folds from the log (Projection.ts) and the context
 * arithmetic reads back (context/Coverage.ts). Each returns a new record.
 */
import type { ContextHandoffId, NativeTurnRef, ProviderThread } from "@skein/domain"

/** The provider thread after it received a handoff (added once, in order). */
export const withHandoff = (providerThread: ProviderThread, handoffId: ContextHandoffId, at: string): ProviderThread =>
  providerThread.coverage.handoffIds.includes(handoffId)
    ? providerThread
    : {
        ...providerThread,
        handoffIds: [...providerThread.handoffIds, handoffId],
        coverage: { ...providerThread.coverage, handoffIds: [...providerThread.coverage.handoffIds, handoffId] },
        updatedAt: at
      }

/**
 * The provider thread after it served run `ordinal` natively: the ordinal joins its native
 * coverage, first/last run move, the turn ref (if the provider gave one) is remembered, and
 * the handoff delivered with the run (if any) joins its handoff coverage.
 */
export const withServedRun = (
  providerThread: ProviderThread,
  served: {
    readonly ordinal: number
    readonly handoffId?: ContextHandoffId | null
    readonly turnRef?: typeof NativeTurnRef.Type | null
    readonly at: string
  }
): ProviderThread => {
  const base = served.handoffId ? withHandoff(providerThread, served.handoffId, served.at) : providerThread
  const native = base.coverage.nativeRunOrdinals
  const newest = native[native.length - 1]
  const hasOrdinal = newest !== undefined && newest >= served.ordinal && native.includes(served.ordinal)
  return {
    ...base,
    firstRunOrdinal: base.firstRunOrdinal === null ? served.ordinal : Math.min(base.firstRunOrdinal, served.ordinal),
    lastRunOrdinal: base.lastRunOrdinal === null ? served.ordinal : Math.max(base.lastRunOrdinal, served.ordinal),
    coverage: {
      ...base.coverage,
      nativeRunOrdinals: hasOrdinal ? native : insertSorted(native, served.ordinal)
    },
    nativeTurns: served.turnRef
      ? [
          ...base.nativeTurns.filter((t) => t.runOrdinal !== served.ordinal),
          { runOrdinal: served.ordinal, turnRef: served.turnRef }
        ]
      : base.nativeTurns,
    updatedAt: served.at
  }
}

const insertSorted = (sorted: ReadonlyArray<number>, value: number): ReadonlyArray<number> => {
  const last = sorted[sorted.length - 1]
  if (last === undefined || last < value) return [...sorted, value]
  const out = [...sorted]
  let i = out.length
  while (i > 0 && out[i - 1]! > value) i--
  out.splice(i, 0, value)
  return out
}
