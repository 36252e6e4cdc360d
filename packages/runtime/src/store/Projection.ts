/**
 * The pure projection: folding a thread's events into its ThreadState (either form),
 * and shaping a complete ThreadState into the domain ThreadView. Events carry full
 * entity snapshots, so every event is an upsert of one entity.
 *
 * Speed over purity of form: `applyEvent` updates the state's collections in place and
 * returns the state to use next (a shallow copy when the thread record itself changes).
 * Callers must carry on with the returned value and not keep using an older reference.
 */
import type {
  AppThread,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  ProviderThread,
  ProviderThreadHead,
  Run,
  RunView,
  ThreadEvent,
  ThreadView,
  TurnItem
} from "@skein/domain"
import { handoffHead, providerThreadHead } from "@skein/domain"
import { withServedRun } from "./ProviderThreadUpdates.js"
import { runTimestamps, withActivity } from "./ThreadActivity.js"
import { emptyThreadState, markRolledBack, unmarkRolledBack, type ThreadState } from "./ThreadState.js"

export interface Served {
  readonly runOrdinal: number
  readonly handoffId: ContextHandoffId | null
  readonly turnRef: string | null
  readonly status: ProviderThread["status"]
  readonly updatedAt: string
}

/** A provider thread after it served a run (see ProviderThreadServed). */
export const servedBy = (pt: ProviderThread, served: Served): ProviderThread => ({
  ...withServedRun(pt, {
    ordinal: served.runOrdinal,
    handoffId: served.handoffId,
    turnRef: served.turnRef,
    at: served.updatedAt
  }),
  status: served.status
})

/** The same on a provider thread's head: `providerThreadHead(servedBy(pt, s))` is `headServedBy(providerThreadHead(pt), s)`. */
export const headServedBy = (pt: ProviderThreadHead, served: Served): ProviderThreadHead => {
  const handoffId = served.handoffId
  const received = handoffId !== null && !pt.coverage.handoffIds.includes(handoffId)
  return {
    ...pt,
    handoffIds: received ? [...pt.handoffIds, handoffId] : pt.handoffIds,
    coverage: received ? { handoffIds: [...pt.coverage.handoffIds, handoffId] } : pt.coverage,
    firstRunOrdinal: pt.firstRunOrdinal === null ? served.runOrdinal : Math.min(pt.firstRunOrdinal, served.runOrdinal),
    lastRunOrdinal: pt.lastRunOrdinal === null ? served.runOrdinal : Math.max(pt.lastRunOrdinal, served.runOrdinal),
    status: served.status,
    updatedAt: served.updatedAt
  }
}

/**
 * Items of a run stay ordered by `seq`. A re-recorded item (same id, e.g. an approval
 * that got its answer) replaces the old one; an item never moves to another run.
 */
export const upsertItem = (list: Array<TurnItem>, item: TurnItem): void => {
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

/** Upserts a run (what RunStarted, RunUpdated and RunEnded fold into). */
export const putRun = (state: ThreadState, run: Run): void => {
  if (run.ordinal > state.runCount) {
    state.runCount = run.ordinal
    // A new run: its items so far are none (a compact state keeps the active run's).
    if (!state.items.has(run.id)) state.items.set(run.id, [])
    // Its id, looked for before it started (a start that chose it), is found now.
    state.absent.delete(run.id)
  }
  state.runs.set(run.ordinal, run)
  if (run.status === "rolled_back") markRolledBack(state.rolledBack, run.ordinal)
  else if (state.rolledBack.length > 0) unmarkRolledBack(state.rolledBack, run.ordinal)
  // Liveness may have changed: answers read for a compact state may not hold.
  if (!state.complete) state.latestCheckpoints.clear()
}

/** Upserts a provider thread's whole record (what ProviderThreadRecorded folds into). */
export const putProviderThread = (state: ThreadState, pt: ProviderThread): void => {
  const entry = state.providerThreads.get(pt.id)
  if (entry === undefined) state.providerThreads.set(pt.id, { head: providerThreadHead(pt), full: pt })
  else {
    entry.head = providerThreadHead(pt)
    entry.full = pt
  }
}

/** Upserts a handoff (what HandoffRecorded folds into). */
export const putHandoff = (state: ThreadState, handoff: ContextHandoff): void => {
  const entry = state.handoffs.get(handoff.id)
  if (entry === undefined) state.handoffs.set(handoff.id, { head: handoffHead(handoff), full: handoff })
  else {
    entry.head = handoffHead(handoff)
    entry.full = handoff
  }
  state.absent.delete(handoff.id)
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
      putRun(state, event.run)
      break
    case "TurnItemRecorded": {
      const list = state.items.get(event.item.runId)
      // A compact state keeps no partial list: only runs whose items it holds change.
      if (list !== undefined) upsertItem(list, event.item)
      else if (state.complete) state.items.set(event.item.runId, [event.item])
      break
    }
    case "ProviderThreadRecorded":
      putProviderThread(state, event.providerThread)
      break
    case "ProviderThreadServed": {
      const entry = state.providerThreads.get(event.providerThreadId)
      if (entry !== undefined) {
        entry.head = headServedBy(entry.head, event)
        entry.full = entry.full === undefined ? undefined : servedBy(entry.full, event)
      }
      break
    }
    case "TransferRecorded":
      state.transfers.set(event.transfer.id, event.transfer)
      break
    case "HandoffRecorded":
      putHandoff(state, event.handoff)
      break
    case "CheckpointRecorded":
      if (state.complete) state.checkpoints.set(event.checkpoint.id, event.checkpoint)
      else state.latestCheckpoints.clear()
      break
  }
  state.lastThreadSequence += 1
  return state
}

/**
 * Folds a whole log (in thread-sequence order, from the first event) into a complete
 * state. Undefined when the log is empty or does not begin with ThreadCreated.
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
 * A run as views show it: its items, each message once. The user's message is the
 * run's `message`; the `user_message` item that repeats it in the log is left out.
 */
export const toRunView = (run: Run, items: ReadonlyArray<TurnItem>): RunView => ({
  ...run,
  items: items.filter((item) => !(item.type === "user_message" && item.seq === 0 && item.text === run.message))
})

/**
 * The domain ThreadView of a complete state. `extraTransfers` are transfers recorded
 * in other threads' logs in which this thread is the source (a fork's origin, a
 * merge-back's source); others are ignored. Transfers come in creation order (then by
 * id).
 */
export const toThreadView = (
  state: ThreadState,
  extraTransfers: ReadonlyArray<ContextTransfer> = [],
  children: ReadonlyArray<AppThread> = []
): ThreadView => {
  const runs: Array<RunView> = []
  for (let o = 1; o <= state.runCount; o++) {
    const run = state.runs.get(o)
    if (run !== undefined) runs.push(toRunView(run, state.items.get(run.id) ?? []))
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
  const last = state.runs.get(state.runCount)
  return {
    thread: withActivity(state.thread, last === undefined ? [] : runTimestamps(last)),
    runs,
    providerThreads: [...state.providerThreads.values()].map((entry) => entry.full!),
    transfers,
    handoffs: [...state.handoffs.values()].map((entry) => entry.full!),
    checkpoints: [...state.checkpoints.values()],
    children: [...children]
  }
}
