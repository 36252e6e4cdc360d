/**
 * A thread actor's runs: starting one (its context decided, its events and receipt
 * committed, its driver launched), stopping it, and reading it. What its driver reports
 * while it goes is RunReports.ts. The run in flight is the context's `current`, written
 * only by these two.
 */
import type { CommandId, RunFailure, SkeinError, TurnItem } from "@skein/domain"
import { NoActiveRun, ObserveOnlyThread, RunAlreadyActive, RunId, RunNotFound, StorageError } from "@skein/domain"
import { Deferred, Effect, Option, Ref, Schema } from "effect"
import type { Scope } from "effect"
import { loadIncoming } from "../../lineage/LineageContext.js"
import { toRunView } from "../../store/Projection.js"
import * as Telemetry from "../../resources/Telemetry.js"
import { payloadHash } from "../../store/Receipts.js"
import { activeRun, itemsOf, runById } from "../../store/ThreadState.js"
import { extraHandoffs } from "../ContextPlanning.js"
import type { Handlers } from "../SupervisedActor.js"
import type { RunAccepted, StartRunPayload, ThreadMessage } from "../ThreadProtocol.js"
import { planRunStart } from "../ThreadPlanner.js"
import { collectChildResults, refuseWhileRestoring, supersede } from "./LineageHandlers.js"
import { cancelQueued, enqueue, findQueued, type QueueMemory, startQueued } from "./QueuedRuns.js"
import { launch, type LaunchContext } from "./RunLaunch.js"
import { decideStart, type InheritedCache } from "./RunStart.js"
import type { ActiveRun, ChildrenHint, ThreadContext } from "./ThreadContext.js"

export type RunMessages = "StartRun" | "StartQueued" | "InterruptRun" | "StopRun" | "GetRun" | "Status"

/** What the run handlers need beyond the shared context. */
export interface RunsContext extends LaunchContext {
  /** The actor's scope: what it starts for itself (its drivers' set, the next queued run's start) ends with it. */
  readonly scope: Scope.Scope
  readonly children: ChildrenHint
  /** The inherited context read so far, made by the first run start that reads any. */
  readonly inheritedCache: () => InheritedCache
  readonly queue: QueueMemory
}

/** What receipts of run.start and run.interrupt hold. */
export const RunReceipt = Schema.Struct({ runId: RunId })

const interrupted: RunFailure = { reason: "user_interrupt", message: "The run was interrupted" }

export const startRunHash = (command: StartRunPayload) =>
  payloadHash({
    threadId: command.threadId,
    provider: command.provider,
    message: command.message,
    model: command.model ?? null,
    cleanContext: command.cleanContext ?? false,
    handoffBudgetTokens: command.handoffBudgetTokens ?? null
  })

/** The run as it stands (or as it waits in the queue), with where the thread's events stand. */
export const accepted = (
  ctx: ThreadContext,
  runId: TurnItem["runId"]
): Effect.Effect<RunAccepted, RunNotFound | StorageError> =>
  Effect.flatMap(
    ctx.cell.demand((s) => runById(s, runId)),
    (run) =>
      Effect.flatMap(run ? Effect.succeed(run) : findQueued(ctx, runId), (found) =>
        found
          ? Effect.succeed({ run: found, sequence: ctx.cell.state().lastThreadSequence })
          : Effect.fail(new RunNotFound({ runId }))
      )
  )

/**
 * A start on a busy thread (a run going, or runs queued before it): queued with
 * `whenBusy: queue`; otherwise refused (`whenBusy: interrupt` is the caller's: it stops
 * the run in the way and asks again).
 */
const whenBusy = (
  ctx: ThreadContext,
  runs: RunsContext,
  command: StartRunPayload,
  busy: RunId,
  hash: string
): Effect.Effect<RunAccepted, SkeinError> =>
  command.whenBusy === "queue"
    ? enqueue(ctx, runs.queue, command, requestOf(command), hash)
    : Effect.fail(new RunAlreadyActive({ threadId: ctx.threadId, runId: busy }))

