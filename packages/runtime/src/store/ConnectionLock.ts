/**
 * The one lock on the SQLite connection (see Sqlite.ts), with a free path for the
 * sections that run synchronously.
 *
 * better-sqlite3 is synchronous and JavaScript runs one thing at a time, so a section
 * that runs start to finish without yielding (a direct transaction, one statement) can
 * only meet another user of the connection if that user holds the lock across a wait:
 * a `SqlClient` transaction, between its statements. When nobody holds the lock or
 * waits for it, such a section runs at once, taking nothing; else it waits its turn
 * behind the others, in order. Holding the lock across a wait goes through a
 * semaphore, and counts as busy from the moment it asks until it has let go.
 *
 * The free path matters on a run's path: an append took the store's two semaphores
 * (some sixty fiber steps) for a section that never waits.
 */
import { Effect, Option, Scope } from "effect"

export interface ConnectionLock {
  /** Runs `effect` holding the lock, across whatever it waits for. */
  readonly withLock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Takes the lock until the current scope closes. */
  readonly holdInScope: Effect.Effect<void, never, Scope.Scope>
  /**
   * Runs `section`, which must not yield, under the lock: at once when nobody holds or
   * waits for it, else in its turn. What it returns is the result.
   */
  readonly now: <A, E>(section: () => Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** Runs `section` at once if nobody holds or waits for the lock; None otherwise. */
  readonly ifFree: <A>(section: () => A) => Option.Option<A>
}

export const make: Effect.Effect<ConnectionLock> = Effect.map(Effect.makeSemaphore(1), (semaphore) => {
  /** Holders and waiters of the semaphore. */
  let busy = 0
  const leave = Effect.sync(() => void busy--)
  const withLock = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        busy++
        return Effect.ensuring(restore(semaphore.withPermits(1)(effect)), leave)
      })
    )
  const holdInScope: Effect.Effect<void, never, Scope.Scope> = Effect.uninterruptibleMask((restore) =>
    Effect.suspend(() => {
      busy++
      return restore(semaphore.take(1)).pipe(
        Effect.onInterrupt(() => leave),
        Effect.zipRight(
          Effect.flatMap(Effect.scope, (scope) =>
            Scope.addFinalizer(scope, Effect.zipRight(semaphore.release(1), leave))
          )
        )
      )
    })
  )
  return {
    withLock,
    holdInScope,
    now: (section) => Effect.suspend(() => (busy === 0 ? section() : withLock(Effect.suspend(section)))),
    ifFree: (section) => (busy === 0 ? Option.some(section()) : Option.none())
  }
})
