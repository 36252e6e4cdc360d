/**
 * The processes of a Claude driver session, one per Claude session (native thread) in
 * use: an Effect `RcMap` keyed by session id. A process is started (or resumed) on
 * first use, held while a turn runs on it, and closed once unused for `processIdleMs`;
 * the next use starts a new one, which resumes the session natively. A process that
 * ends by itself is forgotten at once, and a failed start is not kept.
 *
 * One caller at a time per session. RcMap's `get` looks a key up before it takes the
 * map's lock, so two fibers getting the same absent key at once could each start a
 * process, and Claude Code refuses the second as "already in use". Every `get` here
 * holds the session's slot (agents/TurnSlot.ts): a turn holds it for its whole run and
 * a second turn is refused; an open (start, fork, resume) holds it until its process is
 * ready, and whoever comes meanwhile waits for it. Start and fork also use fresh random
 * session ids, which nobody else knows yet.
 */
import type { ProviderFailure } from "@skein/domain"
import { Deferred, Duration, Effect, Exit, RcMap, Scope } from "effect"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { ClaudeProcess } from "./ClaudeEvents.js"
import type { ClaudeProcessContext } from "./ClaudeProcess.js"
import { startProcess } from "./ClaudeProcess.js"

/** How long an unused process is kept for its session's next turn (`processIdleMs`). */
export const DEFAULT_PROCESS_IDLE_MS = 120_000

/** Who holds a session's slot: a turn, or an open waiting for its process to be ready. */
type Holder =
  { readonly _tag: "Turn" } | { readonly _tag: "Open"; readonly ready: Deferred.Deferred<void, ProviderFailure> }

export interface ClaudePool {
  /** The ready process of a session, if it has one (nothing is started). */
  readonly live: (sessionId: string) => ClaudeProcess | undefined
  /** Makes sure the session has a ready process, starting (or resuming) one if needed. */
  readonly open: (sessionId: string) => Effect.Effect<void, ProviderFailure>
  /**
   * Runs `use` with the session's process while holding its turn slot; fails when a turn
   * holds it already. The process stays in use until `use` closes `lease` (a turn may
   * outlive the call that started it, until its end comes).
   */
  readonly withTurn: <A, E>(
    sessionId: string,
    use: (cp: ClaudeProcess, lease: Scope.CloseableScope) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | ProviderFailure>
  /** Stops a process now; the next use of its session starts a new one. */
  readonly stop: (cp: ClaudeProcess) => Effect.Effect<void>
}

export const makeClaudePool = (
  context: Omit<ClaudeProcessContext, "onGone">,
  idleMs: number
): Effect.Effect<ClaudePool, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { failure } = context
    const sessionScope = yield* Effect.scope
    const live = new Map<string, ClaudeProcess>()
    const slots = makeTurnSlots<Holder>()

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
        if (closed) return Effect.fail(closedFailure())
        return Effect.raceFirst(
          RcMap.get(processes, sessionId).pipe(Effect.tapError(() => RcMap.invalidate(processes, sessionId))),
          Effect.zipRight(Deferred.await(shut), Effect.fail(closedFailure()))
        )
      })

    const open = (sessionId: string): Effect.Effect<void, ProviderFailure> =>
      Effect.gen(function* () {
        const holder = slots.current(sessionId)
        // A running turn holds the process already.
        if (holder?._tag === "Turn") return
        if (holder?._tag === "Open") return yield* Deferred.await(holder.ready)
        const mine: Holder = { _tag: "Open", ready: yield* Deferred.make<void, ProviderFailure>() }
        slots.claim(sessionId, mine)
        const opened = yield* Effect.exit(Effect.scoped(get(sessionId)))
        slots.release(sessionId, mine)
        yield* Deferred.done(mine.ready, Exit.asVoid(opened))
        return yield* Exit.asVoid(opened)
      })

    /** Takes the session's slot for a turn, once an open in progress is done. */
    const claimTurn = (sessionId: string, mine: Holder): Effect.Effect<void, ProviderFailure> =>
      Effect.suspend(() => {
        if (slots.claim(sessionId, mine)) return Effect.void
        const holder = slots.current(sessionId)
        if (holder?._tag === "Open")
          return Effect.zipRight(Effect.exit(Deferred.await(holder.ready)), claimTurn(sessionId, mine))
        return Effect.fail(failure("error", `a turn is already running on Claude session ${sessionId}`))
      })

    const withTurn = <A, E>(
      sessionId: string,
      use: (cp: ClaudeProcess, lease: Scope.CloseableScope) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | ProviderFailure> => {
      const mine: Holder = { _tag: "Turn" }
      return Effect.zipRight(
        claimTurn(sessionId, mine),
        Effect.gen(function* () {
          const lease = yield* Scope.make()
          const cp = yield* get(sessionId).pipe(
            Scope.extend(lease),
            Effect.onError(() => Scope.close(lease, Exit.void))
          )
          return yield* use(cp, lease)
        }).pipe(Effect.ensuring(Effect.sync(() => slots.release(sessionId, mine))))
      )
    }

    return { live: (sessionId) => live.get(sessionId), open, withTurn, stop } satisfies ClaudePool
  })
