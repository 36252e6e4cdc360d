/**
 * The fiber that carries one run to its provider: has the handoff's summary written
 * when a provider is to write it, opens (or reuses) a session, starts or resumes the
 * provider thread, sends the turn with its handoff block, and reports every provider
 * event back to the thread actor, which persists them in order.
 *
 * A completed run in a git repository has its end recorded with its checkpoint
 * `pending`, so that whoever waits for the run is answered without waiting for git;
 * the driver takes the checkpoint next and records it (`RecordCheckpoint`), and the
 * thread's next run waits for that before its provider touches the workspace.
 *
 * However the run goes, it ends with exactly one `FinishRun`: every provider call is
 * guarded (typed failures, deadlines, process exits; see ProviderGuard), and the
 * driver's own defects end the run `failed` with reason `runtime_error`. A provider
 * call that timed out or died closes its session, so the next run starts a fresh one.
 * A turn that ends (completed or interrupted) is finished from its end event, while
 * the provider's call is still unwinding: the caller waiting for the run does not wait
 * for that too. Only if that FinishRun fails does the driver try again once the turn's
 * call has returned, from however it returned.
 *
 * Stopping (the user's interrupt, shutdown, or a fault found elsewhere, such as a
 * provider refusing an approval) asks the provider to stop its turn; a provider that
 * does not stop within the grace period has its process killed.
 */
import type { Rpc } from "@effect/rpc"
import { ProviderName, TurnUsage } from "@skein/domain"
import type {
  NativeRefStrength,
  ProviderEvent,
  ProviderFailure,
  Run,
  RunFailure,
  SkeinError,
  TurnItemContent,
  GitFailed
} from "@skein/domain"
import { Cause, Deferred, Duration, Effect, Either, Exit, Fiber, Option, Runtime, Schema } from "effect"
import type { CapturedCheckpoint } from "../lineage/WorkspaceCheckpoints.js"
import type { CheckpointTaken } from "./ThreadPlanner.js"
import * as ItemBatch from "./ItemBatch.js"
import * as OneShot from "./OneShot.js"
import type { CheckpointGate } from "./CheckpointGate.js"
import type { ProviderSessionsShape, SessionLease } from "./ProviderSessions.js"
import type { FinishRun, RunContext, RunOutcome, SummaryOutcome, ThreadAsk } from "./ThreadProtocol.js"

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
  readonly checkpoint: {
    readonly isRepository: Effect.Effect<boolean, GitFailed>
    /** The checkpoint after this run (None: not a repository after all). */
    readonly capture: Effect.Effect<Option.Option<CapturedCheckpoint>, GitFailed>
  } | null
  /** The thread's checkpoint gate: this run waits on it, and holds it while its own checkpoint is taken. */
  readonly gate: CheckpointGate
  /** Completed with the failure to record when the run must stop. */
  readonly stop: Deferred.Deferred<RunFailure>
  readonly graceMs: number
  /** How long reported items may wait to be recorded with what follows them (the adapter holds them: `TurnInput.itemDelayMs`). */
  readonly itemDelayMs: number
}

const isUsage = Schema.is(TurnUsage)
/**
 * The provider's turn ref as the run's end can store it (a string), else null: the
 * events of a run's end are built unchecked (ThreadPlanner), so what the provider
 * reported for them is checked here.
 */
const turnRefOf = (ref: unknown): string | null => (typeof ref === "string" ? ref : null)

/** A stop that is not a failure of the run: it ends `interrupted`, anything else `failed`. */
const isInterruption = (failure: RunFailure) => failure.reason === "user_interrupt" || failure.reason === "shutdown"

export const failureOf = (error: ProviderFailure | SkeinError): RunFailure => {
  if (error._tag !== "ProviderFailure") return { reason: "runtime_error", message: error.message }
  switch (error.kind) {
    case "crash":
      return { reason: "provider_crash", message: error.message }
    case "timeout":
      return { reason: "provider_timeout", message: error.message }
    case "defect":
      return { reason: "provider_defect", message: error.message }
    case "resume_failed":
      return { reason: "resume_failed", message: error.message }
    default:
      return { reason: "provider_error", message: error.message }
  }
}

