/**
 * The runtime's side of the provider port: every call into an adapter, as the runtime
 * makes it, ends in a typed `ProviderFailure` that names the method, whatever the
 * adapter does. A provider may fail, die with a defect (a thrown exception, a bug, a
 * surprise from a real binary), hang, or lose its process; the guard turns each into
 * a failure of its own kind:
 * - a defect, even one thrown before the adapter returns an Effect → kind `defect`;
 * - no answer within the call's deadline → kind `timeout`;
 * - the process exits while the call is pending → kind `crash`.
 * A turn has two deadlines: until its first event, and between events (not while it
 * waits for an approval: a person may take their time). A turn's call runs in a fiber
 * of its own, cut short by one timer at a deadline, or by the session's exit watcher
 * when the process exits.
 *
 * Deadlines come from the runtime's configuration (`RuntimeOptions.deadlines`).
 */
import type { ProviderEvent, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, FiberId, Option, Ref, Scope } from "effect"
import { defaultDeadlines, type ProviderDeadlines } from "../RuntimeConfig.js"
import { forkNowIn } from "../resources/ForkNow.js"
import { withScope } from "../resources/LocalScope.js"

export { defaultDeadlines, type ProviderDeadlines }

const describeDefect = (defect: unknown): string => {
  const text = defect instanceof Error ? `${defect.name}: ${defect.message}` : String(defect)
  return text.length > 500 ? `${text.slice(0, 499)}…` : text
}

/** A cause from an adapter as a typed failure naming `method` (interruptions pass through). */
const toFailure =
  (provider: string, method: string) =>
  <E>(cause: Cause.Cause<E | ProviderFailure>): Effect.Effect<never, ProviderFailure> => {
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure) && failure.value instanceof ProviderFailure) {
      const f = failure.value
      return Effect.fail(
        f.detail.startsWith(`${method}:`) ? f : new ProviderFailure({ ...f, detail: `${method}: ${f.detail}` })
      )
    }
    const defect = Cause.dieOption(cause)
    const what = Option.isSome(defect) ? describeDefect(defect.value) : Cause.pretty(cause).slice(0, 500)
    return Effect.fail(
      new ProviderFailure({ provider, kind: "defect", detail: `${method} died with a defect: ${what}` })
    )
  }

const timeout = (provider: string, method: string, ms: number) =>
  new ProviderFailure({ provider, kind: "timeout", detail: `${method} did not answer within ${ms} ms` })

/** Guards one call: defects and hangs become typed failures naming `method`. */
export const guardCall = <A, E extends ProviderFailure>(
  provider: string,
  method: string,
  timeoutMs: number,
  call: () => Effect.Effect<A, E>
): Effect.Effect<A, ProviderFailure> =>
  Effect.suspend(call).pipe(
    Effect.catchAllCause(toFailure(provider, method)),
    Effect.timeoutFail({ duration: Duration.millis(timeoutMs), onTimeout: () => timeout(provider, method, timeoutMs) })
  )

/** The turn's last chunk opened an approval: it waits for a person, not for the model. */
const asksForApproval = (chunk: ReadonlyArray<ProviderEvent>): boolean => {
  let asked = false
  for (const event of chunk) {
    asked = event._tag === "Item" && event.item.type === "approval_request" && event.item.status === "open"
  }
  return asked
}

/**
 * A session handle as the runtime uses it: every method guarded, a turn's events
 * handed over under its deadlines.
 */
export type GuardedSession = ProviderSessionHandle

interface ProcessExit {
  readonly code: number | null
  readonly signal: string | null
}

/** When the turn last sent events (or was sent), whether any came yet, and whether the last chunk waits for an approval. */
interface Heard {
  readonly at: number
  readonly first: boolean
  readonly waiting: boolean
}

/** A turn's silence deadlines, as `guardedTurn` holds them. */
interface SilenceWatch {
  /** A chunk came: the deadline moves from now. */
  readonly heard: (events: ReadonlyArray<ProviderEvent>) => void
  /** Arms the timer: `onSilent` is called once a deadline passes. */
  readonly start: (onSilent: (failure: ProviderFailure) => void) => void
  /** The turn is over: the timer goes. */
  readonly stop: () => void
}

