/**
 * A thread actor's lineage: transfers recorded from other threads, rollbacks with the
 * file restore they may owe, incoming transfers revalidated, subagent children's
 * results collected, and the observe-only threads of child agents a provider ran
 * natively.
 */
import type { ContextTransfer, RunId, SkeinError, ThreadEvent, ThreadId, ThreadRestore, TurnItem } from "@skein/domain"
import {
  ContextTransferId,
  InvalidInput,
  InvalidSourcePoint,
  makeId,
  RestorePending,
  RunAlreadyActive,
  ThreadUpdated,
  TransferRecorded,
  TurnItemRecorded
} from "@skein/domain"
import { Effect, Option, Schema } from "effect"
import { loadIncoming } from "../../lineage/LineageContext.js"
import { childResults } from "../../lineage/Subagents.js"
import { planRollback, planRollbackSettled } from "../../lineage/Rollback.js"
import { payloadHash } from "../../store/Receipts.js"
import { activeRun, openTransfers, runById, transferById } from "../../store/ThreadState.js"
import type { Handlers } from "../SupervisedActor.js"
import type { ThreadMessage } from "../ThreadProtocol.js"
import { planObservedChild } from "../ThreadPlanner.js"
import type { ChildrenHint, ThreadContext, ThreadParts } from "./ThreadContext.js"
import { capabilitiesOf } from "./ThreadContext.js"

export type LineageMessages =
  "RecordTransfer" | "Rollback" | "RestoreFinished" | "RollbackSettled" | "RevalidateIncoming"

const TransferReceipt = Schema.Struct({ transferId: ContextTransferId })
const RollbackReceipt = Schema.Struct({ toRunOrdinal: Schema.Int, restoreId: Schema.optional(Schema.String) })

/** Incoming transfers whose source run was rolled back since: superseded, never delivered. */
export const supersede = (stale: ReadonlyArray<ContextTransfer>): Array<ThreadEvent> =>
  stale.map((transfer) => new TransferRecorded({ transfer: { ...transfer, status: "superseded" } }))

/** A thread whose files are owed a restore takes no run and no other rollback until they are back. */
export const refuseWhileRestoring = (ctx: ThreadContext) =>
  Effect.suspend(() => {
    const owed = ctx.cell.state().thread.restore
    return owed?.status === "owed"
      ? Effect.fail(new RestorePending({ threadId: ctx.threadId, toRunOrdinal: owed.toRunOrdinal }))
      : Effect.void
  })

/** A provider's own subagent, reported as an item of the run (see `observeChildren`). */
const isChildAgentItem = (
  event: ThreadEvent
): event is TurnItemRecorded & { readonly item: Extract<TurnItem, { readonly type: "child_agent" }> } =>
  event._tag === "TurnItemRecorded" && event.item.type === "child_agent"

/**
 * Child agents the provider ran natively that have ended with a thread of their own
 * get an observe-only app thread (a new log, written here once): the item names it.
 */
export const observeChildren = (
  ctx: ThreadContext,
  runId: RunId,
  events: ReadonlyArray<ThreadEvent>
): Effect.Effect<ReadonlyArray<ThreadEvent>, SkeinError> =>
  // Most runs end with no child agent item: nothing to walk.
  !events.some(isChildAgentItem)
    ? Effect.succeed(events)
    : Effect.suspend(() => {
        // A node reported twice in one batch gets its thread once.
        const made = new Map<string, ThreadId>()
        return Effect.forEach(events, (event) => {
          if (!isChildAgentItem(event)) return Effect.succeed(event)
          const childThreadId = made.get(event.item.childRef)
          if (childThreadId !== undefined && event.item.childThreadId === undefined) {
            return Effect.succeed(new TurnItemRecorded({ item: { ...event.item, childThreadId } }) as ThreadEvent)
          }
          const state = ctx.cell.state()
          const run = runById(state, runId)
          if (run === undefined) return Effect.succeed(event)
          const observed = planObservedChild(state, run, event.item, ctx.cell.now())
          if (observed === null) return Effect.succeed(event)
          made.set(event.item.childRef, observed.threadId)
          return ctx.store
            .append({ threadId: observed.threadId, events: observed.events, expectedSequence: 0 })
            .pipe(Effect.as(new TurnItemRecorded({ item: observed.item }) as ThreadEvent))
        })
      })

