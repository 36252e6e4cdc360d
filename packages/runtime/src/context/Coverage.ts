/**
 * Coverage arithmetic: which runs of the app thread a provider thread knows about,
 * natively or through handoffs, and which it missed.
 *
 * Invariant kept by the actor: when a provider thread serves run N it has been told
 * about every live run before N (natively or by the handoff delivered with N). So a
 * provider thread whose last run is L covers every live run ≤ L, and what it missed
 * before run N is the live runs in (L, N). Everything here leans on that to cost
 * O(gap) instead of O(thread), and falls back to exact set arithmetic only when a
 * handoff it relied on was superseded (or it never ran).
 */
import type {
  ContextHandoffId,
  CoveredRunOrdinals,
  ProviderName,
  ProviderThread,
  ProviderThreadHead,
  ProviderThreadId,
  Run,
  SettingsFingerprint,
  ThreadId
} from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import {
  fullProviderThread,
  handoffHeadById,
  isLiveOrdinal,
  lastRun,
  needHandoffs,
  providerThreadHeads
} from "../store/ThreadState.js"

/** A live run is terminal and not rolled back: it is part of the history a provider must know. */
export const isLiveRun = (run: Run): boolean =>
  run.status === "completed" || run.status === "failed" || run.status === "interrupted"

/** Ordinals of the live runs below `beforeOrdinal`, ascending. O(beforeOrdinal). */
export const liveHistory = (state: ThreadState, beforeOrdinal: number): ReadonlyArray<number> => {
  const out: Array<number> = []
  const end = Math.min(beforeOrdinal - 1, state.runCount)
  for (let o = 1; o <= end; o++) if (isLiveOrdinal(state, o)) out.push(o)
  return out
}

/** The first and last live run below `beforeOrdinal`, or null when there is none. O(1) in the usual case. */
export const liveSpan = (state: ThreadState, beforeOrdinal: number): CoveredRunOrdinals | null => {
  const end = Math.min(beforeOrdinal - 1, state.runCount)
  let to = end
  while (to >= 1 && !isLiveOrdinal(state, to)) to--
  if (to < 1) return null
  let from = 1
  while (from < to && !isLiveOrdinal(state, from)) from++
  return { from, to }
}

/** The ordinal the next run gets: the active run's, or one past the last. */
export const nextRunOrdinal = (state: ThreadState): number => {
  const last = lastRun(state)
  if (last === undefined) return 1
  return last.status === "queued" || last.status === "running" ? last.ordinal : last.ordinal + 1
}

const liveHandoffRange = (state: ThreadState, handoffId: ContextHandoffId): CoveredRunOrdinals | null => {
  const handoff = handoffHeadById(state, handoffId)
  return handoff === undefined || handoff.status === "superseded" || handoff.status === "failed"
    ? null
    : handoff.coveredRunOrdinals
}

/**
 * The runs a provider thread served natively. A head leaves them out: a provider
 * thread that never served a run has none; otherwise they come from its whole record.
 */
const nativeOrdinals = (state: ThreadState, providerThread: ProviderThreadHead): ReadonlyArray<number> => {
  const coverage = providerThread.coverage as Partial<ProviderThread["coverage"]>
  if (coverage.nativeRunOrdinals !== undefined) return coverage.nativeRunOrdinals
  if (providerThread.lastRunOrdinal === null) return []
  return fullProviderThread(state, providerThread.id)?.coverage.nativeRunOrdinals ?? []
}

/**
 * Every ordinal a provider thread covers: its native runs ∪ the ranges of its handoffs
 * that are not superseded. Exact, O(native + handoff ranges); use for audits and tests.
 */
export const coveredOrdinals = (state: ThreadState, providerThread: ProviderThreadHead): ReadonlySet<number> => {
  needHandoffs(state, providerThread.coverage.handoffIds, false)
  const covered = new Set<number>(nativeOrdinals(state, providerThread))
  for (const id of providerThread.coverage.handoffIds) {
    const range = liveHandoffRange(state, id)
    if (range !== null) for (let o = range.from; o <= range.to; o++) covered.add(o)
  }
  return covered
}

