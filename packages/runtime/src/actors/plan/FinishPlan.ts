/**
 * A run's end: its items, its provider thread served or given up, what becomes of the
 * transfers it resolved, its checkpoint; and the end of the run a restart found in flight.
 */
import type {
  Checkpoint,
  ContextTransfer,
  Run,
  RunFailure,
  RunId,
  ThreadEvent,
  TurnItemContent,
  TurnUsage
} from "@skein/domain"
import {
  CheckpointRecorded,
  HandoffRecorded,
  ProviderThreadRecorded,
  ProviderThreadServed,
  RunEnded,
  TransferRecorded,
  makeId
} from "@skein/domain"
import type { ThreadState } from "../../store/ThreadState.js"
import {
  activeRun,
  fullHandoff,
  fullProviderThread,
  handoffHeadById,
  handoffsOfRun,
  itemsOf,
  needHandoffs,
  openTransfers,
  providerThreadHead,
  runById
} from "../../store/ThreadState.js"
import { unchecked } from "./Unchecked.js"
import { diffOf, planItems } from "./ItemPlan.js"

/**
 * What becomes of the transfers a run resolved when it ends. Kept (the provider took
 * the turn): consumed. Not kept: a transfer into this thread from elsewhere (a fork's
 * source, a merge-back, a subagent's result) waits for the next run again; a provider
 * switch's own transfer failed (the next run decides anew).
 */
const settleTransfers = (state: ThreadState, runId: RunId, kept: boolean, now: string): Array<ThreadEvent> => {
  const events: Array<ThreadEvent> = []
  for (const transfer of openTransfers(state)) {
    if (transfer.consumedByRunId !== runId || transfer.status === "consumed" || transfer.status === "superseded") {
      continue
    }
    const next: ContextTransfer = kept
      ? { ...transfer, status: "consumed", consumedAt: now }
      : transfer.type === "provider_handoff"
        ? { ...transfer, status: "failed" }
        : { ...transfer, status: "pending", resolution: null, consumedByRunId: null }
    events.push(new TransferRecorded({ transfer: next }))
  }
  // Handoffs delivered beside the run's own that reached no provider for good.
  if (!kept) {
    const failed = handoffsOfRun(state, runId).filter((h) => h.threadId !== state.thread.id && h.status === "ready")
    needHandoffs(
      state,
      failed.map((h) => h.id),
      true
    )
    for (const head of failed) {
      events.push(
        new HandoffRecorded({ handoff: { ...fullHandoff(state, head.id)!, status: "failed", updatedAt: now } })
      )
    }
  }
  return events
}

/**
 * End a run. Coverage grows only when the turn reached the provider and was kept
 * (completed or interrupted): a failed turn is treated as unseen, so the next run
 * on that provider thread is told about it through a handoff.
 */
export const planFinish = (
  state: ThreadState,
  input: {
    readonly runId: RunId
    readonly outcome: "completed" | "failed" | "interrupted"
    readonly failure: RunFailure | null
    readonly turnRef: string | null
    /** What the turn cost, when its provider said. */
    readonly usage?: TurnUsage | undefined
    /** Items that arrived with the end of the turn: recorded first, in the same commit. */
    readonly items?: ReadonlyArray<TurnItemContent> | undefined
    /**
     * "pending": the workspace is a git repository, and its checkpoint is taken once the
     * run's end is recorded (see `planCheckpointTaken`); otherwise a logical checkpoint.
     */
    readonly checkpoint?: "pending" | null
    readonly now: string
  }
): ReadonlyArray<ThreadEvent> => {
  const { now } = input
  const run = runById(state, input.runId)
  if (!run || (run.status !== "running" && run.status !== "queued")) return []
  const recorded = planItems(state, run.id, input.items ?? [], now)
  const events: Array<ThreadEvent> = [...recorded]
  const runItems = [...itemsOf(state, run.id), ...recorded.map((e) => e.item)]
  const kept = input.turnRef !== null && input.outcome !== "failed"
  const pt = run.providerThreadId ? providerThreadHead(state, run.providerThreadId) : undefined
  const handoff = run.contextHandoffId ? handoffHeadById(state, run.contextHandoffId) : undefined
  if (pt) {
    if (kept) {
      // One row's worth, however long the provider thread's history.
      events.push(
        new ProviderThreadServed(
          {
            providerThreadId: pt.id,
            runOrdinal: run.ordinal,
            handoffId: handoff?.id ?? null,
            turnRef: input.turnRef,
            status: "idle",
            updatedAt: now
          },
          unchecked
        )
      )
    } else {
      const whole = fullProviderThread(state, pt.id)!
      events.push(
        new ProviderThreadRecorded({
          providerThread: { ...whole, status: whole.nativeRef === null ? "failed" : "idle", updatedAt: now }
        })
      )
    }
  }
  if (handoff && handoff.status === "pending") {
    // Its summary was never finished, so it reached no provider.
    events.push(
      new HandoffRecorded({ handoff: { ...fullHandoff(state, handoff.id)!, status: "failed", updatedAt: now } })
    )
  }
  events.push(...settleTransfers(state, run.id, kept, now))
  const ended: Run = {
    ...run,
    status: input.outcome,
    failure: input.failure,
    completedAt: now,
    ...(input.usage === undefined ? {} : { usage: input.usage })
  }
  events.push(new RunEnded({ run: ended }, unchecked))
  if (input.outcome === "completed") {
    const checkpoint: Checkpoint = {
      id: makeId.checkpoint(),
      threadId: state.thread.id,
      runId: run.id,
      runOrdinal: run.ordinal,
      ...(input.checkpoint === "pending"
        ? { kind: "git" as const, gitRef: null, treeSha: null, diffSummary: [], status: "pending" as const }
        : {
            kind: "logical" as const,
            gitRef: null,
            treeSha: null,
            diffSummary: diffOf(runItems),
            status: "ready" as const
          }),
      createdAt: now
    }
    events.push(new CheckpointRecorded({ checkpoint }, unchecked))
  }
  return events
}

/** After a crash or restart: the run that was in flight ends `interrupted`, its provider thread goes idle. */
export const planRecovery = (
  state: ThreadState,
  now: string,
  failure: RunFailure = { reason: "runtime_restart", message: "Skein stopped while this run was in flight" }
): ReadonlyArray<ThreadEvent> => {
  const run = activeRun(state)
  if (run === undefined) return []
  return planFinish(state, {
    runId: run.id,
    outcome: "interrupted",
    failure,
    turnRef: null,
    now
  })
}
