/**
 * The processes of a Claude driver session, one per Claude session (native thread) in
 * use, counted by their holders. A process is started (or resumed) on first use, held
 * while a turn runs on it, and closed once unused for `processIdleMs`; the next use
 * starts a new one, which resumes the session natively. A process that ends by itself is
 * forgotten at once, and a failed start is not kept.
 *
 * Taking a ready process is one synchronous step (look up, count the holder), so the
 * turn's message reaches Claude Code without a hop through the scheduler. A start holds
 * the session's slot (agents/TurnSlot.ts) until its process is ready; whoever comes
 * meanwhile (a turn, a resume) waits for it, then takes the process it started, so one
 * session never gets two processes (Claude Code refuses the second as "already in use").
 * Start and fork also use fresh random session ids, which nobody else knows yet. One
 * turn at a time on a process is the process's own check (`cp.turn`), released at the
 * turn's end. Why not Effect's `RcMap`: docs/decisions/0002-claude-process-pool.md.
 */
import type { ProviderFailure } from "@skein/domain"
import { type Clock, Deferred, Duration, Effect, ExecutionStrategy, Exit, Fiber, FiberId, Scope } from "effect"
import type { TurnSlots } from "../agents/TurnSlot.js"
import { makeTurnSlots } from "../agents/TurnSlot.js"
import type { ClaudeProcess } from "./ClaudeEvents.js"
import type { ClaudeProcessContext } from "./ClaudeProcess.js"
import { startProcess } from "./ClaudeProcess.js"

/** How long an unused process is kept for its session's next turn (`processIdleMs`). */
export const DEFAULT_PROCESS_IDLE_MS = 120_000

/** A start of a session's process in progress: done when it is, however it ended. */
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

/** A ready process and who holds it. */
interface Entry {
  readonly cp: ClaudeProcess
  holders: number
  /** When its last holder let go (ms since epoch). */
  idleSince: number
}

/**
 * Runs `body` (a start of a session's process) holding the session's slot; a caller that
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

/** The pool's processes and idle sweeper, with its steps as methods. */
class Pool implements ClaudePool {
  private readonly entries = new Map<string, Entry>()
  private readonly slots = makeTurnSlots<Opening>()
  /** The fiber closing idle processes when they are due; alive only while some are idle. */
  private sweeper: Fiber.RuntimeFiber<void> | undefined = undefined
  private closed = false

  constructor(
    private readonly context: Omit<ClaudeProcessContext, "onGone">,
    private readonly idleMs: number,
    private readonly clock: Clock.Clock,
    /** The session's scope: the sweeper and the stops a process asks for run in it. */
    private readonly sessionScope: Scope.Scope,
    /** Every process runs in a scope of its own under this one, closed with the session, all at once. */
    private readonly processesScope: Scope.Scope,
    /** Done once the session closes: a start still waiting fails then. */
    private readonly shut: Deferred.Deferred<void>
  ) {}

  /** No process is started any more; waiting starts fail. */
  close(): void {
    this.closed = true
    Deferred.unsafeDone(this.shut, Exit.void)
  }

  private closedFailure(): ProviderFailure {
    return this.context.failure("error", "the Claude session was closed")
  }

  private forget(cp: ClaudeProcess): void {
    if (this.entries.get(cp.sessionId)?.cp === cp) this.entries.delete(cp.sessionId)
  }

  readonly live = (sessionId: string): ClaudeProcess | undefined => this.entries.get(sessionId)?.cp

  readonly stop = (cp: ClaudeProcess): Effect.Effect<void> =>
    Effect.suspend(() => {
      this.forget(cp)
      return Scope.close(cp.scope, Exit.void)
    })

  /** Closes the idle processes that are due, sleeping until the next is; ends when none is idle. */
  private sweep(): Effect.Effect<void> {
    return Effect.suspend(() => {
      const now = this.clock.unsafeCurrentTimeMillis()
      const due: Array<ClaudeProcess> = []
      let next = Number.POSITIVE_INFINITY
      for (const [sessionId, entry] of this.entries) {
        if (entry.holders > 0) continue
        const at = entry.idleSince + this.idleMs
        if (at > now) next = Math.min(next, at)
        else {
          // Forgotten now, before any closes: nobody can take it while the others close.
          this.entries.delete(sessionId)
          due.push(entry.cp)
        }
      }
      if (due.length > 0) return Effect.zipRight(Effect.forEach(due, this.stop, { discard: true }), this.sweep())
      if (next === Number.POSITIVE_INFINITY) {
        this.sweeper = undefined
        return Effect.void
      }
      return Effect.zipRight(Effect.sleep(Duration.millis(next - now)), this.sweep())
    })
  }