/**
 * A turn's deadlines, counted from when it is made and watched by one timer (not a fiber:
 * docs/decisions/0010-turn-deadline-timer.md): once started, it calls `onSilent` when the
 * turn has sent nothing for `firstEventMs` after it was sent, or for `idleMs` after its
 * last chunk, except while that chunk waits for an approval. A chunk only records when it
 * came; the timer fires at the deadline that gives and looks again (the deadline only
 * moves later, except with the first chunk, so before it the timer looks at least every
 * `idleMs`).
 */
const watchSilence = (provider: string, deadlines: ProviderDeadlines): SilenceWatch => {
  const silent = (beforeFirst: boolean) =>
    new ProviderFailure({
      provider,
      kind: "timeout",
      detail: beforeFirst
        ? `runTurn sent no event within ${deadlines.firstEventMs} ms`
        : `runTurn went silent for ${deadlines.idleMs} ms mid-turn`
    })
  let last: Heard = { at: Date.now(), first: true, waiting: false }
  let timer: ReturnType<typeof setTimeout> | undefined
  return {
    heard: (events) => {
      last = { at: Date.now(), first: false, waiting: asksForApproval(events) }
    },
    start: (onSilent) => {
      const look = (): void => {
        if (last.waiting) {
          timer = setTimeout(look, deadlines.idleMs)
          return
        }
        const left = last.at + (last.first ? deadlines.firstEventMs : deadlines.idleMs) - Date.now()
        if (left <= 0) return onSilent(silent(last.first))
        timer = setTimeout(look, last.first ? Math.min(left, deadlines.idleMs) : left)
      }
      look()
    },
    stop: () => clearTimeout(timer)
  }
}

const crashFailure = (provider: string, method: string, { code, signal }: ProcessExit) =>
  new ProviderFailure({
    provider,
    kind: "crash",
    detail: `${method}: the provider process exited (${signal !== null ? `signal ${signal}` : `code ${code}`}) before answering`
  })

/**
 * The process's exit, watched once per session (from the first call that waits on it,
 * until the process exits): calls and turns wait on it rather than each watching the
 * process for itself. A handle whose `exited` dies never reports a crash.
 */
interface ExitWatch {
  /** Starts the watch, once. */
  readonly watchOnce: Effect.Effect<unknown>
  readonly processExit: Deferred.Deferred<ProcessExit>
  /** Turns in flight, each told when the process exits (and failed as a crash). */
  readonly turnsInFlight: Set<(how: ProcessExit) => Effect.Effect<void>>
}

const watchExit = (handle: ProviderSessionHandle): ExitWatch => {
  const processExit = Deferred.unsafeMake<ProcessExit>(FiberId.none)
  const turnsInFlight = new Set<(how: ProcessExit) => Effect.Effect<void>>()
  const watching = Ref.unsafeMake(false)
  const watch = Effect.suspend(() => handle.exited).pipe(
    Effect.flatMap((how) =>
      Effect.zipRight(
        Deferred.succeed(processExit, how),
        Effect.forEach([...turnsInFlight], (tell) => tell(how), { discard: true })
      )
    ),
    Effect.ignore
  )
  const watchOnce = Effect.whenEffect(
    Effect.forkDaemon(watch),
    Effect.map(Ref.getAndSet(watching, true), (was) => !was)
  )
  return { watchOnce, processExit, turnsInFlight }
}

/**
 * A turn under its deadlines and the process's watch. The adapter's call starts at
 * once on a fiber of its own (the turn reaches the provider before anything queued
 * runs); a timer beside it interrupts it when a deadline passes, and the session's
 * exit watcher when the process exits; that verdict is the turn's failure. Interrupting
 * the caller interrupts the call and stops the timer.
 */
const guardedTurn = <E>(
  provider: string,
  handle: ProviderSessionHandle,
  deadlines: ProviderDeadlines,
  exits: ExitWatch,
  input: TurnInput,
  onEvents: TurnEventSink<E>
): Effect.Effect<void, ProviderFailure | E> =>
  withScope((scope) => guardedTurnIn(provider, handle, deadlines, exits, input, onEvents, scope))

