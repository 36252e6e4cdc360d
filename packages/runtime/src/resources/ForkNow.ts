/**
 * Forking a fiber that starts on the caller's stack. `Effect.forkIn` queues the new
 * fiber on the scheduler, so whatever else is queued runs before it; this starts it at
 * once (Effect's own `Runtime.runFork`, whose fibers start immediately) and returns when
 * it first waits. The fiber belongs to the scope as with `forkIn`: it is interrupted,
 * and awaited, when the scope closes.
 *
 * A run uses it where its path would otherwise wait for the scheduler between the
 * user's command and the provider's stdin (docs/decisions/0007-fork-now.md).
 */
import { Effect, Fiber, Runtime, Scope } from "effect"

/**
 * Forks `effect` into `scope`, running it on this stack until it first waits; for a scope
 * that ends with the work it forks for (a run's, a turn's): the fiber is interrupted by a
 * finalizer of that scope itself, which stays there until the scope closes; a fiber
 * that has ended by then is left alone (interrupting it would cost a message through
 * the scheduler and change nothing). (`Runtime.runFork`'s `scope` option forks a scope
 * for each fiber instead, at three times the price.)
 */
export const forkNowIn = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  scope: Scope.Scope
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) =>
    // One step: no interruption between the fork and its finalizer.
    Effect.uninterruptible(
      Effect.suspend(() => {
        const fiber = Runtime.runFork(runtime)(effect)
        const stop = Effect.suspend(() => (fiber.unsafePoll() === null ? Fiber.interrupt(fiber) : Effect.void))
        return Effect.as(Scope.addFinalizer(scope, stop), fiber)
      })
    )
  )