/** What a run's start asked for, from `run.start` or from the queue. */
export interface StartRequest {
  readonly provider: StartRunPayload["provider"]
  readonly message: string
  readonly model: string | null
  readonly cleanContext: boolean
  readonly handoffBudgetTokens: number | null
}

export const requestOf = (command: StartRunPayload): StartRequest => ({
  provider: command.provider,
  message: command.message,
  model: command.model ?? null,
  cleanContext: command.cleanContext ?? false,
  handoffBudgetTokens: command.handoffBudgetTokens ?? null
})

/**
 * Starts a run on an idle thread: its context decided, its events (and the command's
 * receipt, or its removal from the queue) committed, its driver launched.
 */
export const begin = Effect.fnUntraced(function* (
  ctx: ThreadContext,
  runs: RunsContext,
  request: StartRequest,
  origin: {
    readonly commandId: CommandId | undefined
    /** The start's receipt hash; none for a queued run (its receipt was written when queued). */
    readonly hash: string | null
    /** A queued run: the id its caller was given. */
    readonly queued: RunId | null
    /** The id the caller chose for the run (StartRun's `runId`). */
    readonly runId?: RunId | undefined
  }
) {
  const { cell } = ctx
  const adapter = yield* ctx.sessions.adapter(request.provider)
  yield* ctx.gate.refuse
  const budgetTokens = request.handoffBudgetTokens ?? ctx.config.handoffBudgetTokens
  // What this thread takes in from others: read now, when a run needs it.
  yield* collectChildResults(ctx, runs.children)
  const { incoming, stale } = yield* loadIncoming(ctx.store, cell.state())
  const start = yield* decideStart(ctx, runs.inheritedCache(), {
    adapter,
    model: request.model ?? undefined,
    cleanContext: request.cleanContext,
    resumeFailed: false,
    budgetTokens,
    incoming
  }).pipe(Telemetry.traced("context.resolve", { attributes: { "gen_ai.agent.name": request.provider } }))
  const at = cell.now()
  const plan = yield* cell.demand((s) =>
    planRunStart(s, {
      message: request.message,
      model: request.model,
      commandId: origin.commandId ?? null,
      provider: start.provider,
      decision: start.decision,
      draft: start.draft,
      extras: extraHandoffs(start.decision, budgetTokens),
      summaryBy: start.summaryBy,
      runId: origin.queued ?? origin.runId,
      now: at
    })
  )
  yield* cell.commit(
    [...supersede(stale), ...plan.events],
    origin.commandId,
    origin.hash === null ? undefined : { method: "run.start", hash: origin.hash, result: { runId: plan.run.id } },
    origin.queued ?? undefined
  )
  yield* Telemetry.handoffsWritten(plan.context)
  const control: ActiveRun = {
    runId: plan.run.id,
    context: plan.context,
    stop: yield* Deferred.make<RunFailure | null>(),
    stopCommandId: null,
    driverExited: false
  }
  yield* Ref.set(ctx.current, control)
  yield* launch(ctx, runs, plan, control)
  return { run: plan.run, sequence: cell.state().lastThreadSequence }
})

const startRun = Effect.fnUntraced(function* (ctx: ThreadContext, runs: RunsContext, command: StartRunPayload) {
  const { cell, threadId } = ctx
  // Only a command with an id has a receipt to compare with or write.
  const hash = command.commandId === undefined ? "" : startRunHash(command)
  const replayed = yield* cell.replay(command.commandId, "run.start", hash, RunReceipt)
  if (Option.isSome(replayed)) return yield* accepted(ctx, replayed.value.runId)
  // A start delivered again (the thread moved under it) answers the run it made: the
  // one going or queued, or (on an idle thread, where reading costs no refusal) one
  // that ended.
  const chosen = command.runId
  if (chosen !== undefined && (activeRun(cell.state())?.id === chosen || runs.queue.includes(chosen))) {
    return yield* accepted(ctx, chosen)
  }
  if (cell.state().thread.lineage.observeOnly) return yield* new ObserveOnlyThread({ threadId })
  yield* refuseWhileRestoring(ctx)
  const busy = activeRun(cell.state())?.id ?? (command.whenBusy === "interrupt" ? null : runs.queue.next())
  if (busy !== null) return yield* whenBusy(ctx, runs, command, busy, hash)
  if (chosen !== undefined && (yield* cell.demand((s) => runById(s, chosen))) !== undefined) {
    return yield* accepted(ctx, chosen)
  }
  return yield* begin(ctx, runs, requestOf(command), {
    commandId: command.commandId,
    hash: command.commandId === undefined ? null : hash,
    queued: null,
    runId: chosen
  })
})

