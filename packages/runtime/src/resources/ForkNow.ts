/**
 * Forking a fiber that starts on the caller's stack. `Effect.forkIn` queues the new
 * fiber on the scheduler, so whatever else is queued runs before it; these start it at
 * once (Effect's own `Runtime.runFork`, whose fibers start immediately) and return when
 * it first waits. The fiber belongs to the scope as with `forkIn`: it is interrupted,
 * and awaited, when the scope closes.
 *
 * A run uses them where its path would otherwise wait for the scheduler between the
 * user's command and the provider's stdin (docs/decisions/0007-fork-now.md).
 */
import { Effect, Fiber, Runtime, Scope } from "effect"

/**
 * Forks `effect` into `scope`, running it on this stack until it first waits. The fiber
 * has a scope of its own, forked from `scope` and closed as it ends, so that a
 * long-lived `scope` keeps nothing of the fibers that ended.
 */
export const forkNowIn = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  scope: Scope.Scope
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) => Effect.sync(() => Runtime.runFork(runtime)(effect, { scope })))

/**
 * `forkNowIn` the scope of the calling effect, for a scope that ends with the work it
 * forks for (a run's, a turn's): the fiber is interrupted by a finalizer of that scope
 * itself, which stays there until the scope closes, rather than by a scope forked for
 * it (a third of the fork's price).
 */
export const forkNowScoped = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R | Scope.Scope> =>
  Effect.flatMap(Effect.runtime<R | Scope.Scope>(), (runtime) =>
    Effect.flatMap(Effect.scope, (scope) =>
      // One step: no interruption between the fork and its finalizer.
      Effect.suspend(() => {
        const fiber = Runtime.runFork(runtime)(effect)
        return Effect.as(Scope.addFinalizer(scope, Fiber.interrupt(fiber)), fiber)
      }).pipe(Effect.uninterruptible)
    )
  )
