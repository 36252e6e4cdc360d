/**
 * The fiber that carries one run to its provider: has the handoff's summary written
 * when a provider is to write it, opens (or reuses) a session, starts or resumes the
 * provider thread, sends the turn with its handoff block, and reports every provider
 * event back to the thread actor, which persists them in order.
 *
 * The run's life is one phase value (`run/RunPhase.ts`: Preparing, Sent, Ended) and
 * what the turn reported (`run/RunEnd.ts`'s `TurnReport`). The turn runs in a fiber of
 * its own; the driver waits for the first word of its end (the turn's end event, the
 * provider call's exit, or a stop) and records the run's end from it, on one path.
 *
 * Guarantees:
 * - However the run goes, it ends with exactly one `FinishRun`: every provider call is
 *   guarded (typed failures, deadlines, process exits; see ProviderGuard), and the
 *   driver's own defects end the run `failed` with reason `runtime_error`. Only if the
 *   `FinishRun` sent from the turn's end event fails does the driver try again, once the
 *   turn's call has returned, from however it returned.
 * - A turn that ends (completed or interrupted) is finished from its end event, while
 *   the provider's call is still unwinding: the caller waiting for the run does not
 *   wait for that too.
 * - A completed run in a git repository has its end recorded with its checkpoint
 *   `pending`, so that whoever waits for the run is answered without waiting for git;
 *   the driver takes the checkpoint next and records it (`RecordCheckpoint`), and the
 *   thread's next run waits for that (the checkpoint gate) before its provider touches
 *   the workspace.
 * - Stopping (see `run/RunStop.ts`) before the turn is sent ends the run at once; after,
 *   it asks the provider to stop its turn, and a provider that does not stop within the
 *   grace period has its process killed.
 * - A provider call that timed out or died closes its session, so the next run starts
 *   a fresh one.
 */
import type { ProviderName, RunFailure, SkeinError, TurnInput } from "@skein/domain"
import type { ProviderFailure, Run } from "@skein/domain"
import { Deferred, Effect, Exit, Fiber, Option, Ref, Scope } from "effect"
import { forkNowIn } from "../resources/ForkNow.js"
import { withScope } from "../resources/LocalScope.js"
import * as Telemetry from "../resources/Telemetry.js"
import type { CheckpointGate } from "./CheckpointGate.js"
import * as ItemBatch from "./ItemBatch.js"
import type { ProviderSessionsShape, SessionLease } from "./ProviderSessions.js"
import { ensureSummary, ensureThread } from "./run/ProviderThread.js"
import * as RunCheckpoint from "./run/RunCheckpoint.js"
import type { TurnExit, TurnOutcome, TurnReport } from "./run/RunEnd.js"
import { emptyReport, finishOf } from "./run/RunEnd.js"
import { endTurn, RunPhase, send, type TurnEnd } from "./run/RunPhase.js"
import * as RunStop from "./run/RunStop.js"
import * as TurnSink from "./run/TurnSink.js"
import type { RunContext, ThreadAsk } from "./ThreadProtocol.js"

export { failureOf } from "./run/RunEnd.js"

export interface DriveInput {
  readonly run: Run
  readonly context: RunContext
  readonly workspace: string | null
  readonly sessions: ProviderSessionsShape
  readonly ask: ThreadAsk
  /** The provider called the app tool `spawn_subagent`: start the child, say where it runs. */
  readonly spawn: (
    provider: ProviderName,
    prompt: string
  ) => Effect.Effect<{ readonly threadId: string; readonly runId: string }, SkeinError>
  /** The workspace's git checkpoints; null when the thread has no workspace. */
  readonly checkpoint: RunCheckpoint.WorkspaceCheckpoint | null
  /** The thread's checkpoint gate: this run waits on it, and holds it while its own checkpoint is taken. */
  readonly gate: CheckpointGate
  /** Completed with the failure to record when the run must stop; the driver completes it with null once the end is known. */
  readonly stop: Deferred.Deferred<RunFailure | null>
  readonly graceMs: number
  /** How long reported items may wait to be recorded with what follows them (the adapter holds them: `TurnInput.itemDelayMs`). */
  readonly itemDelayMs: number
}