/**
 * Subagent children's results not yet in this thread's log, committed now, when the
 * hint says a child may have one (see `ChildrenHint`).
 */
export const collectChildResults = Effect.fnUntraced(function* (ctx: ThreadContext, children: ChildrenHint) {
  if (!children.get()) return
  // Cleared first: a child spawned meanwhile raises it again.
  children.clear()
  const found = yield* childResults(ctx.store, ctx.cell.state(), ctx.cell.now()).pipe(
    Effect.tap(({ events }) => (events.length > 0 ? ctx.cell.commit(events) : Effect.void)),
    Effect.onError(() => Effect.sync(children.mark))
  )
  if (found.waiting > 0) children.mark()
})

/**
 * The file restore a rollback to run `toRunOrdinal` owes, refused before anything is
 * written when that run's checkpoint cannot serve it.
 */
const owedRestore = (ctx: ThreadContext, toRunOrdinal: number, at: string) =>
  Effect.gen(function* () {
    const { threadId } = ctx
    const workspace = ctx.cell.state().thread.workspace
    const checkpoint = Option.getOrUndefined(yield* ctx.store.lookup.gitCheckpointOfRun(threadId, toRunOrdinal))
    if (checkpoint?.commitSha === undefined || workspace === null) {
      return yield* new InvalidSourcePoint({
        threadId,
        detail: `run ${toRunOrdinal} has no git checkpoint to restore files from (its workspace is not a git repository, or the run did not complete)`
      })
    }
    if (!(yield* ctx.checkpoints.checkpointExists(workspace, checkpoint.commitSha, checkpoint.gitRef))) {
      return yield* new InvalidSourcePoint({
        threadId,
        detail: `run ${toRunOrdinal}'s checkpoint ${checkpoint.commitSha.slice(0, 12)} is no longer in the repository of ${workspace} (pruned); roll back without restoreFiles`
      })
    }
    const restore: ThreadRestore = {
      id: makeId.restore(),
      toRunOrdinal,
      commit: checkpoint.commitSha,
      workspace,
      status: "owed",
      requestedAt: at,
      finishedAt: null,
      outcome: null,
      detail: null
    }
    return restore
  })

/** No run in flight, and no checkpoint being taken. */
const refuseWhileBusy = (ctx: ThreadContext) =>
  Effect.suspend(() => {
    const busy = activeRun(ctx.cell.state())
    return busy ? Effect.fail(new RunAlreadyActive({ threadId: ctx.threadId, runId: busy.id })) : ctx.gate.refuse
  })

const rollback =
  (ctx: ThreadContext): Handlers<ThreadMessage>["Rollback"] =>
  ({ commandId, restoreFiles, toRunOrdinal }) =>
    Effect.gen(function* () {
      const { cell, threadId } = ctx
      const hash = payloadHash({ threadId, toRunOrdinal, restoreFiles })
      const replayed = yield* cell.replay(commandId, "thread.rollback", hash, RollbackReceipt)
      if (Option.isSome(replayed)) {
        // The restore this command asked for, as it now stands (a later one replaces it).
        const asked = replayed.value.restoreId
        const thread = cell.state().thread
        const restore = asked !== undefined && thread.restore?.id === asked ? thread.restore : null
        if (restore?.status !== "failed") return { replayed: true, native: [], restore }
        // Tried again: owed again, so that no run changes the files meanwhile.
        yield* refuseWhileBusy(ctx)
        const again: ThreadRestore = { ...restore, status: "owed", finishedAt: null, detail: null }
        yield* cell.commit([new ThreadUpdated({ thread: { ...thread, restore: again, updatedAt: cell.now() } })])
        return { replayed: true, native: [], restore: again }
      }
      yield* refuseWhileRestoring(ctx)
      yield* refuseWhileBusy(ctx)
      const last = cell.state().runCount
      if (toRunOrdinal > last) {
        return yield* new InvalidInput({
          detail: `thread ${threadId} has ${last} run(s): it cannot be rolled back to run ${toRunOrdinal}`
        })
      }
      const at = cell.now()
      const restore = restoreFiles ? yield* owedRestore(ctx, toRunOrdinal, at) : null
      // A whole-thread change: planned on the complete state, read here.
      const plan = yield* cell.demand((s) =>
        planRollback(s, { toRunOrdinal, capabilitiesOf: (name) => capabilitiesOf(ctx.sessions, name), now: at })
      )
      // The restore is owed from the same commit as the rollback, before any file changes.
      const events =
        restore === null
          ? plan.events
          : [...plan.events, new ThreadUpdated({ thread: { ...cell.state().thread, restore, updatedAt: at } })]
      // Recorded even when nothing changes, so that the commandId answers the same.
      yield* cell.commit(events, commandId, {
        method: "thread.rollback",
        hash,
        result: restore === null ? { toRunOrdinal } : { toRunOrdinal, restoreId: restore.id }
      })
      return { replayed: false, native: plan.native, restore }
    })

