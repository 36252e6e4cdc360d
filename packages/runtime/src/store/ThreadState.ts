/**
 * The in-memory state of one AppThread, as the context logic reads it, in one of two
 * forms:
 *
 * - **complete** (`complete: true`): everything its log holds (a fold of the whole
 *   log, or `EventStore.loadCompleteThread`). Tests, rollbacks and audits use it.
 * - **compact**: what a thread actor keeps. It is read at activation by a few indexed
 *   queries whose cost does not grow with the thread's history: the thread, its run
 *   count and newest run, which runs were rolled back (as ranges), its usable provider
 *   threads without their per-run lists, the handoffs their coverage names (without
 *   their texts), the transfers not settled yet and the thread's inheritance, the
 *   newest run's items (what a caller that waited for its end asks for next) and the
 *   active run's handoffs. Everything else (older runs and their items, whole
 *   provider thread records, handoff texts, checkpoints) stays in storage until a
 *   decision touches it.
 *
 * The pure core reads a state only through the accessors below. In a compact state an
 * accessor that needs what is not in memory throws `NotLoaded`, naming what it needs;
 * the shell (`EventStore.demand`) reads that, adds it to the state, and runs the pure
 * function again. A decision on a compact state is therefore the decision on the
 * complete one, and costs what it touches. `trimThread` drops what was read for one
 * decision, so an idle actor holds little.
 */
import type {
  AppThread,
  Checkpoint,
  CheckpointId,
  ContextHandoff,
  ContextHandoffHead,
  ContextHandoffId,
  ContextTransfer,
  ContextTransferId,
  CoveredRunOrdinals,
  ProviderThread,
  ProviderThreadHead,
  ProviderThreadId,
  Run,
  RunId,
  TurnItem
} from "@skein/domain"

/** What a compact state lacks for a question, for the shell to read. */
export type Need =
  /** Runs by ordinal (and their items). */
  | { readonly _tag: "Runs"; readonly from: number; readonly to: number; readonly items: boolean }
  /** One run by id (and its items). */
  | { readonly _tag: "Run"; readonly runId: RunId; readonly items: boolean }
  /** A provider thread's whole record, its per-run lists included. */
  | { readonly _tag: "ProviderThread"; readonly id: ProviderThreadId }
  /** Handoffs by id: their heads, or their whole records. */
  | { readonly _tag: "Handoffs"; readonly ids: ReadonlyArray<ContextHandoffId>; readonly full: boolean }
  | { readonly _tag: "Transfer"; readonly id: ContextTransferId }
  /** The newest ready checkpoint of a live run with from ≤ ordinal ≤ to. */
  | { readonly _tag: "LatestCheckpoint"; readonly from: number; readonly to: number }
  /** The complete state (whole-thread questions: a rollback). */
  | { readonly _tag: "Everything" }

/** Thrown by an accessor of a compact state: the state lacks `need`. */
export class NotLoaded extends Error {
  constructor(readonly need: Need) {
    super(`not in memory: ${need._tag}`)
    this.name = "NotLoaded"
  }
}

export interface ProviderThreadEntry {
  head: ProviderThreadHead
  /** The whole record, when in memory (always in a complete state). */
  full: ProviderThread | undefined
}

export interface HandoffEntry {
  head: ContextHandoffHead
  /** The whole record, when in memory (always in a complete state). */
  full: ContextHandoff | undefined
}