  private release(entry: Entry): Effect.Effect<void> {
    return Effect.suspend(() => {
      entry.holders--
      if (entry.holders > 0 || this.entries.get(entry.cp.sessionId) !== entry || this.closed) return Effect.void
      entry.idleSince = this.clock.unsafeCurrentTimeMillis()
      if (this.sweeper !== undefined) return Effect.void
      // Interruptible: a release may run in a finalizer, whose forks would inherit its
      // uninterruptibility, and closing the session interrupts this fiber.
      return Effect.interruptible(this.sweep()).pipe(
        Effect.forkIn(this.sessionScope),
        Effect.map((fiber) => {
          // It may have ended already (nothing was left idle).
          if (fiber.unsafePoll() === null) this.sweeper = fiber
        })
      )
    })
  }

  /** The ready process of `sessionId` with one more holder, if it has one: one synchronous step. */
  private take(sessionId: string): Entry | undefined {
    const entry = this.entries.get(sessionId)
    if (entry !== undefined) entry.holders++
    return entry
  }

  /** Starts the process of `sessionId`, held once. Call it holding the session's slot. */
  private start(sessionId: string): Effect.Effect<Entry, ProviderFailure> {
    return Effect.suspend(() => {
      const ready = this.take(sessionId)
      if (ready !== undefined) return Effect.succeed(ready)
      if (this.closed) return Effect.failSync(() => this.closedFailure())
      const started = startProcess(
        // Its reader runs in the process's scope, which `stop` closes: it stops it from the session's.
        { ...this.context, onGone: (cp) => Effect.asVoid(Effect.forkIn(this.stop(cp), this.sessionScope)) },
        sessionId
      ).pipe(
        Scope.extend(this.processesScope),
        Effect.tap((cp) =>
          Scope.addFinalizer(
            cp.scope,
            Effect.sync(() => this.forget(cp))
          )
        ),
        Effect.map((cp): Entry => {
          const entry: Entry = { cp, holders: 1, idleSince: 0 }
          this.entries.set(sessionId, entry)
          return entry
        })
      )
      return Effect.raceFirst(
        started,
        // Made only if the session closes: an error's construction captures a stack.
        Effect.zipRight(
          Deferred.await(this.shut),
          Effect.failSync(() => this.closedFailure())
        )
      )
    })
  }

  /** The process of `sessionId` with one more holder, started if needed. */
  private hold(sessionId: string): Effect.Effect<Entry, ProviderFailure> {
    return Effect.suspend(() => {
      // While a start runs, the process it starts is the one to take.
      const ready = this.slots.current(sessionId) === undefined ? this.take(sessionId) : undefined
      return ready !== undefined ? Effect.succeed(ready) : exclusive(this.slots, sessionId, this.start(sessionId))
    })
  }

  readonly open = (sessionId: string): Effect.Effect<void, ProviderFailure> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(this.hold(sessionId)), (entry) => this.release(entry))
    )

  readonly withTurn = <A, E>(
    sessionId: string,
    use: (cp: ClaudeProcess, lease: Scope.CloseableScope) => Effect.Effect<A, E>
  ): Effect.Effect<A, E | ProviderFailure> => {
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(this.hold(sessionId)), (entry) =>
        Effect.flatMap(Scope.make(), (lease) =>
          Effect.zipRight(Scope.addFinalizer(lease, this.release(entry)), restore(use(entry.cp, lease)))
        )
      )
    )
  }
}

export const makeClaudePool = (
  context: Omit<ClaudeProcessContext, "onGone">,
  idleMs: number
): Effect.Effect<ClaudePool, never, Scope.Scope> =>
  Effect.gen(function* () {
    const sessionScope = yield* Effect.scope
    // A start still waiting fails first when the session closes: this finalizer, added
    // after the processes' scope, runs before it closes them.
    const processesScope = yield* Scope.fork(sessionScope, ExecutionStrategy.parallel)
    const pool = new Pool(
      context,
      idleMs,
      yield* Effect.clock,
      sessionScope,
      processesScope,
      yield* Deferred.make<void>()
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => pool.close()))
    return pool
  })
