/**
 * The pure projection: folding a thread's event log into its ThreadState, and shaping a
 * ThreadState into the domain ThreadView. Events carry full entity snapshots, so every
 * event is an upsert of one entity.
 *
 * Speed over purity of form: `applyEvent` updates the state's collections in place and
 * returns the state to use next (a shallow copy when the thread record itself changes).
 * Callers must carry on with the returned value and not keep using an older reference.
 */
import type {
  AppThread,
  ContextHandoffId,
  ContextTransfer,
  ProviderThread,
  RunView,
  ThreadEvent,
  ThreadView,
  TurnItem
} from "@skein/domain"
import { withServedRun } from "../context/Coverage.js"
import { emptyThreadState, type ThreadState } from "./ThreadState.js"

/** A provider thread after it served a run (see ProviderThreadServed). */
export const servedBy = (
  pt: ProviderThread,
  served: {
    readonly runOrdinal: number
    readonly handoffId: ContextHandoffId | null
    readonly turnRef: string | null
    readonly status: ProviderThread["status"]
    readonly updatedAt: string
  }
): ProviderThread => ({
  ...withServedRun(pt, {
    ordinal: served.runOrdinal,
    handoffId: served.handoffId,
    turnRef: served.turnRef,
    at: served.updatedAt
  }),
  status: served.status
})

/**
 * Items of a run stay ordered by `seq`. A re-recorded item (same id, e.g. an approval
 * that got its answer) replaces the old one; an item never moves to another run.
 */
const upsertItem = (state: ThreadState, item: TurnItem): void => {
  let list = state.items.get(item.runId)
  if (list === undefined) {
    list = []
    state.items.set(item.runId, list)
  }
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i]!.id === item.id) {
      if (list[i]!.seq === item.seq) {
        list[i] = item
        return
      }
      list.splice(i, 1)
      break
    }
  }
  let at = list.length
  while (at > 0 && list[at - 1]!.seq > item.seq) at--
  list.splice(at, 0, item)
}

/** Folds one event into `state` (in place, see the module note) and returns the state. */
export const applyEvent = (state: ThreadState, event: ThreadEvent): ThreadState => {
  switch (event._tag) {
    case "ThreadCreated":
    case "ThreadUpdated":
      return { ...state, thread: event.thread, lastThreadSequence: state.lastThreadSequence + 1 }
    case "RunStarted":
    case "RunUpdated":
    case "RunEnded":
      state.runs[event.run.ordinal - 1] = event.run
      break
    case "TurnItemRecorded":
      upsertItem(state, event.item)
      break
    case "ProviderThreadRecorded":
      state.providerThreads.set(event.providerThread.id, event.providerThread)
      break
    case "ProviderThreadServed": {
      const pt = state.providerThreads.get(event.providerThreadId)
      if (pt !== undefined) state.providerThreads.set(pt.id, servedBy(pt, event))
      break
    }
    case "TransferRecorded":
      state.transfers.set(event.transfer.id, event.transfer)
      break
    case "HandoffRecorded":
      state.handoffs.set(event.handoff.id, event.handoff)
      break
    case "CheckpointRecorded":
      state.checkpoints.set(event.checkpoint.id, event.checkpoint)
      break
  }
  state.lastThreadSequence += 1
  return state
}

/**
 * Folds a whole log (in thread-sequence order, from the first event). Undefined when the
 * log is empty or does not begin with ThreadCreated.
 */
export const foldEvents = (events: ReadonlyArray<ThreadEvent>): ThreadState | undefined => {
  const first = events[0]
  if (first === undefined || first._tag !== "ThreadCreated") return undefined
  let state = emptyThreadState(first.thread)
  for (const event of events) state = applyEvent(state, event)
  return state
}

const byCreatedAt = (a: ContextTransfer, b: ContextTransfer) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/**
 * The domain ThreadView of a state. `extraTransfers` are transfers recorded in other
 * threads' logs in which this thread is the source (a fork's origin, a merge-back's
 * source); others are ignored. Transfers come in creation order (then by id).
 */
export const toThreadView = (
  state: ThreadState,
  extraTransfers: ReadonlyArray<ContextTransfer> = [],
  children: ReadonlyArray<AppThread> = []
): ThreadView => {
  const runs: Array<RunView> = []
  for (const run of state.runs) {
    if (run !== undefined) runs.push({ ...run, items: state.items.get(run.id) ?? [] })
  }
  const transfers = [...state.transfers.values()]
  const seen = new Set<string>(state.transfers.keys())
  for (const transfer of extraTransfers) {
    if (transfer.sourceThreadId === state.thread.id && !seen.has(transfer.id)) {
      seen.add(transfer.id)
      transfers.push(transfer)
    }
  }
  transfers.sort(byCreatedAt)
  return {
    thread: state.thread,
    runs,
    providerThreads: [...state.providerThreads.values()],
    transfers,
    handoffs: [...state.handoffs.values()],
    checkpoints: [...state.checkpoints.values()],
    children: [...children]
  }
}