/** The run in flight, or `NoActiveRun`. */
const inFlight = (ctx: ThreadContext) =>
  Effect.flatMap(Ref.get(ctx.current), (current) =>
    current === null ? Effect.fail(new NoActiveRun({ threadId: ctx.threadId })) : Effect.succeed(current)
  )

/** What each run handler is given with its message. */
export interface RunParts {
  readonly ctx: ThreadContext
  readonly runs: RunsContext
}

/** The run handlers, one set for every thread's actor. */
export const runHandlers: Pick<Handlers<ThreadMessage, RunParts>, RunMessages> = {
  StartRun: (command, { ctx, runs }) => startRun(ctx, runs, command),
  StartQueued: (_, { ctx, runs }) =>
    startQueued(ctx, runs.queue, (request, origin) => begin(ctx, runs, request, origin)),

  InterruptRun: (command, { ctx, runs }) =>
    Effect.gen(function* () {
      // The run's end writes the receipt with this hash (FinishRun), whichever run was named.
      const hash = payloadHash({ threadId: ctx.threadId })
      const replayed = yield* ctx.cell.replay(command.commandId, "run.interrupt", hash, RunReceipt)
      if (Option.isSome(replayed)) return yield* accepted(ctx, replayed.value.runId)
      const named = command.runId
      if (named !== undefined && (yield* Ref.get(ctx.current))?.runId !== named) {
        // A queued run: out of the queue. One already over: as it ended.
        const cancelled = yield* cancelQueued(ctx, runs.queue, named)
        if (cancelled === undefined && (yield* ctx.cell.demand((s) => runById(s, named))) === undefined) {
          return yield* new RunNotFound({ runId: named })
        }
        return yield* accepted(ctx, named)
      }
      const current = yield* inFlight(ctx)
      yield* Ref.set(ctx.current, { ...current, stopCommandId: command.commandId ?? current.stopCommandId })
      yield* Deferred.succeed(current.stop, interrupted)
      return yield* accepted(ctx, current.runId)
    }),

  StopRun: ({ failure }, { ctx, runs }) =>
    Effect.gen(function* () {
      // Stopped from outside (shutdown, or the thread moving away): what is queued waits
      // for the thread's next start (after a restart, or on the runner it moved to).
      runs.queue.hold()
      const current = yield* inFlight(ctx)
      yield* Deferred.succeed(current.stop, failure)
      return yield* accepted(ctx, current.runId)
    }),

  GetRun: ({ runId }, { ctx }) =>
    Effect.flatMap(
      ctx.cell.demand((s) => {
        const run = runById(s, runId)
        return run === undefined ? undefined : toRunView(run, itemsOf(s, runId))
      }),
      (view) =>
        view !== undefined
          ? Effect.succeed(view)
          : Effect.flatMap(findQueued(ctx, runId), (queued) =>
              queued === undefined ? Effect.fail(new RunNotFound({ runId })) : Effect.succeed(toRunView(queued, []))
            )
    ),

  Status: (_, { ctx }) =>
    Effect.map(Ref.get(ctx.current), (current) => {
      const state = ctx.cell.state()
      return { lastSequence: state.lastThreadSequence, activeRunId: current?.runId ?? activeRun(state)?.id ?? null }
    })
}