export interface ThreadState {
  readonly thread: AppThread
  /** The per-thread sequence of the last event folded in (0 before any). */
  lastThreadSequence: number
  /** Everything is in memory: nothing is read on demand (and absent means absent). */
  complete: boolean
  /** Runs are ordinals 1..runCount, contiguous. */
  runCount: number
  /** Ordinals of rolled-back runs, as ascending, disjoint, non-adjacent ranges. */
  readonly rolledBack: Array<CoveredRunOrdinals>
  /** Runs in memory by ordinal: all of them, or (compact) the newest and what was read. */
  readonly runs: Map<number, Run>
  /** Items of the runs whose items are in memory (each list ordered by seq). */
  readonly items: Map<RunId, Array<TurnItem>>
  /** In creation order. Compact: the ones not retired, and what was read. */
  readonly providerThreads: Map<ProviderThreadId, ProviderThreadEntry>
  /**
   * Transfers recorded in this thread's log (it is their target). Compact: every one
   * not settled yet (pending or resolved, not consumed), the thread's inheritance
   * (fork, subagent_spawn) and what was read.
   */
  readonly transfers: Map<ContextTransferId, ContextTransfer>
  /** Compact: the handoffs the usable provider threads' coverage names, the active run's, and what was read. */
  readonly handoffs: Map<ContextHandoffId, HandoffEntry>
  /** Complete only: every checkpoint. */
  readonly checkpoints: Map<CheckpointId, Checkpoint>
  /** Compact only: answers read for `latestReadyCheckpoint`, by `from:to`. */
  readonly latestCheckpoints: Map<string, Checkpoint | null>
  /** Compact only: ids read and found absent (so that asking again does not read again). */
  readonly absent: Set<string>
}

export const emptyThreadState = (thread: AppThread, complete = true): ThreadState => ({
  thread,
  lastThreadSequence: 0,
  complete,
  runCount: 0,
  rolledBack: [],
  runs: new Map(),
  items: new Map(),
  providerThreads: new Map(),
  transfers: new Map(),
  handoffs: new Map(),
  checkpoints: new Map(),
  latestCheckpoints: new Map(),
  absent: new Set()
})

const missing = (need: Need): never => {
  throw new NotLoaded(need)
}

// --- runs ------------------------------------------------------------------------------

/** The run with this ordinal; undefined only when there is none. */
export const runAt = (state: ThreadState, ordinal: number): Run | undefined => {
  if (ordinal < 1 || ordinal > state.runCount) return undefined
  const run = state.runs.get(ordinal)
  if (run !== undefined || state.complete) return run
  return missing({ _tag: "Runs", from: ordinal, to: ordinal, items: false })
}

/** The newest run (always in memory). */
export const lastRun = (state: ThreadState): Run | undefined => state.runs.get(state.runCount)

/**
 * Asks, at once, for runs `from`..`to` (clamped to the thread's) and, with `items`,
 * their items: a function about to read a range calls it first, so that the shell
 * reads the range in one go rather than run by run.
 */
export const needRuns = (state: ThreadState, from: number, to: number, items: boolean): void => {
  if (state.complete) return
  const first = Math.max(1, from)
  const last = Math.min(state.runCount, to)
  for (let o = first; o <= last; o++) {
    const run = state.runs.get(o)
    if (run === undefined || (items && !state.items.has(run.id))) {
      missing({ _tag: "Runs", from: o, to: last, items })
    }
  }
}

export const runById = (state: ThreadState, runId: RunId): Run | undefined => {
  const last = lastRun(state)
  if (last?.id === runId) return last
  if (state.complete) {
    for (let o = state.runCount - 1; o >= 1; o--) {
      const run = state.runs.get(o)
      if (run?.id === runId) return run
    }
    return undefined
  }
  for (const run of state.runs.values()) if (run.id === runId) return run
  if (state.absent.has(runId)) return undefined
  return missing({ _tag: "Run", runId, items: false })
}

/** A run's items, ordered by seq. */
export const itemsOf = (state: ThreadState, runId: RunId): ReadonlyArray<TurnItem> => {
  const items = state.items.get(runId)
  if (items !== undefined) return items
  if (state.complete || state.absent.has(runId)) return []
  return missing({ _tag: "Run", runId, items: true })
}

/** The run that is queued or running, if any: at most one per thread, always the newest. */
export const activeRun = (state: ThreadState): Run | undefined => {
  const last = lastRun(state)
  return last && (last.status === "running" || last.status === "queued") ? last : undefined
}

/** Whether run `ordinal` was rolled back (from the ranges: no run record needed). */
export const isRolledBackOrdinal = (state: ThreadState, ordinal: number): boolean => {
  const ranges = state.rolledBack
  let lo = 0
  let hi = ranges.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    const range = ranges[mid]!
    if (range.to < ordinal) lo = mid + 1
    else if (range.from > ordinal) hi = mid
    else return true
  }
  return false
}

