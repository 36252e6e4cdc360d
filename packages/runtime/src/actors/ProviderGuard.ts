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
 * waits for an approval: a person may take their time). A turn runs in a fiber of its
 * own, raced against its deadlines and the process's exit.
 *
 * Deadlines come from the runtime's configuration (`RuntimeOptions.deadlines`).
 */
import type { ProviderEvent, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Cause, Deferred, Duration, Effect, FiberId, Option, Queue, Ref } from "effect"
import { defaultDeadlines, type ProviderDeadlines } from "../RuntimeConfig.js"

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

/**
 * A turn's deadlines: fails once the turn has sent nothing for `firstEventMs` after it
 * was sent, or for `idleMs` between two chunks of events, except while its last chunk
 * waits for an approval. `heard` says, for each chunk, whether it waits for one.
 */
const silence = (
  provider: string,
  deadlines: ProviderDeadlines,
  heard: Queue.Dequeue<boolean>
): Effect.Effect<never, ProviderFailure> => {
  const silent = (first: boolean) =>
    new ProviderFailure({
      provider,
      kind: "timeout",
      detail: first
        ? `runTurn sent no event within ${deadlines.firstEventMs} ms`
        : `runTurn went silent for ${deadlines.idleMs} ms mid-turn`
    })
  const next = (first: boolean, waiting: boolean): Effect.Effect<never, ProviderFailure> =>
    Effect.flatMap(
      waiting
        ? Queue.take(heard)
        : Effect.timeoutFail(Queue.take(heard), {
            duration: Duration.millis(first ? deadlines.firstEventMs : deadlines.idleMs),
            onTimeout: () => silent(first)
          }),
      (asks) => next(false, asks)
    )
  return next(true, false)
}

/**
 * The session handle with every method guarded. `exited` never fails or dies; any
 * call still pending when the process exits fails with kind `crash`.
 */
export const guardSession = (
  provider: string,
  handle: ProviderSessionHandle,
  deadlines: ProviderDeadlines
): GuardedSession => {
  const crashFailure = (method: string, { code, signal }: ProcessExit) =>
    new ProviderFailure({
      provider,
      kind: "crash",
      detail: `${method}: the provider process exited (${signal !== null ? `signal ${signal}` : `code ${code}`}) before answering`
    })
  /**
   * The process's exit, watched once per session (from the first call that waits on
   * it, until the process exits): calls and turns wait on it rather than each watching
   * the process for itself. A handle whose `exited` dies never reports a crash.
   */
  const processExit = Deferred.unsafeMake<ProcessExit>(FiberId.none)
  const watching = Ref.unsafeMake(false)
  const watch = Effect.suspend(() => handle.exited).pipe(
    Effect.flatMap((how) => Deferred.succeed(processExit, how)),
    Effect.ignore
  )
  const exited = Effect.zipRight(
    Effect.whenEffect(
      Effect.forkDaemon(watch),
      Effect.map(Ref.getAndSet(watching, true), (was) => !was)
    ),
    Deferred.await(processExit)
  )
  const crashed = (method: string) => Effect.flatMap(exited, (how) => Effect.fail(crashFailure(method, how)))
  const call = <A, E extends ProviderFailure>(method: string, ms: number, f: () => Effect.Effect<A, E>) =>
    Effect.raceFirst(guardCall(provider, method, ms, f), crashed(method))

  /**
   * A turn under its deadlines and the process's watch: whichever comes first (its
   * end, a deadline, the process's exit, the caller's interruption) decides, and the
   * rest are interrupted.
   */
  const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>): Effect.Effect<void, ProviderFailure | E> =>
    Effect.gen(function* () {
      const heard = yield* Queue.sliding<boolean>(1)
      /** How the caller's own `onEvents` failed, if it did: that failure is the caller's, not the provider's. */
      const sinkCause = yield* Ref.make(Option.none<Cause.Cause<E>>())
      const sink: TurnEventSink<E> = (events) =>
        Effect.zipRight(
          Queue.offer(heard, asksForApproval(events)),
          Effect.tapErrorCause(onEvents(events), (cause) => Ref.set(sinkCause, Option.some(cause)))
        )
      const consume: Effect.Effect<void, ProviderFailure | E> = Effect.suspend(() => handle.runTurn(input, sink)).pipe(
        Effect.catchAllCause((cause) =>
          Effect.flatMap(
            Ref.get(sinkCause),
            Option.match({
              onNone: () => toFailure(provider, "runTurn")(cause),
              onSome: (own): Effect.Effect<never, ProviderFailure | E> => Effect.failCause(own)
            })
          )
        )
      )
      return yield* Effect.raceFirst(consume, Effect.raceFirst(silence(provider, deadlines, heard), crashed("runTurn")))
    })

  return {
    pid: handle.pid,
    startThread: (options) => call("startThread", deadlines.callMs, () => handle.startThread(options)),
    resumeThread: (nativeRef) => call("resumeThread", deadlines.callMs, () => handle.resumeThread(nativeRef)),
    forkThread: (nativeRef, atTurnRef) =>
      call("forkThread", deadlines.callMs, () => handle.forkThread(nativeRef, atTurnRef)),
    rollbackThread: (nativeRef, beforeTurnRef) =>
      call("rollbackThread", deadlines.callMs, () => handle.rollbackThread(nativeRef, beforeTurnRef)),
    runTurn,
    interrupt: (nativeRef) => call("interrupt", deadlines.interruptMs, () => handle.interrupt(nativeRef)),
    respondApproval: (nativeRef, approvalId, decision) =>
      call("respondApproval", deadlines.callMs, () => handle.respondApproval(nativeRef, approvalId, decision)),
    summarise: (request) => call("summarise", deadlines.summaryMs, () => handle.summarise(request)),
    exited
  }
}