/** A native operation the provider refused (not a broken session): fall back to a portable handoff. */
const recoverable = (error: ProviderFailure): boolean =>
  error.kind === "resume_failed" || error.kind === "error" || error.kind === "unsupported"

/** A call that timed out or died leaves its session suspect: close it. */
const sessionSuspect = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  (error as { _tag?: unknown })._tag === "ProviderFailure" &&
  ((error as ProviderFailure).kind === "timeout" || (error as ProviderFailure).kind === "defect")

interface TurnResult {
  readonly outcome: "completed" | "interrupted"
  readonly turnRef: string | null
}

export const driveRun = (input: DriveInput): Effect.Effect<void, SkeinError> => {
  const { ask, run } = input
  let turnRef: string | null = null
  /** Once the turn is sent, stopping goes through the provider; before, the run just ends. */
  let turnSent = false
  /** How the provider took a stop, when it did not simply stop (recorded with the run's failure). */
  let stopNote: string | null = null
  /** Where the turn went, once sent: what a stop interrupts. */
  let sent: { readonly lease: SessionLease; readonly nativeRef: string } | undefined

  /** A provider writes the pending handoff's summary; any failure keeps the local one. */
  const ensureSummary = (context: RunContext): Effect.Effect<RunContext, SkeinError> => {
    const writer = context.summaryBy
    const handoff = context.handoff
    if (writer === null || handoff === null) return Effect.succeed(context)
    return input.sessions
      .use(writer, input.workspace, (lease) =>
        lease.handle.summarise({ payload: handoff.payload, budgetTokens: handoff.budgetTokens })
      )
      .pipe(
        Effect.map((text): SummaryOutcome => ({ _tag: "Written", text, provider: writer })),
        Effect.catchAll((error) =>
          Effect.logWarning(`summary by ${writer} failed, using the local summariser`, error).pipe(
            Effect.as<SummaryOutcome>({ _tag: "Failed", provider: writer, detail: error.message })
          )
        ),
        Effect.flatMap((summary) => ask("RecordSummary", { runId: run.id, handoffId: handoff.id, summary })),
        Effect.map((ready): RunContext => ({ ...context, handoff: ready, summaryBy: null }))
      )
  }

  const ensureThread = (lease: SessionLease, initial: RunContext) =>
    Effect.gen(function* () {
      let context = initial
      const bind = (ctx: RunContext, forked: boolean) => (native: { nativeRef: string; strength: NativeRefStrength }) =>
        ask("BindNativeThread", {
          runId: run.id,
          providerThreadId: ctx.providerThread.id,
          nativeRef: native.nativeRef,
          strength: native.strength,
          forked
        }).pipe(Effect.as(native.nativeRef))
      const start = (ctx: RunContext) =>
        lease.handle
          .startThread({ workspace: input.workspace, model: ctx.providerThread.settings.model })
          .pipe(Effect.flatMap(bind(ctx, false)))
      /** Re-plan with a full summary into a new provider thread, and start it. */
      const fallBack = (detail: string) =>
        Effect.gen(function* () {
          context = yield* ask("ResumeFailed", { runId: run.id, detail })
          context = yield* ensureSummary(context)
          return yield* start(context)
        })
      let nativeRef = context.providerThread.nativeRef
      if (nativeRef === null && context.fork !== null) {
        // Inherit natively: fork the source's own provider thread at the source turn.
        const { nativeRef: from, turnRef } = context.fork
        const forked = yield* Effect.either(lease.handle.forkThread(from, turnRef))
        if (Either.isRight(forked)) nativeRef = yield* bind(context, true)(forked.right)
        else if (recoverable(forked.left)) nativeRef = yield* fallBack(`native fork failed: ${forked.left.detail}`)
        else return yield* forked.left
      } else if (nativeRef === null) {
        nativeRef = yield* start(context)
      } else if (!lease.loadedRefs.has(nativeRef) || run.contextResolution !== "none") {
        // Coming back after other runs: resume explicitly even in a warm process, since
        // the provider may have dropped the thread meanwhile.
        const resumed = yield* Effect.either(lease.handle.resumeThread(nativeRef))
        if (Either.isLeft(resumed)) {
          if (resumed.left.kind !== "resume_failed") return yield* resumed.left
          nativeRef = yield* fallBack(resumed.left.detail)
        }
      }
      lease.loadedRefs.add(nativeRef)
      return { nativeRef, context }
    })

  let outcome: TurnResult["outcome"] = "completed"
  /** What the turn cost, as the provider reported it with the turn's end. */
  let usage: TurnUsage | undefined
  /** The turn's items until they are recorded; what is left goes with FinishRun, in its commit. */
  const items = ItemBatch.make((batch) => ask("RecordItems", { runId: run.id, items: batch }))
  /** Said on the run when its completed turn could not be checkpointed. */
  let checkpointNote: TurnItemContent | null = null
  /** Whether the completed turn's git checkpoint is to be taken (known once its end is first recorded). */
  let checkpointDue: boolean | undefined
  /** Ends the pending capture (see `CheckpointGate.begin`), once one is begun. */
  let releaseCapture: Effect.Effect<void> | undefined

  /** The app tool `spawn_subagent`: the child starts now; the call's output says where, or why not. */
  const spawnCall = (provider: string, prompt: string): Effect.Effect<TurnItemContent> =>
    Effect.suspend(() => {
      const named = Schema.decodeUnknownOption(ProviderName)(provider)
      const started = Option.isNone(named)
        ? Effect.fail(`"${provider}" is not a provider instance name`)
        : input.spawn(named.value, prompt).pipe(Effect.mapError((error) => error.message))
      return started.pipe(
        Effect.match({
          onFailure: (why) => JSON.stringify({ error: why }),
          onSuccess: (child) => JSON.stringify(child)
        }),
        Effect.map((output): TurnItemContent => ({
          type: "tool_call",
          name: "spawn_subagent",
          input: JSON.stringify({ provider, prompt }),
          output
        }))
      )
    })

  const onEvents = (events: ReadonlyArray<ProviderEvent>): Effect.Effect<void, SkeinError> =>
    Effect.gen(function* () {
      const reported: Array<TurnItemContent> = []
      let ended = false
      for (const event of events) {
        switch (event._tag) {
          case "TurnStarted":
            turnRef = turnRefOf(event.turnRef)
            break
          case "Item":
            reported.push(event.item)
            break
          case "SubagentRequested":
            reported.push(yield* spawnCall(event.provider, event.prompt))
            break
          case "TurnInterrupted":
            outcome = "interrupted"
            turnRef = turnRefOf(event.turnRef)
            ended = true
            break
          case "TurnCompleted":
            turnRef = turnRefOf(event.turnRef)
            // A count the run could not store (not a whole number, say) is left out, not fatal.
            usage = event.usage !== undefined && isUsage(event.usage) ? event.usage : undefined
            ended = true
            break
        }
      }
      if (!ended) return yield* items.add(reported)
      yield* items.end(reported)
      // The turn is over: nothing is left for a stop to interrupt, and its end is
      // recorded now. (If that fails, the driver records the end again after the call.)
      sent = undefined
      yield* Effect.ignore(recordEnd(Exit.succeed({ outcome, turnRef })))
      // The end was recorded on this fiber (`askInPlace`), which woke whoever waits for
      // the run: they go first, and this fiber's unwinding (the port's call, the guard,
      // the session's lease) follows their answer.
      yield* Effect.yieldNow()
    })

  const turn = (lease: SessionLease, initial: RunContext) =>
    Effect.gen(function* () {
      const { context, nativeRef } = yield* ensureThread(lease, initial)
      if (yield* Deferred.isDone(input.stop)) return { outcome: "interrupted", turnRef: null } satisfies TurnResult
      turnSent = true
      sent = { lease, nativeRef }
      // One block: the run's own handoff, then whatever it brings in from other threads.
      const blocks = [...(context.handoff ? [context.handoff] : []), ...context.extras]
      const consume = lease.handle.runTurn(
        {
          nativeRef,
          runId: run.id,
          message: run.message,
          handoff:
            blocks.length > 0 && context.delivery
              ? {
                  handoffId: blocks[0]!.id,
                  delivery: context.delivery,
                  text: blocks.map((h) => h.summaryText).join("\n\n")
                }
              : null,
          model: run.model,
          workspace: input.workspace,
          itemDelayMs: input.itemDelayMs
        },
        onEvents
      )
      // Once the turn is over there is nothing left for a stop to interrupt.
      yield* Effect.ensuring(
        consume,
        Effect.sync(() => void (sent = undefined))
      )
      return { outcome, turnRef } satisfies TurnResult
    }).pipe(Effect.tapError((error) => (sessionSuspect(error) ? lease.kill : Effect.void)))

  /**
   * A stop once the turn was sent: the provider is asked to stop its turn; one that
   * has not ended it within the grace period has its process killed (the turn then
   * fails, and the run ends as the stop says).
   */
  const stopTurn = ({ lease, nativeRef }: { readonly lease: SessionLease; readonly nativeRef: string }) =>
    lease.handle.interrupt(nativeRef).pipe(
      Effect.catchAll((error) =>
        Effect.sync(() => void (stopNote = `the provider did not take the interrupt (${error.message})`))
      ),
      Effect.zipRight(Effect.sleep(Duration.millis(input.graceMs))),
      Effect.zipRight(lease.kill)
    )

  const body = Effect.zipRight(input.gate.settled, ensureSummary(input.context)).pipe(
    Effect.flatMap((context) => input.sessions.use(run.provider, input.workspace, (lease) => turn(lease, context)))
  )

  /**
   * The body in one fiber, and a listener on the stop: before the turn is sent, a stop
   * ends the run at once; after, it starts `stopTurn` beside the turn. (Callbacks, not
   * racing fibers: a run pays for one fork.)
   */
  const bodyUnderStop: Effect.Effect<TurnResult, ProviderFailure | SkeinError> = Effect.flatMap(
    Effect.runtime<never>(),
    (runtime) =>
      OneShot.race(body, (verdict) => {
        const interrupted = (turnRef: string | null) =>
          void OneShot.succeed<TurnResult, ProviderFailure | SkeinError>(verdict, { outcome: "interrupted", turnRef })
        let stopper: Fiber.RuntimeFiber<void, ProviderFailure> | undefined
        const onStop = Effect.suspend(() => {
          if (!turnSent) return Effect.sync(() => interrupted(null))
          if (sent === undefined) return Effect.void
          // Killed after the grace period: the run ends as the stop says, whatever the turn does.
          return Effect.zipRight(
            stopTurn(sent),
            Effect.sync(() => interrupted(turnRef))
          )
        })
        stopper = Runtime.runFork(runtime)(Effect.interruptible(Effect.zipRight(Deferred.await(input.stop), onStop)))
        return Effect.suspend(() => (stopper === undefined ? Effect.void : Fiber.interrupt(stopper)))
      })
  )

  /** The one FinishRun this run ends with, from however the body ended. */
  const finishOf = (
    exit: Exit.Exit<TurnResult, ProviderFailure | SkeinError>,
    stopped: RunFailure | null,
    checkpoint: "pending" | null
  ): Option.Option<Rpc.Payload<typeof FinishRun>> => {
    const finish = (outcome: RunOutcome, failure: RunFailure | null) =>
      Option.some({
        runId: run.id,
        outcome,
        failure: failure && stopNote ? { ...failure, message: `${failure.message}; ${stopNote}` } : failure,
        turnRef,
        ...(usage === undefined ? {} : { usage }),
        items: checkpointNote === null ? items.held() : [...items.held(), checkpointNote],
        checkpoint: outcome === "completed" ? checkpoint : null
      })
    if (Exit.isSuccess(exit)) {
      if (exit.value.outcome === "completed") return finish("completed", null)
      const failure = stopped ?? { reason: "user_interrupt", message: "The run was interrupted" }
      return finish(isInterruption(failure) ? "interrupted" : "failed", failure)
    }
    // Killing the process to enforce a stop is not a provider failure.
    if (stopped !== null) return finish(isInterruption(stopped) ? "interrupted" : "failed", stopped)
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) return finish("failed", failureOf(failure.value))
    const defect = Cause.dieOption(exit.cause)
    if (Option.isSome(defect)) {
      return finish("failed", { reason: "runtime_error", message: `the run's driver died: ${String(defect.value)}` })
    }
    // Interrupted from outside (the actor is closing): nobody is left to record it.
    return Option.none()
  }

  /**
   * After a completed turn, what its FinishRun says of the checkpoint: pending when the
   * workspace is a git repository, else logical. Not knowing (git could not be asked)
   * leaves a logical checkpoint and says so on the run.
   */
  const checkpointAfter = (exit: Exit.Exit<TurnResult, ProviderFailure | SkeinError>) => {
    const checkpoint = input.checkpoint
    if (!Exit.isSuccess(exit) || exit.value.outcome !== "completed" || checkpoint === null) return Effect.succeed(null)
    if (checkpointDue !== undefined) return Effect.succeed(checkpointDue ? ("pending" as const) : null)
    return checkpoint.isRepository.pipe(
      Effect.catchAll((error) =>
        Effect.sync(() => {
          checkpointNote = { type: "error", message: `no git checkpoint: ${error.message}`, code: "checkpoint_failed" }
          return false
        })
      ),
      Effect.map((is) => {
        checkpointDue = is
        return is ? ("pending" as const) : null
      })
    )
  }

  /** Whether the run's FinishRun got through: nothing is recorded after it. */
  let finished = false
  /** Records the run's end (its one FinishRun) from how its turn ended. */
  const recordEnd = (exit: Exit.Exit<TurnResult, ProviderFailure | SkeinError>): Effect.Effect<void, SkeinError> =>
    Effect.flatMap(checkpointAfter(exit), (checkpoint) =>
      Effect.gen(function* () {
        const stopped = yield* Deferred.poll(input.stop)
        const end = finishOf(exit, Option.isSome(stopped) ? yield* stopped.value : null, checkpoint)
        if (Option.isNone(end)) return
        // Before the end is in the mailbox: a run started after it waits for the checkpoint.
        if (checkpoint === "pending") releaseCapture ??= yield* input.gate.begin(run.id)
        yield* ask("FinishRun", end.value)
        finished = true
      })
    )

  /**
   * The pending checkpoint, once the run's end is recorded: taken and recorded, or
   * recorded as not taken with git's words. If the actor has stopped meanwhile, the
   * checkpoint stays pending until the thread's actor starts again and settles it.
   */
  const takeCheckpoint = Effect.suspend(() => {
    const checkpoint = input.checkpoint
    if (!finished || checkpointDue !== true || checkpoint === null) return Effect.void
    return checkpoint.capture.pipe(
      Effect.map(
        Option.match({
          onNone: (): CheckpointTaken => ({ _tag: "Failed", detail: "the workspace is no longer a git repository" }),
          onSome: ({ commit, diff, gitRef, omitted, tree }): CheckpointTaken => ({
            _tag: "Taken",
            gitRef,
            commit,
            tree,
            diff,
            omitted
          })
        })
      ),
      Effect.catchAll((error) => Effect.succeed<CheckpointTaken>({ _tag: "Failed", detail: error.message })),
      Effect.flatMap((taken) => ask("RecordCheckpoint", { runId: run.id, taken })),
      Effect.catchAll((error) => Effect.logWarning(`the checkpoint of run ${run.id} was not recorded`, error))
    )
  })

  return bodyUnderStop.pipe(
    // However the turn ended, items still held go with FinishRun.
    Effect.exit,
    // Unless the turn's end was recorded already. If this fails, the actor hears why from
    // this fiber's exit (DriverExited), and ends the run itself.
    Effect.flatMap((exit) => (finished ? Effect.void : recordEnd(exit))),
    Effect.zipRight(takeCheckpoint),
    Effect.ensuring(Effect.suspend(() => releaseCapture ?? Effect.void))
  )
}