/**
 * A live run is terminal and not rolled back: part of the history a provider must know.
 * Known without reading the run: only the newest run can be queued or running.
 */
export const isLiveOrdinal = (state: ThreadState, ordinal: number): boolean => {
  if (ordinal < 1 || ordinal > state.runCount) return false
  if (ordinal === state.runCount && activeRun(state) !== undefined) return false
  return !isRolledBackOrdinal(state, ordinal)
}

/** Adds a rolled-back ordinal to the ranges, merging neighbours. */
export const markRolledBack = (ranges: Array<CoveredRunOrdinals>, ordinal: number): void => {
  let i = 0
  while (i < ranges.length && ranges[i]!.to < ordinal - 1) i++
  const at = ranges[i]
  if (at === undefined || at.from > ordinal + 1) {
    ranges.splice(i, 0, { from: ordinal, to: ordinal })
    return
  }
  if (ordinal >= at.from && ordinal <= at.to) return
  const merged = { from: Math.min(at.from, ordinal), to: Math.max(at.to, ordinal) }
  const next = ranges[i + 1]
  if (next !== undefined && next.from <= merged.to + 1) {
    ranges.splice(i, 2, { from: merged.from, to: next.to })
  } else {
    ranges[i] = merged
  }
}

/** Removes an ordinal from the ranges (a log may record a rolled-back run again with another status). */
export const unmarkRolledBack = (ranges: Array<CoveredRunOrdinals>, ordinal: number): void => {
  const i = ranges.findIndex((r) => r.from <= ordinal && ordinal <= r.to)
  if (i < 0) return
  const { from, to } = ranges[i]!
  const parts: Array<CoveredRunOrdinals> = []
  if (from < ordinal) parts.push({ from, to: ordinal - 1 })
  if (ordinal < to) parts.push({ from: ordinal + 1, to })
  ranges.splice(i, 1, ...parts)
}

// --- provider threads --------------------------------------------------------------------

/** The provider threads whose heads are in memory (compact: at least every one not retired), in creation order. */
export const providerThreadHeads = function* (state: ThreadState): Iterable<ProviderThreadHead> {
  for (const entry of state.providerThreads.values()) yield entry.head
}

export const providerThreadHead = (state: ThreadState, id: ProviderThreadId): ProviderThreadHead | undefined => {
  const entry = state.providerThreads.get(id)
  if (entry !== undefined) return entry.head
  if (state.complete || state.absent.has(id)) return undefined
  return missing({ _tag: "ProviderThread", id })
}

/** A provider thread's whole record (its per-run lists too). */
export const fullProviderThread = (state: ThreadState, id: ProviderThreadId): ProviderThread | undefined => {
  const entry = state.providerThreads.get(id)
  if (entry?.full !== undefined) return entry.full
  if (state.complete || state.absent.has(id)) return undefined
  return missing({ _tag: "ProviderThread", id })
}

/** Every provider thread, whole (a complete state's question). */
export const allProviderThreads = (state: ThreadState): Array<ProviderThread> => {
  if (!state.complete) missing({ _tag: "Everything" })
  return [...state.providerThreads.values()].map((entry) => entry.full!)
}

// --- handoffs ------------------------------------------------------------------------------

export const handoffHeadById = (state: ThreadState, id: ContextHandoffId): ContextHandoffHead | undefined => {
  const entry = state.handoffs.get(id)
  if (entry !== undefined) return entry.head
  if (state.complete || state.absent.has(id)) return undefined
  return missing({ _tag: "Handoffs", ids: [id], full: false })
}

export const fullHandoff = (state: ThreadState, id: ContextHandoffId): ContextHandoff | undefined => {
  const entry = state.handoffs.get(id)
  if (entry?.full !== undefined) return entry.full
  if (state.complete || state.absent.has(id)) return undefined
  return missing({ _tag: "Handoffs", ids: [id], full: true })
}

/** Asks, at once, for the handoffs with these ids (whole, with `full`). */
export const needHandoffs = (state: ThreadState, ids: Iterable<ContextHandoffId>, full: boolean): void => {
  if (state.complete) return
  const lacking: Array<ContextHandoffId> = []
  for (const id of ids) {
    const entry = state.handoffs.get(id)
    if (state.absent.has(id)) continue
    if (entry === undefined || (full && entry.full === undefined)) lacking.push(id)
  }
  if (lacking.length > 0) missing({ _tag: "Handoffs", ids: lacking, full })
}

