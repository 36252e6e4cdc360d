/**
 * Rolling a thread back to run N, as pure planning in two steps.
 *
 * `planRollback` is the commit point, recorded before any provider is touched: runs
 * after N become `rolled_back`; handoffs that told about them or were delivered with
 * them are superseded; transfers those runs consumed are superseded (a fork's or a
 * child's inheritance is re-opened, so the thread's next run takes it in again);
 * every provider thread that saw a rolled-back run is marked `divergent`. It also
 * says which provider threads the provider can roll back natively (to the turn of
 * the first rolled-back run it served).
 *
 * `planRollbackSettled` records what the native rollbacks did: a provider thread
 * rolled back natively is usable again with its coverage trimmed to runs ≤ N; one
 * that could not be stays divergent, so its next use starts a fresh provider thread
 * from a full summary. A crash between the two steps leaves them divergent: safe.
 */
import type {
  ContextHandoff,
  ProviderCapabilities,
  ProviderName,
  ProviderThread,
  ProviderThreadId,
  Run,
  ThreadEvent
} from "@skein/domain"
import { HandoffRecorded, ProviderThreadRecorded, reopenedTransfer, RunUpdated, TransferRecorded } from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import { allHandoffs, allProviderThreads, allTransfers, handoffHeadById, runAt } from "../store/ThreadState.js"

export interface NativeRollback {
  readonly providerThreadId: ProviderThreadId
  readonly provider: ProviderName
  readonly nativeRef: string
  /** The provider's turn of the first rolled-back run it served: it and every later turn go. */
  readonly beforeTurnRef: string
}

export interface RollbackPlan {
  readonly events: ReadonlyArray<ThreadEvent>
  readonly native: ReadonlyArray<NativeRollback>
}

const rolledBackHandoff = (handoff: ContextHandoff, state: ThreadState, to: number, gone: Set<string>): boolean => {
  if (handoff.status === "superseded" || handoff.status === "failed") return false
  if (handoff.targetRunId !== null && gone.has(handoff.targetRunId)) return true
  return handoff.threadId === state.thread.id && handoff.coveredRunOrdinals.to > to
}

/** The rollback's commit: what changes at once, and which provider threads to roll back natively. */
export const planRollback = (
  state: ThreadState,
  input: {
    readonly toRunOrdinal: number
    readonly capabilitiesOf: (provider: ProviderName) => ProviderCapabilities | undefined
    readonly now: string
  }
): RollbackPlan => {
  const { now, toRunOrdinal: to } = input
  const events: Array<ThreadEvent> = []
  const gone = new Set<string>()
  // Whole-thread questions: a compact state is read completely first.
  const handoffs = allHandoffs(state)
  const transfers = allTransfers(state)
  const providerThreads = allProviderThreads(state)
  for (let o = to + 1; o <= state.runCount; o++) {
    const run = runAt(state, o)!
    gone.add(run.id)
    if (run.status !== "rolled_back") {
      const rolled: Run = { ...run, status: "rolled_back", rolledBackAt: now }
      events.push(new RunUpdated({ run: rolled }))
    }
  }
  for (const handoff of handoffs) {
    if (rolledBackHandoff(handoff, state, to, gone)) {
      events.push(new HandoffRecorded({ handoff: { ...handoff, status: "superseded", updatedAt: now } }))
    }
  }
  for (const transfer of transfers) {
    if (transfer.consumedByRunId === null || !gone.has(transfer.consumedByRunId)) continue
    if (transfer.status === "superseded") continue
    events.push(new TransferRecorded({ transfer: { ...transfer, status: "superseded" } }))
    if (transfer.type === "fork" || transfer.type === "subagent_spawn") {
      // What the thread inherited went with the runs that took it in: offer it again.
      events.push(new TransferRecorded({ transfer: reopenedTransfer(transfer) }))
    }
  }
  const native: Array<NativeRollback> = []
  for (const pt of providerThreads) {
    const sawRolledBack =
      (pt.lastRunOrdinal ?? 0) > to ||
      pt.coverage.nativeRunOrdinals.some((o) => o > to) ||
      pt.coverage.handoffIds.some((id) => {
        const h = handoffHeadById(state, id)
        return h !== undefined && h.targetRunId !== null && gone.has(h.targetRunId)
      })
    if (!sawRolledBack || pt.status === "stale" || pt.status === "rolled_back") continue
    const firstGone = pt.coverage.nativeRunOrdinals.find((o) => o > to)
    const turn = firstGone === undefined ? undefined : pt.nativeTurns.find((t) => t.runOrdinal === firstGone)
    const keepsSomething = pt.coverage.nativeRunOrdinals.some((o) => o <= to)
    const canRollBack =
      pt.nativeRef !== null &&
      turn !== undefined &&
      keepsSomething &&
      input.capabilitiesOf(pt.provider)?.rollback === "native"
    const marked: ProviderThread = keepsSomething
      ? {
          ...pt,
          status: "divergent",
          statusReason: canRollBack
            ? `rolled back to run ${to}: being rolled back natively`
            : `rolled back to run ${to}: it saw later runs and cannot drop them natively`,
          updatedAt: now
        }
      : {
          ...pt,
          status: "rolled_back",
          statusReason: `rolled back to run ${to}: it served no earlier run`,
          updatedAt: now
        }
    events.push(new ProviderThreadRecorded({ providerThread: marked }))
    if (canRollBack) {
      native.push({
        providerThreadId: pt.id,
        provider: pt.provider,
        nativeRef: pt.nativeRef!,
        beforeTurnRef: turn.turnRef
      })
    }
  }
  return { events, native }
}

