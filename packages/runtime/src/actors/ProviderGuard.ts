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
 * waits for an approval: a person may take their time).
 *
 * Deadlines come from the runtime's configuration (`RuntimeOptions.deadlines`).
 */
import type { ProviderEvent, ProviderSessionHandle, TurnEventSink, TurnInput } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Cause, Duration, Effect, Exit, Option } from "effect"
import * as OneShot from "./OneShot.js"
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

/** setTimeout's longest delay (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647

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
 * handed over under its deadlines. One timer per turn keeps the deadlines, so a turn's
 * cost does not grow with its number of events.
 */
export type GuardedSession = ProviderSessionHandle

/**
 * The session handle with every method guarded. `exited` never fails or dies; any
 * call still pending when the process exits fails with kind `crash`.
 */
export const guardSession = (
  provider: string,
  handle: ProviderSessionHandle,
  deadlines: ProviderDeadlines
): GuardedSession => {
  const crashFailure = (
    method: string,
    { code, signal }: { readonly code: number | null; readonly signal: string | null }
  ) =>
    new ProviderFailure({
      provider,
      kind: "crash",
      detail: `${method}: the provider process exited (${signal !== null ? `signal ${signal}` : `code ${code}`}) before answering`
    })
  /**
   * The process's exit, watched once per session: a call waits on it and a turn listens
   * to it, rather than each watching the process for itself.
   */
  let exitCell: OneShot.OneShot<{ readonly code: number | null; readonly signal: string | null }, never> | undefined
  const processExit = () => {
    if (exitCell === undefined) {
      const cell = (exitCell = OneShot.make())
      // Ends with the process (a handle whose `exited` dies never reports a crash).
      Effect.runFork(
        Effect.flatMap(Effect.exit(Effect.suspend(() => handle.exited)), (how) =>
          Effect.sync(() => void (Exit.isSuccess(how) && OneShot.succeed(cell, how.value)))
        )
      )
    }
    return exitCell
  }
  const exited = Effect.suspend(() => OneShot.wait(processExit()))
  const crashed = (method: string) => Effect.flatMap(exited, (how) => Effect.fail(crashFailure(method, how)))
  const call = <A, E extends ProviderFailure>(method: string, ms: number, f: () => Effect.Effect<A, E>) =>
    Effect.raceFirst(guardCall(provider, method, ms, f), crashed(method))

  /**
   * A turn under its deadlines and the process's watch: the adapter's turn runs in one
   * fiber, and whichever comes first (its end, a deadline, the process's exit, the
   * caller's interruption) decides; timers and callbacks, not racing fibers, watch the
   * rest, so a turn pays for one fork.
   */
  const runTurn = <E>(input: TurnInput, onEvents: TurnEventSink<E>): Effect.Effect<void, ProviderFailure | E> =>
    Effect.suspend(() => {
      let first = true
      let waiting = false
      let deadline = Date.now() + deadlines.firstEventMs
      /** How the caller's own `onEvents` failed, if it did: that failure is the caller's, not the provider's. */
      let sinkCause: Cause.Cause<E> | undefined
      /** Wakes the watchdog sooner than it was set for, when the deadline has moved earlier. */
      let sooner: ((at: number) => void) | undefined
      const sink: TurnEventSink<E> = (events) => {
        first = false
        waiting = asksForApproval(events)
        deadline = Date.now() + deadlines.idleMs
        // Only the first event can bring it forward (when idleMs < firstEventMs).
        if (!waiting) sooner?.(deadline)
        return Effect.tapErrorCause(onEvents(events), (cause) => Effect.sync(() => void (sinkCause = cause)))
      }
      const consume: Effect.Effect<void, ProviderFailure | E> = Effect.suspend(() => handle.runTurn(input, sink)).pipe(
        Effect.catchAllCause((cause): Effect.Effect<never, ProviderFailure | E> =>
          sinkCause !== undefined ? Effect.failCause(sinkCause) : toFailure(provider, "runTurn")(cause)
        )
      )
      return OneShot.race(consume, (verdict) => {
        // Wakes at the deadline; if events came meanwhile, sleeps again until the new one.
        let timer: ReturnType<typeof setTimeout> | undefined
        /** When the timer fires (epoch ms). */
        let timerAt = 0
        const arm = (ms: number) => {
          const wait = Math.min(Math.max(ms, 1), MAX_TIMER_MS)
          timerAt = Date.now() + wait
          timer = setTimeout(watchdog, wait)
        }
        sooner = (at) => {
          if (timer === undefined || at >= timerAt) return
          clearTimeout(timer)
          arm(at - Date.now())
        }
        const watchdog = () => {
          timer = undefined
          if (verdict.exit !== undefined) return
          if (waiting) return arm(deadlines.idleMs)
          const remaining = deadline - Date.now()
          if (remaining > 0) return arm(remaining)
          OneShot.fail(
            verdict,
            new ProviderFailure({
              provider,
              kind: "timeout",
              detail: first
                ? `runTurn sent no event within ${deadlines.firstEventMs} ms`
                : `runTurn went silent for ${deadlines.idleMs} ms mid-turn`
            })
          )
        }
        arm(deadlines.firstEventMs)
        const unlisten = OneShot.listen(processExit(), (how) => {
          if (Exit.isSuccess(how)) OneShot.fail(verdict, crashFailure("runTurn", how.value))
        })
        return Effect.sync(() => {
          if (timer !== undefined) clearTimeout(timer)
          unlisten()
        })
      })
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
