/**
 * A thread actor's queue: `run.start` with `whenBusy: queue` on a busy thread answers
 * at once with the run `queued` (its id is the one it will run under) and the run
 * waits in the store's queue (store/RunQueue.ts). When the thread is idle again, the
 * actor sends itself `StartQueued` (through the checkpoint gate, as any start) and the
 * next run starts; its start's append takes it out of the queue in the same
 * transaction. A queued run that can no longer start (its provider is gone, its
 * context cannot reach it) is recorded as a failed run, so whoever waits on it hears.
 * A stop for shutdown holds the queue: what is queued starts after the next start-up.
 */
import type { CommandId, Run, RunFailure, RunId, SkeinError } from "@skein/domain"
import { makeId, RunStarted } from "@skein/domain"
import { Effect, Ref, Schedule } from "effect"
import type { Scope } from "effect"
import type { QueuedRun } from "../../store/RunQueue.js"
import { queuedRunOf } from "../../store/RunQueue.js"
import { activeRun } from "../../store/ThreadState.js"
import type { ThreadState } from "../../store/ThreadState.js"
import type { RunAccepted, StartRunPayload, ThreadAsk } from "../ThreadProtocol.js"
import { planFinish } from "../ThreadPlanner.js"
import type { StartRequest } from "./RunHandlers.js"
import type { ThreadContext } from "./ThreadContext.js"

/** The actor's memory of its queue: run ids in order, and whether it may start them. */
export interface QueueMemory {
  /** The next queued run, or null. */
  readonly next: () => RunId | null
  readonly add: (runId: RunId) => void
  readonly remove: (runId: RunId) => void
  readonly includes: (runId: RunId) => boolean
  readonly reset: (runIds: ReadonlyArray<RunId>) => void
  /** Held after a stop for shutdown: nothing more starts in this actor. */
  readonly held: () => boolean
  readonly hold: () => void
  /** Whether a drain (see `drain`) is under way. */
  draining: boolean
}

/** Methods on a prototype: an idle actor keeps its queue's memory small. */
class Memory implements QueueMemory {
  private isHeld = false
  draining = false
  constructor(private ids: ReadonlyArray<RunId>) {}
  next(): RunId | null {
    return this.ids[0] ?? null
  }
  add(runId: RunId): void {
    this.ids = [...this.ids, runId]
  }
  includes(runId: RunId): boolean {
    return this.ids.includes(runId)
  }
  remove(runId: RunId): void {
    this.ids = this.ids.filter((id) => id !== runId)
  }
  reset(runIds: ReadonlyArray<RunId>): void {
    this.ids = runIds
  }
  held(): boolean {
    return this.isHeld
  }
  hold(): void {
    this.isHeld = true
  }
}

export const queueMemory = (initial: ReadonlyArray<RunId>): QueueMemory => new Memory(initial)

/** What a queued run looks like before it starts. */
export const queuedView = (state: ThreadState, entry: QueuedRun): Run => queuedRunOf(entry, state.runCount)

/** The queued run `runId`, as a run, or undefined. */
export const findQueued = (ctx: ThreadContext, runId: RunId) =>
  Effect.map(queuedHere(ctx, runId), (entry) => (entry === undefined ? undefined : queuedView(ctx.cell.state(), entry)))

/** The queued run `runId` if it waits on this thread. */
const queuedHere = (ctx: ThreadContext, runId: RunId) =>
  Effect.map(ctx.store.queue.entry(runId), (entry) => (entry?.threadId === ctx.threadId ? entry : undefined))

/** Puts the start at the end of the thread's queue, with its receipt. */
export const enqueue = (
  ctx: ThreadContext,
  queue: QueueMemory,
  command: StartRunPayload,
  request: StartRequest,
  hash: string
): Effect.Effect<RunAccepted, SkeinError> =>
  Effect.gen(function* () {
    yield* ctx.sessions.adapter(command.provider)
    const runId = command.runId ?? makeId.run()
    const entry = yield* ctx.store.queue.enqueue({
      runId,
      threadId: ctx.threadId,
      request,
      commandId: command.commandId ?? null,
      createdAt: ctx.cell.now(),
      receipt:
        command.commandId === undefined
          ? undefined
          : { commandId: command.commandId, method: "run.start", payloadHash: hash, result: { runId } }
    })
    queue.add(runId)
    const state = ctx.cell.state()
    return { run: queuedView(state, entry), sequence: state.lastThreadSequence }
  })

