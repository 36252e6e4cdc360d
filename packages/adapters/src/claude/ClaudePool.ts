/**
 * The processes of a Claude driver session, one per Claude session (native thread) in
 * use: an Effect `RcMap` keyed by session id. A process is started (or resumed) on
 * first use, held while a turn runs on it, and closed once unused for `processIdleMs`;
 * the next use starts a new one, which resumes the session natively. A process that
 * ends by itself is forgotten at once, and a failed start is not kept.
 *
 * One `get` at a time per session. RcMap's `get` looks a key up before it takes the
 * map's lock, so two fibers getting the same absent key at once could each start a
 * process, and Claude Code refuses the second as "already in use". Every `get` here
 * holds the session's slot (agents/TurnSlot.ts) until it has its process, and whoever
 * comes meanwhile (a turn, a resume) waits for it, then gets the process started. Start
 * and fork also use fresh random session ids, which nobody else knows yet. One turn at a
 * time on a process is the process's own check (`cp.turn`), released at the turn's end.
 */
import type { ProviderFailure } from "@skein/domain"
import { Deferred, Duration, Effect, Exit, Fiber, FiberId, RcMap, Runtime, Scheduler, Scope } from "effect"
import type { TurnSlots } from "../agents/TurnSlot.js"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { ClaudeProcess } from "./ClaudeEvents.js"
import type { ClaudeProcessContext } from "./ClaudeProcess.js"
import { startProcess } from "./ClaudeProcess.js"

/** How long an unused process is kept for its session's next turn (`processIdleMs`). */
export const DEFAULT_PROCESS_IDLE_MS = 120_000

/** A get of a session's process in progress: done when it is, however it ended. */
type Opening = Deferred.Deferred<void>

export interface ClaudePool {
  /** The ready process of a session, if it has one (nothing is started). */
  readonly live: (sessionId: string) => ClaudeProcess | undefined
  /** Makes sure the session has a ready process, starting (or resuming) one if needed. */
  readonly open: (sessionId: string) => Effect.Effect<void, ProviderFailure>
  /**
   * Runs `use` with the session's process, started if needed. The process stays in use
   * until `use` closes `lease` (a turn may outlive the call that started it).
   */
  readonly withTurn: <A, E>(
    sessionId: string,
    use: (cp: ClaudeProcess, lease: Scope.CloseableScope) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | ProviderFailure>
  /** Stops a process now; the next use of its session starts a new one. */
  readonly stop: (cp: ClaudeProcess) => Effect.Effect<void>
}

/**
 * Runs `body` (a get of a session's process) holding the session's slot; a caller that
 * finds it held waits until its holder is done, then tries again (finding the process
 * started, or starting it if that start failed).
 */
const exclusive = <A>(
  slots: TurnSlots<Opening>,
  sessionId: string,
  body: Effect.Effect<A, ProviderFailure>
): Effect.Effect<A, ProviderFailure> =>
  Effect.suspend((): Effect.Effect<A, ProviderFailure> => {
    const other = slots.current(sessionId)
    if (other !== undefined) return Effect.zipRight(Deferred.await(other), exclusive<A>(slots, sessionId, body))
    const mine = Deferred.unsafeMake<void>(FiberId.none)
    slots.claim(sessionId, mine)
    return Effect.ensuring(
      body,
      Effect.sync(() => {
        slots.release(sessionId, mine)
        Deferred.unsafeDone(mine, Exit.void)
      })
    )
  })

/**
 * `effect` run to its end before this returns, when it can end without waiting; else
 * awaited. `RcMap.get` of a ready entry still waits on the entry's `Deferred`, and a
 * fiber that waits, even on something done, goes on only after whatever its starter's
 * stack does next: a turn's driver starts on its actor's stack, so its turn would reach
 * Claude Code after the rest of the run's start. Here it runs on a fiber of its own under
 * a synchronous scheduler, flushed at once; what must wait after all goes on under the
 * default scheduler and is joined (an interruption of the caller interrupts it too).
 */
const atOnce = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const scheduler = new Scheduler.SyncScheduler()
    const fiber = Runtime.runFork(runtime)(effect, { scheduler })
    scheduler.flush()
    const exit = fiber.unsafePoll()
    return exit !== null ? exit : Effect.onInterrupt(Fiber.join(fiber), () => Fiber.interrupt(fiber))
  })