/**
 * The live runs below `beforeOrdinal` that the provider thread has not seen, ascending.
 * O(gap + its handoffs) unless one of its handoffs was superseded or it never ran.
 */
export const missingFor = (
  state: ThreadState,
  providerThread: ProviderThreadHead,
  beforeOrdinal: number
): ReadonlyArray<number> => {
  const end = Math.min(beforeOrdinal - 1, state.runCount)
  const last = providerThread.lastRunOrdinal ?? 0
  let exact = last === 0
  const above: Array<CoveredRunOrdinals> = []
  needHandoffs(state, providerThread.coverage.handoffIds, false)
  for (const id of providerThread.coverage.handoffIds) {
    const range = liveHandoffRange(state, id)
    if (range === null) exact = true
    else if (range.to > last) above.push(range)
  }
  if (exact) {
    const covered = coveredOrdinals(state, providerThread)
    const out: Array<number> = []
    for (let o = 1; o <= end; o++) if (!covered.has(o) && isLiveOrdinal(state, o)) out.push(o)
    return out
  }
  const out: Array<number> = []
  for (let o = last + 1; o <= end; o++) {
    if (!isLiveOrdinal(state, o)) continue
    if (above.some((r) => r.from <= o && o <= r.to)) continue
    out.push(o)
  }
  return out
}

/**
 * The single range `{from, to}` that holds exactly the given live runs (no live run inside
 * it left out), or null when they are not one contiguous stretch of the live history.
 */
export const contiguousRange = (state: ThreadState, ordinals: ReadonlyArray<number>): CoveredRunOrdinals | null => {
  const from = ordinals[0]
  const to = ordinals[ordinals.length - 1]
  if (from === undefined || to === undefined) return null
  let live = 0
  for (let o = from; o <= to; o++) if (isLiveOrdinal(state, o)) live++
  return live === ordinals.length ? { from, to } : null
}

/** Delta handoffs a provider thread received since its last full summary (or since it started). */
export const chainedHandoffCount = (state: ThreadState, providerThread: ProviderThreadHead): number => {
  const ids = providerThread.coverage.handoffIds
  needHandoffs(state, ids, false)
  let count = 0
  for (let i = ids.length - 1; i >= 0; i--) {
    const handoff = handoffHeadById(state, ids[i]!)
    if (handoff !== undefined && handoff.strategy === "full_thread_summary") break
    count++
  }
  return count
}

/** Statuses that mean a provider thread was replaced and is never a target again. */
export const isRetiredProviderThread = (providerThread: ProviderThreadHead): boolean =>
  providerThread.status === "stale"

/**
 * The provider thread a run on `provider` continues: the most recent (highest last run,
 * then latest recorded) non-retired provider thread of that provider on this thread.
 */
export const targetProviderThread = (state: ThreadState, provider: ProviderName): ProviderThreadHead | null => {
  let best: ProviderThreadHead | null = null
  for (const pt of providerThreadHeads(state)) {
    if (pt.provider !== provider || isRetiredProviderThread(pt)) continue
    if (best === null || (pt.lastRunOrdinal ?? 0) >= (best.lastRunOrdinal ?? 0)) best = pt
  }
  return best
}

/** A new provider thread record, before its first run. */
export const newProviderThread = (input: {
  readonly id: ProviderThreadId
  readonly threadId: ThreadId
  readonly provider: ProviderName
  readonly driver: string
  readonly settings: SettingsFingerprint
  readonly nativeRef?: string | null
  readonly at: string
}): ProviderThread => ({
  id: input.id,
  threadId: input.threadId,
  provider: input.provider,
  driver: input.driver,
  nativeRef: input.nativeRef ?? null,
  nativeRefStrength: input.nativeRef ? "strong" : "none",
  firstRunOrdinal: null,
  lastRunOrdinal: null,
  handoffIds: [],
  coverage: { nativeRunOrdinals: [], handoffIds: [] },
  nativeTurns: [],
  settings: input.settings,
  status: "idle",
  statusReason: null,
  createdAt: input.at,
  updatedAt: input.at
})

export { withHandoff, withServedRun } from "../store/ProviderThreadUpdates.js"
