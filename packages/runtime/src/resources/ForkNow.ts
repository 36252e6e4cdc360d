/**
 * Forking a fiber that starts on the caller's stack. `Effect.forkIn` queues the new
 * fiber on the scheduler, so whatever else is queued runs before it; `forkNowIn`
 * starts it at once (Effect's own `Runtime.runFork`, whose fibers start immediately)
 * and returns when it first waits. The fiber belongs to `scope` as with `forkIn`: it
 * is interrupted, and awaited, when the scope closes.
 *
 * A run uses it where its path would otherwise wait for the scheduler between the
 * user's command and the provider's stdin (docs/decisions/0007-fork-now.md).
 */
import type { Fiber, Scope } from "effect"
import { Effect, Runtime } from "effect"

/** Forks `effect` into `scope`, running it on this stack until it first waits. */
export const forkNowIn = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  scope: Scope.Scope
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) => Effect.sync(() => Runtime.runFork(runtime)(effect, { scope })))

/** `forkNowIn` the scope of the calling effect. */
export const forkNowScoped = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R | Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => forkNowIn(effect, scope))
