/**
 * A reference-counted registry of scoped resources by key, whose get-or-create is
 * atomic: however many fibers ask for one key at once, its `lookup` runs once and
 * they all share the one value.
 *
 * Why not Effect's `RcMap`: in effect 3.22 its `get` looks the key up, and only
 * then takes the map's semaphore to create the entry without looking again. A fiber
 * that yields in between (the scheduler yields every 2,048 operations, which a busy
 * server reaches) lets a second fiber create a second entry for the same key. For
 * thread actors that meant two live actors for one thread, each starting "run 1".
 * Here the check and the insertion are one synchronous step.
 *
 * Lifecycle: an entry is created on first `get`, kept while any scope that got it is
 * open, and closed `idleTimeToLive` after its last holder let go (unless someone got
 * it again meanwhile). A failed or interrupted lookup leaves no entry behind, so the
 * next `get` tries again. `invalidate` removes the entry at once; its scope closes
 * when its last holder lets go. Closing the registry's scope closes every entry, all
 * at once.
 */
import { Clock, type Context, Deferred, Duration, Effect, Exit, Fiber, FiberId, Scope } from "effect"
import { onClose } from "./OnClose.js"

interface Entry<A, E> {
  /** The lookup's outcome once it has one (what `peek` reads without waiting). */
  exit: Exit.Exit<A, E> | undefined
  /** What callers wait on until then, made by the first that must wait. */
  waiting: Deferred.Deferred<A, E> | undefined
  readonly scope: Scope.CloseableScope
  holders: number
  /** When it was last let go (ms since epoch). */
  idleSince: number
  /** Removed from the map: close once nobody holds it. */
  removed: boolean
}

export interface RcRegistry<K, A, E> {
  /** The value for `key`, created if needed; held until the caller's scope closes. */
  readonly get: (key: K) => Effect.Effect<A, E, Scope.Scope>
  /**
   * `f` with the value for `key`, created if needed; held while `f` runs. What
   * `Effect.scoped(Effect.flatMap(get(key), f))` does, without making and closing a
   * scope for it (several times the price of the rest, on every run's path).
   */
  readonly use: <B, E2, R2>(key: K, f: (value: A) => Effect.Effect<B, E2, R2>) => Effect.Effect<B, E | E2, R2>
  /** Drop the entry now; its scope closes once its holders let go. */
  readonly invalidate: (key: K) => Effect.Effect<void>
  /** Keys with a live (or starting) entry. */
  readonly keys: Effect.Effect<ReadonlyArray<K>>
  /** Whether the value of `key` exists and is ready, without creating it. */
  readonly peek: (key: K) => A | undefined
}

/** What `make` is told. */
export interface Options<K, A, E, R> {
  /**
   * Makes the value of `key` in its entry's scope. `evict` drops this entry (not a later
   * one of the same key), for a value that learns it is no longer good: the next `get`
   * makes a fresh one. Its scope closes once its holders let go. `hold` holds this entry
   * as a `get` would, until the effect it answers (its release, to run once) runs: for a
   * value that keeps itself alive while it works, without a scope to close.
   */
  readonly lookup: (
    key: K,
    evict: Effect.Effect<void>,
    hold: Effect.Effect<Effect.Effect<void>>
  ) => Effect.Effect<A, E, R | Scope.Scope>
  readonly idleTimeToLive: Duration.DurationInput
}

/** The registry's entries and idle list, with its steps as methods. */
class Registry<K, A, E, R> implements RcRegistry<K, A, E> {
  private readonly entries = new Map<K, Entry<A, E>>()
  /**
   * Entries nobody holds, by when they were let go (insertion order: the time to live is
   * the same for all, so the first is always the first due). One sweeper fiber, alive
   * only while there are some, closes them when they are due.
   */
  private readonly idle = new Map<Entry<A, E>, K>()
  private sweeper: Fiber.RuntimeFiber<void> | undefined = undefined
  private closed = false

