/**
 * The in-memory state of one AppThread: what folding its event log yields, and what
 * the context logic reads. Plain data with O(1) access by ordinal and by id, so that
 * decisions on a 10,000-run thread cost what the decision touches, not the history.
 */
import type {
  AppThread,
  Checkpoint,
  CheckpointId,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  ContextTransferId,
  ProviderThread,
  ProviderThreadId,
  Run,
  RunId,
  TurnItem
} from "@skein/domain"

export interface ThreadState {
  readonly thread: AppThread
  /** Runs by position: `runs[ordinal - 1]`. Ordinals are contiguous from 1. */
  readonly runs: Array<Run>
  readonly items: Map<RunId, Array<TurnItem>>
  readonly providerThreads: Map<ProviderThreadId, ProviderThread>
  /** Transfers recorded in this thread's log (it is their target). */
  readonly transfers: Map<ContextTransferId, ContextTransfer>
  readonly handoffs: Map<ContextHandoffId, ContextHandoff>
  readonly checkpoints: Map<CheckpointId, Checkpoint>
  /** The per-thread sequence of the last event folded in (0 before any). */
  lastThreadSequence: number
}

export const emptyThreadState = (thread: AppThread): ThreadState => ({
  thread,
  runs: [],
  items: new Map(),
  providerThreads: new Map(),
  transfers: new Map(),
  handoffs: new Map(),
  checkpoints: new Map(),
  lastThreadSequence: 0
})

export const runByOrdinal = (state: ThreadState, ordinal: number): Run | undefined => state.runs[ordinal - 1]

export const runById = (state: ThreadState, runId: RunId): Run | undefined => {
  for (let i = state.runs.length - 1; i >= 0; i--) {
    const run = state.runs[i]!
    if (run.id === runId) return run
  }
  return undefined
}

export const itemsOf = (state: ThreadState, runId: RunId): ReadonlyArray<TurnItem> => state.items.get(runId) ?? []

/** The run that is queued or running, if any. At most one per thread. */
export const activeRun = (state: ThreadState): Run | undefined => {
  const last = state.runs[state.runs.length - 1]
  return last && (last.status === "running" || last.status === "queued") ? last : undefined
}