/** The run while it is driven: where it is, what its turn reported, and the first word of the turn's end. */
interface RunCell {
  readonly phase: Ref.Ref<RunPhase>
  readonly report: Ref.Ref<TurnReport>
  readonly items: ItemBatch.ItemBatch
  readonly ended: Deferred.Deferred<TurnEnd>
  /**
   * Opened once the driver has tried to record the run's end: the turn's sink waits for it.
   * A signal with no value, so a `Latch`: making one costs a small fraction of a `Deferred`.
   */
  readonly recorded: Effect.Latch
}

/** A call that timed out or died leaves its session suspect: close it. */
const sessionSuspect = (error: ProviderFailure | SkeinError): boolean =>
  error._tag === "ProviderFailure" && (error.kind === "timeout" || error.kind === "defect")

/** The turn as the port takes it: the run's message with one handoff block (its own, then what it brings in). */
const turnInputOf = (input: DriveInput, context: RunContext, nativeRef: string): TurnInput => {
  const { run } = input
  const blocks = [...(context.handoff ? [context.handoff] : []), ...context.extras]
  return {
    nativeRef,
    runId: run.id,
    message: run.message,
    handoff:
      blocks.length > 0 && context.delivery
        ? { handoffId: blocks[0]!.id, delivery: context.delivery, text: blocks.map((h) => h.summaryText).join("\n\n") }
        : null,
    model: run.model,
    workspace: input.workspace,
    itemDelayMs: input.itemDelayMs
  }
}

/** On the lease: the provider thread made ready, then the turn sent (unless a stop came first) and its events reported. */
const sendTurn = Effect.fnUntraced(
  function* (input: DriveInput, cell: RunCell, lease: SessionLease, initial: RunContext) {
    const { context, nativeRef } = yield* ensureThread(input, lease, initial)
    const go = (yield* Deferred.isDone(input.stop)) ? false : yield* Ref.modify(cell.phase, send(lease, nativeRef))
    if (!go) return "interrupted" as TurnOutcome
    const sink = TurnSink.make({ ...cell, spawn: input.spawn })
    // Once the turn's call is over there is nothing left for a stop to interrupt.
    yield* Effect.ensuring(
      lease.handle
        .runTurn(turnInputOf(input, context, nativeRef), sink)
        .pipe(Telemetry.providerTurn(input.run.provider, nativeRef)),
      Ref.set(cell.phase, RunPhase.Ended())
    )
    return (yield* Ref.get(cell.report)).outcome
  },
  (effect, _input, _cell, lease) =>
    Effect.tapError(effect, (error) => (sessionSuspect(error) ? lease.kill : Effect.void))
)

/** The turn from the gate to its call's return, with the stop watched beside it; its exit is a word of the turn's end. */
const turn = (input: DriveInput, cell: RunCell): Effect.Effect<TurnOutcome, ProviderFailure | SkeinError> =>
  withScope((scope) => turnIn(input, cell, scope)).pipe(
    Effect.onExit((exit) => endTurn(cell.phase, cell.ended, { by: "call", exit }))
  )

/** `turn` in its scope. */
const turnIn = Effect.fnUntraced(function* (input: DriveInput, cell: RunCell, scope: Scope.Scope) {
  yield* Effect.forkIn(RunStop.watch({ ...cell, stop: input.stop, graceMs: input.graceMs }), scope)
  yield* input.gate.settled
  const context = yield* ensureSummary(input, input.context)
  return yield* input.sessions.use(input.run.provider, input.workspace, (lease) =>
    sendTurn(input, cell, lease, context)
  )
})

/**
 * Records the run's end (its `FinishRun`) from how the turn ended; true when a git
 * checkpoint is now pending, to be taken.
 */
const recordEnd = Effect.fnUntraced(function* (
  input: DriveInput,
  cell: RunCell,
  checkpointDue: Effect.Effect<RunCheckpoint.CheckpointDue>,
  beginCapture: Effect.Effect<void>,
  exit: TurnExit
): Effect.fn.Return<boolean, SkeinError> {
  const completed = Exit.isSuccess(exit) && exit.value === "completed" && input.checkpoint !== null
  const checkpoint = completed ? yield* checkpointDue : { due: false, note: null }
  const stop = yield* Deferred.poll(input.stop)
  const end = finishOf({
    runId: input.run.id,
    exit,
    stopped: Option.isSome(stop) ? yield* stop.value : null,
    report: yield* Ref.get(cell.report),
    held: yield* cell.items.held,
    checkpointNote: checkpoint.note,
    checkpoint: checkpoint.due ? "pending" : null
  })
  // Interrupted from outside (the actor is closing): nobody is left to record it.
  if (Option.isNone(end)) return false
  const pending = end.value.checkpoint === "pending"
  // Before the end is in the mailbox: a run started after it waits for the checkpoint.
  if (pending) yield* beginCapture
  yield* Telemetry.runEnded(input.run.provider, end.value)
  yield* input.ask("FinishRun", end.value)
  return pending
})