  constructor(
    private readonly options: Options<K, A, E, R>,
    private readonly idleMs: number,
    private readonly context: Context.Context<R>,
    private readonly registryScope: Scope.Scope
  ) {}

  private closeEntry(entry: Entry<A, E>): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.idle.delete(entry)
      return Scope.close(entry.scope, Exit.void)
    })
  }

  private remove(key: K, entry: Entry<A, E>): void {
    if (this.entries.get(key) === entry) this.entries.delete(key)
    entry.removed = true
  }

  /** Closes every entry, all at once, and stops the sweeper. */
  close(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.closed = true
      const all = [...this.entries.values()]
      this.entries.clear()
      this.idle.clear()
      for (const entry of all) entry.removed = true
      const running = this.sweeper
      return Effect.forEach(all, (entry) => this.closeEntry(entry), { concurrency: "unbounded", discard: true }).pipe(
        Effect.zipRight(running ? Fiber.interrupt(running) : Effect.void)
      )
    })
  }

  /** Closes the idle entries that are due, sleeping until the first is; ends when none is left. */
  private sweep(): Effect.Effect<void> {
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const due: Array<Entry<A, E>> = []
      for (const [entry, key] of this.idle) {
        if (entry.holders > 0 || entry.removed) {
          this.idle.delete(entry)
          continue
        }
        const remaining = entry.idleSince + this.idleMs - now
        if (remaining > 0) break
        this.idle.delete(entry)
        this.remove(key, entry)
        due.push(entry)
      }
      if (due.length > 0) {
        return Effect.forEach(due, (entry) => Scope.close(entry.scope, Exit.void), { discard: true }).pipe(
          Effect.zipRight(Effect.suspend(() => this.sweep()))
        )
      }
      const first = this.idle.keys().next()
      if (first.done) {
        this.sweeper = undefined
        return Effect.void
      }
      return Effect.zipRight(
        Effect.sleep(Duration.millis(first.value.idleSince + this.idleMs - now)),
        Effect.suspend(() => this.sweep())
      )
    })
  }

  /** After `idleMs` without holders, the entry closes (checked again when it is due). */
  private scheduleIdleClose(key: K, entry: Entry<A, E>): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.idle.delete(entry)
      this.idle.set(entry, key)
      if (this.sweeper !== undefined) return Effect.void
      // Interruptible: release runs as a finalizer, whose forks would inherit its
      // uninterruptibility, and closing the registry interrupts this fiber.
      return Effect.interruptible(this.sweep()).pipe(
        Effect.forkIn(this.registryScope),
        Effect.tap((fiber) =>
          Effect.sync(() => {
            // It may have ended already (nothing was due and nothing was left).
            if (fiber.unsafePoll() === null) this.sweeper = fiber
          })
        )
      )
    })
  }

  private release(key: K, entry: Entry<A, E>): Effect.Effect<void> {
    return Effect.suspend(() => {
      entry.holders--
      if (entry.holders > 0) return Effect.void
      if (entry.removed || this.closed || this.idleMs <= 0) {
        this.remove(key, entry)
        return this.closeEntry(entry)
      }
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        entry.idleSince = now
        return this.scheduleIdleClose(key, entry)
      })
    })
  }

  /**
   * Drops the entry if it is still in the map. Its scope closes in a fiber of the
   * registry's, not the caller's: the value may evict itself from a fiber its scope's
   * closing would interrupt and wait for.
   */
  private evict(key: K, entry: Entry<A, E>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (entry.removed) return Effect.void
      this.remove(key, entry)
      return entry.holders > 0 ? Effect.void : Effect.asVoid(Effect.forkIn(this.closeEntry(entry), this.registryScope))
    })
  }

  /** One more holder: the entry is not idle, whatever its time. To be matched by one `release`. */
  private take(entry: Entry<A, E>): void {
    entry.holders++
    this.idle.delete(entry)
  }

  /** Holds the entry until the answered release runs (see `lookup`'s `hold`). */
  private holdEntry(key: K, entry: Entry<A, E>): Effect.Effect<Effect.Effect<void>> {
    return Effect.sync(() => {
      this.take(entry)
      return this.release(key, entry)
    })
  }

  private create(key: K): Entry<A, E> {
    const entry: Entry<A, E> = {
      exit: undefined,
      waiting: undefined,
      scope: Effect.runSync(Scope.make()),
      holders: 0,
      idleSince: 0,
      removed: false
    }
    this.entries.set(key, entry)
    return entry
  }

  /**
   * Holds the entry of `key`, creating it (and starting its lookup) if there is none.
   * The check and the insertion are one synchronous step: this is the atomicity. To be
   * run uninterruptibly, and matched by one `release`.
   */
  private hold(key: K): Effect.Effect<Entry<A, E>> {
    return Effect.suspend(() => {
      let entry = this.entries.get(key)
      const creating = entry === undefined
      if (entry === undefined) entry = this.create(key)
      this.take(entry)
      const held = entry
      if (!creating) return Effect.succeed(held)
      // In a fiber of its own, interruptible (closing the entry stops it), so that
      // what it forks does not inherit this region's uninterruptibility, whatever
      // the caller's.
      const lookup = this.options.lookup(key, this.evict(key, held), this.holdEntry(key, held))
      return Effect.interruptible(lookup.pipe(Scope.extend(held.scope), Effect.provide(this.context))).pipe(
        // Also when interrupted (the entry closed while starting): nobody waits for ever.
        Effect.onExit((exit) => {
          // A failed lookup must not stay cached: the next get tries again.
          if (Exit.isFailure(exit)) this.remove(key, held)
          return Effect.sync(() => {
            held.exit = exit
            if (held.waiting !== undefined) Deferred.unsafeDone(held.waiting, exit)
            held.waiting = undefined
          })
        }),
        Effect.forkIn(held.scope),
        Effect.as(held)
      )
    })
  }

  /** The entry's value: its lookup's outcome when it has one (no wait), else when it comes. */
  private valueOf(entry: Entry<A, E>): Effect.Effect<A, E> {
    return Effect.suspend(
      () => entry.exit ?? Deferred.await((entry.waiting ??= Deferred.unsafeMake<A, E>(FiberId.none)))
    )
  }

  readonly get = (key: K): Effect.Effect<A, E, Scope.Scope> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (this.closed) return Effect.interrupt
        return Effect.flatMap(this.hold(key), (held) =>
          Effect.zipRight(onClose(this.release(key, held)), restore(this.valueOf(held)))
        )
      })
    )

  readonly use = <B, E2, R2>(key: K, f: (value: A) => Effect.Effect<B, E2, R2>): Effect.Effect<B, E | E2, R2> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (this.closed) return Effect.interrupt
        return Effect.flatMap(this.hold(key), (held) =>
          Effect.ensuring(restore(Effect.flatMap(this.valueOf(held), f)), this.release(key, held))
        )
      })
    )

  readonly invalidate = (key: K): Effect.Effect<void> =>
    Effect.suspend(() => {
      const entry = this.entries.get(key)
      if (entry === undefined) return Effect.void
      this.remove(key, entry)
      return entry.holders > 0 ? Effect.void : this.closeEntry(entry)
    })

  readonly keys: Effect.Effect<ReadonlyArray<K>> = Effect.sync(() => [...this.entries.keys()])

  readonly peek = (key: K): A | undefined => {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    const exit = entry.exit
    return exit !== undefined && Exit.isSuccess(exit) ? exit.value : undefined
  }
}

export const make = <K, A, E, R>(
  options: Options<K, A, E, R>
): Effect.Effect<RcRegistry<K, A, E>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const registry = new Registry<K, A, E, R>(
      options,
      Duration.toMillis(Duration.decode(options.idleTimeToLive)),
      yield* Effect.context<R>(),
      yield* Effect.scope
    )
    yield* Effect.addFinalizer(() => registry.close())
    return registry
  })
