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
import { Clock, Deferred, Duration, Effect, Exit, Fiber, FiberId, Scope } from "effect"
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

export const make = <K, A, E, R>(options: {
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
}): Effect.Effect<RcRegistry<K, A, E>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const idleMs = Duration.toMillis(Duration.decode(options.idleTimeToLive))
    const context = yield* Effect.context<R>()
    const registryScope = yield* Effect.scope
    const entries = new Map<K, Entry<A, E>>()
    /**
     * Entries nobody holds, by when they were let go (insertion order: the time to live is
     * the same for all, so the first is always the first due). One sweeper fiber, alive
     * only while there are some, closes them when they are due.
     */
    const idle = new Map<Entry<A, E>, K>()
    let sweeper: Fiber.RuntimeFiber<void> | undefined
    let closed = false

    const closeEntry = (entry: Entry<A, E>) =>
      Effect.suspend(() => {
        idle.delete(entry)
        return Scope.close(entry.scope, Exit.void)
      })

    const remove = (key: K, entry: Entry<A, E>) => {
      if (entries.get(key) === entry) entries.delete(key)
      entry.removed = true
    }

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const all = [...entries.values()]
        entries.clear()
        idle.clear()
        for (const entry of all) entry.removed = true
        const running = sweeper
        return Effect.forEach(all, closeEntry, { concurrency: "unbounded", discard: true }).pipe(
          Effect.zipRight(running ? Fiber.interrupt(running) : Effect.void)
        )
      })
    )

    /** Closes the idle entries that are due, sleeping until the first is; ends when none is left. */
    const sweep: Effect.Effect<void> = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const due: Array<Entry<A, E>> = []
      for (const [entry, key] of idle) {
        if (entry.holders > 0 || entry.removed) {
          idle.delete(entry)
          continue
        }
        const remaining = entry.idleSince + idleMs - now
        if (remaining > 0) break
        idle.delete(entry)
        remove(key, entry)
        due.push(entry)
      }
      if (due.length > 0) {
        return Effect.forEach(due, (entry) => Scope.close(entry.scope, Exit.void), { discard: true }).pipe(
          Effect.zipRight(sweep)
        )
      }
      const first = idle.keys().next()
      if (first.done) {
        sweeper = undefined
        return Effect.void
      }
      return Effect.zipRight(Effect.sleep(Duration.millis(first.value.idleSince + idleMs - now)), sweep)
    })

    /** After `idleMs` without holders, the entry closes (checked again when it is due). */
    const scheduleIdleClose = (key: K, entry: Entry<A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        idle.delete(entry)
        idle.set(entry, key)
        if (sweeper !== undefined) return Effect.void
        // Interruptible: release runs as a finalizer, whose forks would inherit its
        // uninterruptibility, and closing the registry interrupts this fiber.
        return Effect.interruptible(sweep).pipe(
          Effect.forkIn(registryScope),
          Effect.tap((fiber) =>
            Effect.sync(() => {
              // It may have ended already (nothing was due and nothing was left).
              if (fiber.unsafePoll() === null) sweeper = fiber
            })
          )
        )
      })

    const release = (key: K, entry: Entry<A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        entry.holders--
        if (entry.holders > 0) return Effect.void
        if (entry.removed || closed || idleMs <= 0) {
          remove(key, entry)
          return closeEntry(entry)
        }
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          entry.idleSince = now
          return scheduleIdleClose(key, entry)
        })
      })

    /**
     * Drops the entry if it is still in the map. Its scope closes in a fiber of the
     * registry's, not the caller's: the value may evict itself from a fiber its scope's
     * closing would interrupt and wait for.
     */
    const evict = (key: K, entry: Entry<A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (entry.removed) return Effect.void
        remove(key, entry)
        return entry.holders > 0 ? Effect.void : Effect.asVoid(Effect.forkIn(closeEntry(entry), registryScope))
      })

    /** One more holder: the entry is not idle, whatever its time. To be matched by one `release`. */
    const take = (entry: Entry<A, E>): void => {
      entry.holders++
      idle.delete(entry)
    }

    /** Holds the entry until the answered release runs (see `lookup`'s `hold`). */
    const holdEntry = (key: K, entry: Entry<A, E>): Effect.Effect<Effect.Effect<void>> =>
      Effect.sync(() => {
        take(entry)
        return release(key, entry)
      })

    const create = (key: K): Entry<A, E> => {
      const entry: Entry<A, E> = {
        exit: undefined,
        waiting: undefined,
        scope: Effect.runSync(Scope.make()),
        holders: 0,
        idleSince: 0,
        removed: false
      }
      entries.set(key, entry)
      return entry
    }

    /**
     * Holds the entry of `key`, creating it (and starting its lookup) if there is none.
     * The check and the insertion are one synchronous step: this is the atomicity. To be
     * run uninterruptibly, and matched by one `release`.
     */
    const hold = (key: K): Effect.Effect<Entry<A, E>> =>
      Effect.suspend(() => {
        let entry = entries.get(key)
        const creating = entry === undefined
        if (entry === undefined) entry = create(key)
        take(entry)
        const held = entry
        if (!creating) return Effect.succeed(held)
        // In a fiber of its own, interruptible (closing the entry stops it), so that
        // what it forks does not inherit this region's uninterruptibility, whatever
        // the caller's.
        const lookup = options.lookup(key, evict(key, held), holdEntry(key, held))
        return Effect.interruptible(lookup.pipe(Scope.extend(held.scope), Effect.provide(context))).pipe(
          // Also when interrupted (the entry closed while starting): nobody waits for ever.
          Effect.onExit((exit) => {
            // A failed lookup must not stay cached: the next get tries again.
            if (Exit.isFailure(exit)) remove(key, held)
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

    /** The entry's value: its lookup's outcome when it has one (no wait), else when it comes. */
    const valueOf = (entry: Entry<A, E>): Effect.Effect<A, E> =>
      Effect.suspend(() => entry.exit ?? Deferred.await((entry.waiting ??= Deferred.unsafeMake<A, E>(FiberId.none))))

    const get = (key: K): Effect.Effect<A, E, Scope.Scope> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (closed) return Effect.interrupt
          return Effect.flatMap(hold(key), (held) =>
            Effect.zipRight(onClose(release(key, held)), restore(valueOf(held)))
          )
        })
      )

    const use = <B, E2, R2>(key: K, f: (value: A) => Effect.Effect<B, E2, R2>): Effect.Effect<B, E | E2, R2> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (closed) return Effect.interrupt
          return Effect.flatMap(hold(key), (held) =>
            Effect.ensuring(restore(Effect.flatMap(valueOf(held), f)), release(key, held))
          )
        })
      )

    const invalidate = (key: K): Effect.Effect<void> =>
      Effect.suspend(() => {
        const entry = entries.get(key)
        if (entry === undefined) return Effect.void
        remove(key, entry)
        return entry.holders > 0 ? Effect.void : closeEntry(entry)
      })

    const peek = (key: K): A | undefined => {
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      const exit = entry.exit
      return exit !== undefined && Exit.isSuccess(exit) ? exit.value : undefined
    }

    return {
      get,
      use,
      invalidate,
      keys: Effect.sync(() => [...entries.keys()]),
      peek
    } satisfies RcRegistry<K, A, E>
  })