const recordTransfer =
  (ctx: ThreadContext): Handlers<ThreadMessage>["RecordTransfer"] =>
  ({ receipt, transfer }) =>
    Effect.gen(function* () {
      const { cell } = ctx
      if (receipt !== null) {
        const replayed = yield* cell.replay(receipt.commandId, receipt.method, receipt.hash, TransferReceipt)
        if (Option.isSome(replayed)) {
          const transferId = replayed.value.transferId
          const recorded = yield* cell.demand((s) => transferById(s, transferId))
          if (recorded) return recorded
        }
      }
      // The same source run sent here twice (a retry, a reconciliation): one transfer.
      for (const existing of openTransfers(cell.state())) {
        if (
          existing.type === transfer.type &&
          existing.sourceThreadId === transfer.sourceThreadId &&
          existing.sourcePoint.runId === transfer.sourcePoint.runId &&
          existing.status === "pending"
        ) {
          return existing
        }
      }
      // A child has one result: its watcher and the parent's own look in storage can both
      // send it, and the parent may have taken it in already (consumed, out of memory).
      if (transfer.type === "subagent_result") {
        const held = yield* ctx.store.lookup.subagentResult(ctx.threadId, transfer.sourceThreadId)
        if (Option.isSome(held)) return held.value
      }
      yield* cell.commit(
        [new TransferRecorded({ transfer })],
        receipt?.commandId,
        receipt ? { method: receipt.method, hash: receipt.hash, result: { transferId: transfer.id } } : undefined
      )
      return transfer
    })

/** The lineage handlers, one set for every thread's actor. */
export const lineageHandlers: Pick<Handlers<ThreadMessage, ThreadParts>, LineageMessages> = {
  RecordTransfer: (command, { ctx }) => recordTransfer(ctx)(command),
  Rollback: (command, { ctx }) => rollback(ctx)(command),

  RestoreFinished: ({ detail, outcome, restoreId }, { ctx }) =>
    Effect.gen(function* () {
      const thread = ctx.cell.state().thread
      const owed = thread.restore
      if (owed === undefined || owed.id !== restoreId) return null
      if (owed.status !== "owed" && outcome === null) return owed
      const at = ctx.cell.now()
      const finished: ThreadRestore = {
        ...owed,
        status: outcome === null ? "failed" : "done",
        finishedAt: at,
        outcome,
        detail: outcome === null ? detail : null
      }
      yield* ctx.cell.commit([new ThreadUpdated({ thread: { ...thread, restore: finished, updatedAt: at } })])
      return finished
    }),

  RollbackSettled: ({ results, toRunOrdinal }, { ctx }) => {
    const at = ctx.cell.now()
    return Effect.flatMap(
      ctx.cell.demand((s) => planRollbackSettled(s, { toRunOrdinal, results, now: at })),
      (events) => ctx.cell.commit(events)
    )
  },

  RevalidateIncoming: (_, { ctx }) =>
    Effect.flatMap(loadIncoming(ctx.store, ctx.cell.state()), ({ stale }) => ctx.cell.commit(supersede(stale)))
}