const noCheckpoint: RunCheckpoint.CheckpointDue = { due: false, note: null }

/** `effect` run the first time it is asked for, its value given again after (it is asked for at most twice). */
const once = <A>(effect: Effect.Effect<A>): Effect.Effect<Effect.Effect<A>> =>
  Effect.map(Ref.make(Option.none<A>()), (memo) =>
    Effect.flatMap(Ref.get(memo), (known) =>
      Option.isSome(known)
        ? Effect.succeed(known.value)
        : Effect.tap(effect, (value) => Ref.set(memo, Option.some(value)))
    )
  )

/** The checkpoint gate's capture for this run, begun at most once and released when the driver ends. */
const captureOnce = Effect.fnUntraced(function* (input: DriveInput, scope: Scope.Scope) {
  const release = yield* Ref.make(Option.none<Effect.Effect<void>>())
  yield* Scope.addFinalizer(
    scope,
    Effect.flatMap(
      Ref.get(release),
      Option.getOrElse(() => Effect.void)
    )
  )
  return Effect.flatMap(Ref.get(release), (begun) =>
    Option.isSome(begun)
      ? Effect.void
      : Effect.flatMap(input.gate.begin(input.run.id), (done) => Ref.set(release, Option.some(done)))
  )
})

export const driveRun = (input: DriveInput): Effect.Effect<void, SkeinError> =>
  withScope((scope) => driveIn(input, scope))

/** `driveRun` in its scope (made once: docs/decisions/0011-generators-made-once.md). */
const driveIn = Effect.fnUntraced(function* (input: DriveInput, scope: Scope.Scope) {
  const { ask, run } = input
  const cell: RunCell = {
    phase: yield* Ref.make<RunPhase>(RunPhase.Preparing()),
    report: yield* Ref.make(emptyReport),
    items: yield* ItemBatch.make((batch) => ask("RecordItems", { runId: run.id, items: batch })),
    ended: yield* Deferred.make<TurnEnd>(),
    recorded: yield* Effect.makeLatch()
  }
  const checkpointDue =
    input.checkpoint === null ? Effect.succeed(noCheckpoint) : yield* once(RunCheckpoint.due(input.checkpoint))
  // Without a workspace no checkpoint is ever pending, so no capture is begun.
  const beginCapture = input.checkpoint === null ? Effect.void : yield* captureOnce(input, scope)
  const record = (exit: TurnExit) => recordEnd(input, cell, checkpointDue, beginCapture, exit)

  const turnFiber = yield* forkNowIn(turn(input, cell), scope)
  const first = yield* Deferred.await(cell.ended)
  // A stop ended the run: the turn is cut short first, and what its adapter gives up
  // on the way is held for the run's end.
  if (first.by === "stop") yield* Fiber.interrupt(turnFiber)
  // If recording fails, the actor hears why from this fiber's exit (DriverExited) and
  // ends the run itself; from the end event, it is tried again once the call returns.
  const pending = yield* record(first.exit).pipe(
    // Opened in place: the sink resumes as it would from a Deferred, with no flush task first.
    Effect.ensuring(Effect.sync(() => cell.recorded.unsafeOpen())),
    Effect.catchAll((error) => (first.by === "event" ? Effect.flatMap(turnFiber.await, record) : Effect.fail(error)))
  )
  // The end is recorded: a stop has nothing left to do, so its watcher may end.
  yield* Deferred.succeed(input.stop, null)
  // The turn's call unwinds, then the pending checkpoint is taken.
  yield* turnFiber.await
  if (pending && input.checkpoint !== null) {
    yield* RunCheckpoint.take(input.checkpoint, ask, run.id).pipe(
      Telemetry.traced("checkpoint.capture", { attributes: { "skein.run.id": run.id } })
    )
  }
})