/** `guardedTurn` in its scope (made once: docs/decisions/0011-generators-made-once.md). */
const guardedTurnIn = Effect.fnUntraced(function* <E>(
  provider: string,
  handle: ProviderSessionHandle,
  deadlines: ProviderDeadlines,
  exits: ExitWatch,
  input: TurnInput,
  onEvents: TurnEventSink<E>,
  scope: Scope.Scope
) {
  /** How the caller's own `onEvents` failed, if it did: that failure is the caller's, not the provider's. */
  const sinkCause = yield* Ref.make(Option.none<Cause.Cause<E>>())
  const silence = watchSilence(provider, deadlines)
  const sink: TurnEventSink<E> = (events) =>
    Effect.zipRight(
      Effect.sync(() => silence.heard(events)),
      Effect.tapErrorCause(onEvents(events), (cause) => Ref.set(sinkCause, Option.some(cause)))
    )
  const call = yield* forkNowIn(
    Effect.suspend(() => handle.runTurn(input, sink)),
    scope
  )
  /** Why the turn was cut short, when a deadline or the process's exit did it. */
  const verdict = yield* Ref.make(Option.none<ProviderFailure>())
  const cut = (failure: ProviderFailure) =>
    Effect.zipRight(
      Ref.update(verdict, (first) => Option.orElse(first, () => Option.some(failure))),
      Fiber.interruptFork(call)
    )
  yield* Scope.addFinalizer(scope, Effect.sync(silence.stop))
  silence.start((failure) => Effect.runFork(cut(failure)))
  const onExit = (how: ProcessExit) => cut(crashFailure(provider, "runTurn", how))
  yield* exits.watchOnce
  yield* Scope.addFinalizer(
    scope,
    Effect.sync(() => exits.turnsInFlight.delete(onExit))
  )
  exits.turnsInFlight.add(onExit)
  // Exited before this turn was listening: it hears it now.
  const gone = yield* Deferred.poll(exits.processExit)
  if (Option.isSome(gone)) yield* Effect.flatMap(gone.value, onExit)
  const exit = yield* Fiber.await(call)
  // Over: no deadline may pass for it now.
  silence.stop()
  // The run's end was most often recorded from the turn's end event already: whoever
  // was waiting for it (and their next command) goes before this turn unwinds.
  yield* Effect.yieldNow()
  if (Exit.isSuccess(exit)) return
  const failed = yield* Ref.get(verdict)
  if (Option.isSome(failed)) return yield* Effect.fail(failed.value)
  const own = yield* Ref.get(sinkCause)
  return yield* Option.isSome(own) ? Effect.failCause(own.value) : toFailure(provider, "runTurn")(exit.cause)
})

/**
 * The session handle with every method guarded. `exited` never fails or dies; any
 * call still pending when the process exits fails with kind `crash`.
 */
export const guardSession = (
  provider: string,
  handle: ProviderSessionHandle,
  deadlines: ProviderDeadlines
): GuardedSession => {
  const exits = watchExit(handle)
  const exited = Effect.zipRight(exits.watchOnce, Deferred.await(exits.processExit))
  const crashed = (method: string) => Effect.flatMap(exited, (how) => Effect.fail(crashFailure(provider, method, how)))
  const call = <A, E extends ProviderFailure>(method: string, ms: number, f: () => Effect.Effect<A, E>) =>
    Effect.raceFirst(guardCall(provider, method, ms, f), crashed(method))
  const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>) =>
    guardedTurn(provider, handle, deadlines, exits, input, onEvents)

  return {
    pid: handle.pid,
    startThread: (options) => call("startThread", deadlines.callMs, () => handle.startThread(options)),
    resumeThread: (nativeRef, options) =>
      call("resumeThread", deadlines.callMs, () => handle.resumeThread(nativeRef, options)),
    forkThread: (nativeRef, atTurnRef, options) =>
      call("forkThread", deadlines.callMs, () => handle.forkThread(nativeRef, atTurnRef, options)),
    rollbackThread: (nativeRef, beforeTurnRef) =>
      call("rollbackThread", deadlines.callMs, () => handle.rollbackThread(nativeRef, beforeTurnRef)),
    runTurn,
    interrupt: (nativeRef) => call("interrupt", deadlines.interruptMs, () => handle.interrupt(nativeRef)),
    ...(handle.steer === undefined
      ? {}
      : {
          steer: (nativeRef: string, message: string) =>
            call("steer", deadlines.callMs, () => handle.steer!(nativeRef, message))
        }),
    respondApproval: (nativeRef, approvalId, decision) =>
      call("respondApproval", deadlines.callMs, () => handle.respondApproval(nativeRef, approvalId, decision)),
    summarise: (request) => call("summarise", deadlines.summaryMs, () => handle.summarise(request)),
    exited
  }
}