/**
 * The handoffs delivered with a run, in creation order. Compact: only for the active
 * run (whose handoffs stay in memory while it runs).
 */
export const handoffsOfRun = (state: ThreadState, runId: RunId): Array<ContextHandoffHead> => {
  if (!state.complete && activeRun(state)?.id !== runId) missing({ _tag: "Everything" })
  const out: Array<ContextHandoffHead> = []
  for (const entry of state.handoffs.values()) if (entry.head.targetRunId === runId) out.push(entry.head)
  return out
}

/** Every handoff of the log, whole (a complete state's question). */
export const allHandoffs = (state: ThreadState): Array<ContextHandoff> => {
  if (!state.complete) missing({ _tag: "Everything" })
  return [...state.handoffs.values()].map((entry) => entry.full!)
}

// --- transfers -----------------------------------------------------------------------------

/**
 * Transfers in memory, in first-recorded order: in a compact state, at least every one
 * not settled (pending or resolved but not consumed) and the thread's inheritance
 * (fork, subagent_spawn). A caller filters to those.
 */
export const openTransfers = (state: ThreadState): Iterable<ContextTransfer> => state.transfers.values()

export const transferById = (state: ThreadState, id: ContextTransferId): ContextTransfer | undefined => {
  const found = state.transfers.get(id)
  if (found !== undefined || state.complete || state.absent.has(id)) return found
  return missing({ _tag: "Transfer", id })
}

/** Every transfer of the log (a complete state's question). */
export const allTransfers = (state: ThreadState): Array<ContextTransfer> => {
  if (!state.complete) missing({ _tag: "Everything" })
  return [...state.transfers.values()]
}

/** A transfer still to be settled: what a compact state always holds. */
export const isOpenTransfer = (transfer: ContextTransfer, threadId: string): boolean =>
  transfer.status === "pending" ||
  transfer.status === "resolved_native" ||
  transfer.status === "resolved_portable" ||
  ((transfer.type === "fork" || transfer.type === "subagent_spawn") &&
    transfer.targetThreadId === threadId &&
    transfer.status !== "superseded")

// --- checkpoints ---------------------------------------------------------------------------

/** Every checkpoint (a complete state's question). */
export const allCheckpoints = (state: ThreadState): Array<Checkpoint> => {
  if (!state.complete) missing({ _tag: "Everything" })
  return [...state.checkpoints.values()]
}

export const checkpointAnswerKey = (from: number, to: number): string => `${from}:${to}`

// --- keeping a compact state small --------------------------------------------------------

/**
 * Drops from a compact state what was read for one decision, keeping what the
 * compact form always holds (see the module note). A complete state is made compact.
 */
export const trimThread = (state: ThreadState): void => {
  state.complete = false
  const last = lastRun(state)
  const active = activeRun(state)
  if (state.runs.size > 1) {
    state.runs.clear()
    if (last !== undefined) state.runs.set(last.ordinal, last)
  }
  if (state.items.size > (last === undefined ? 0 : 1)) {
    const kept = last === undefined ? undefined : state.items.get(last.id)
    state.items.clear()
    if (last !== undefined && kept !== undefined) state.items.set(last.id, kept)
  }
  const coverage = new Set<string>()
  for (const [id, entry] of state.providerThreads) {
    if (entry.head.status === "stale") state.providerThreads.delete(id)
    else {
      entry.full = undefined
      for (const h of entry.head.coverage.handoffIds) coverage.add(h)
    }
  }
  for (const [id, entry] of state.handoffs) {
    if (!coverage.has(id) && (active === undefined || entry.head.targetRunId !== active.id)) state.handoffs.delete(id)
    else entry.full = undefined
  }
  for (const [id, transfer] of state.transfers) {
    if (!isOpenTransfer(transfer, state.thread.id)) state.transfers.delete(id)
  }
  state.checkpoints.clear()
  state.latestCheckpoints.clear()
  state.absent.clear()
}