/**
 * What the native rollbacks did: `detail` null is success. A provider thread rolled
 * back natively keeps only runs ≤ N in its coverage and is usable again, unless a
 * newer provider thread of its provider took its place meanwhile.
 */
export const planRollbackSettled = (
  state: ThreadState,
  input: {
    readonly toRunOrdinal: number
    readonly results: ReadonlyArray<{ readonly providerThreadId: ProviderThreadId; readonly detail: string | null }>
    readonly now: string
  }
): ReadonlyArray<ThreadEvent> => {
  const { now, toRunOrdinal: to } = input
  const events: Array<ThreadEvent> = []
  const providerThreads = allProviderThreads(state)
  for (const result of input.results) {
    const pt = providerThreads.find((candidate) => candidate.id === result.providerThreadId)
    if (pt === undefined || pt.status !== "divergent") continue
    if (result.detail !== null) {
      events.push(
        new ProviderThreadRecorded({
          providerThread: {
            ...pt,
            statusReason: `rolled back to run ${to}: the native rollback failed (${result.detail})`,
            updatedAt: now
          }
        })
      )
      continue
    }
    const newer = providerThreads.some(
      (other) => other.id !== pt.id && other.provider === pt.provider && other.createdAt > pt.createdAt
    )
    if (newer) continue
    const native = pt.coverage.nativeRunOrdinals.filter((o) => o <= to)
    const handoffIds = pt.coverage.handoffIds.filter((id) => {
      const h = handoffHeadById(state, id)
      return h !== undefined && h.status !== "superseded"
    })
    events.push(
      new ProviderThreadRecorded({
        providerThread: {
          ...pt,
          status: "idle",
          statusReason: `rolled back natively to run ${to}`,
          coverage: { nativeRunOrdinals: native, handoffIds },
          handoffIds: pt.handoffIds.filter((id) => handoffIds.includes(id)),
          nativeTurns: pt.nativeTurns.filter((t) => t.runOrdinal <= to),
          // First and last run stay as they were: the runs after N are rolled back for
          // good and never live again, and new runs get higher ordinals, so the last run
          // it served still marks where its own history ends.
          updatedAt: now
        }
      })
    )
  }
  return events
}