/** Errors after which a queued run stays queued and its start is tried again. */
const isPassing = (error: SkeinError) =>
  error._tag === "RunAlreadyActive" ||
  error._tag === "RestorePending" ||
  error._tag === "StorageError" ||
  error._tag === "SequenceConflict"

/**
 * `StartQueued`: starts the next queued run if the thread is idle. Answers the run
 * started, or null when there was none to start (or the thread was busy).
 */
export const startQueued = (
  ctx: ThreadContext,
  queue: QueueMemory,
  begin: (
    request: StartRequest,
    origin: { readonly commandId: CommandId | undefined; readonly hash: null; readonly queued: RunId }
  ) => Effect.Effect<RunAccepted, SkeinError>
): Effect.Effect<RunAccepted | null, SkeinError> =>
  Effect.gen(function* () {
    if (queue.held()) return null
    // Busy with a run that jumped the queue (`whenBusy: interrupt`): its end drains.
    if ((yield* Ref.get(ctx.current)) !== null || activeRun(ctx.cell.state()) !== undefined) return null
    // The ids only: a long queue is not read whole for every start.
    const ids = yield* ctx.store.queue.ids(ctx.threadId)
    queue.reset(ids)
    const next = ids[0] === undefined ? undefined : yield* ctx.store.queue.entry(ids[0])
    if (next === undefined) return null
    const origin = { commandId: next.commandId ?? undefined, hash: null, queued: next.runId } as const
    return yield* begin(next.request, origin).pipe(
      Effect.tap(() => queue.remove(next.runId)),
      Effect.catchIf(
        (error) => !isPassing(error),
        (error) =>
          Effect.as(
            endUnstarted(ctx, queue, next, "failed", {
              reason: "runtime_error",
              message: `the queued run could not start: ${error.message}`
            }),
            null
          )
      )
    )
  })

/**
 * `run.interrupt` naming a queued run: out of the queue, recorded as interrupted (so
 * whoever waits on it hears). Undefined when it is not queued.
 */
export const cancelQueued = (ctx: ThreadContext, queue: QueueMemory, runId: RunId) =>
  Effect.gen(function* () {
    const entry = yield* queuedHere(ctx, runId)
    if (entry === undefined) return undefined
    yield* endUnstarted(ctx, queue, entry, "interrupted", {
      reason: "user_interrupt",
      message: "The queued run was cancelled before it started"
    })
    return entry.runId
  })

/** Records a queued run that will not start (refused, cancelled) as a run that ended at once. */
const endUnstarted = (
  ctx: ThreadContext,
  queue: QueueMemory,
  entry: QueuedRun,
  outcome: "failed" | "interrupted",
  failure: RunFailure
) =>
  Effect.gen(function* () {
    const at = ctx.cell.now()
    const state = ctx.cell.state()
    const run: Run = {
      ...queuedView(state, { ...entry, position: 1 }),
      status: "running",
      startedAt: at
    }
    yield* ctx.cell.commit([new RunStarted({ run })], entry.commandId ?? undefined, undefined, entry.runId)
    queue.remove(entry.runId)
    const events = yield* ctx.cell.demand((s) =>
      planFinish(s, { runId: run.id, outcome, failure, turnRef: null, now: at })
    )
    yield* ctx.cell.commit(events)
  })

/** A start refused for a moment is tried again soon, then every two seconds. */
const drainRetries = Schedule.exponential("20 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")))

/**
 * Once the thread is idle with runs queued: a fiber of the actor's scope asks it to
 * start the next (retrying while the thread is busy for a moment), holding the actor
 * meanwhile. One at a time. To be called when the thread has no run in flight.
 */
export const drain = (
  ctx: ThreadContext,
  queue: QueueMemory,
  askSettled: () => ThreadAsk,
  retain: Effect.Effect<Effect.Effect<void>>,
  scope: Scope.Scope
): Effect.Effect<void> => {
  if (queue.draining || queue.held() || queue.next() === null) return Effect.void
  queue.draining = true
  const start = Effect.acquireUseRelease(
    retain,
    () => askSettled()("StartQueued", undefined),
    (release) => release
  ).pipe(
    Effect.retry({ while: isPassing, schedule: drainRetries }),
    Effect.catchAllCause((cause) => Effect.logWarning(`thread ${ctx.threadId}: a queued run did not start`, cause)),
    Effect.ensuring(Effect.sync(() => void (queue.draining = false)))
  )
  return Effect.asVoid(Effect.forkIn(start, scope))
}