export const makeClaudePool = (
  context: Omit<ClaudeProcessContext, "onGone">,
  idleMs: number
): Effect.Effect<ClaudePool, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { failure } = context
    const sessionScope = yield* Effect.scope
    const live = new Map<string, ClaudeProcess>()
    const slots = makeTurnSlots<Opening>()

    const forget = (cp: ClaudeProcess): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (live.get(cp.sessionId) !== cp) return Effect.void
        live.delete(cp.sessionId)
        return RcMap.invalidate(processes, cp.sessionId)
      })
    const stop = (cp: ClaudeProcess): Effect.Effect<void> =>
      Effect.zipRight(forget(cp), Scope.close(cp.scope, Exit.void))

    const processes: RcMap.RcMap<string, ClaudeProcess, ProviderFailure> = yield* RcMap.make({
      lookup: (sessionId: string) =>
        Effect.tap(
          startProcess(
            // Its reader runs in the process's scope, which `stop` closes: it stops it from the session's.
            { ...context, onGone: (cp) => Effect.asVoid(Effect.forkIn(stop(cp), sessionScope)) },
            sessionId
          ),
          (cp) =>
            Effect.zipRight(
              Effect.sync(() => live.set(sessionId, cp)),
              Scope.addFinalizer(
                cp.scope,
                Effect.sync(() => {
                  if (live.get(sessionId) === cp) live.delete(sessionId)
                })
              )
            )
        ),
      idleTimeToLive: Duration.millis(idleMs)
    })

    // Closing the session closes the map, which would leave a `get` waiting on a start it
    // interrupted: the session's end fails such a get first (this finalizer runs before the map's).
    const shut = yield* Deferred.make<void>()
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        Deferred.unsafeDone(shut, Exit.void)
      })
    )
    const closedFailure = () => failure("error", "the Claude session was closed")

    /** The session's process, in use until the caller's scope closes. Call it holding the session's slot. */
    const get = (sessionId: string): Effect.Effect<ClaudeProcess, ProviderFailure, Scope.Scope> =>
      Effect.suspend(() => {
        if (closed) return Effect.failSync(closedFailure)
        const held = RcMap.get(processes, sessionId).pipe(Effect.tapError(() => RcMap.invalidate(processes, sessionId)))
        // A ready process: taken at once (see `atOnce`). Only a start, which may wait, races the close.
        if (live.has(sessionId)) return Effect.flatMap(Effect.scope, (scope) => atOnce(Scope.extend(held, scope)))
        return Effect.raceFirst(
          held,
          // Made only if the session closes: an error's construction captures a stack.
          Effect.zipRight(Deferred.await(shut), Effect.failSync(closedFailure))
        )
      })

    const open = (sessionId: string): Effect.Effect<void, ProviderFailure> =>
      exclusive(slots, sessionId, Effect.asVoid(Effect.scoped(get(sessionId))))

    const withTurn = <A, E>(
      sessionId: string,
      use: (cp: ClaudeProcess, lease: Scope.CloseableScope) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | ProviderFailure> =>
      Effect.gen(function* () {
        const lease = yield* Scope.make()
        const cp = yield* exclusive(slots, sessionId, Scope.extend(get(sessionId), lease)).pipe(
          Effect.onError(() => Scope.close(lease, Exit.void))
        )
        return yield* use(cp, lease)
      })

    return { live: (sessionId) => live.get(sessionId), open, withTurn, stop } satisfies ClaudePool
  })
