/**
 * A scope for the length of an effect, handed to it as an argument. `Effect.scoped`
 * gives the scope through the context instead: it makes a context (the fiber's services
 * and the scope), sets it, and puts the old one back after, which on a run's path costs
 * several times the scope itself. Closed with the effect's exit, as `Effect.scoped`
 * closes its scope.
 */
import { Effect, Scope } from "effect"

/** `use` with a scope of its own, closed when it ends, however it ends. */
export const withScope = <A, E, R>(use: (scope: Scope.Scope) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(Scope.make(), use, (scope, exit) => Scope.close(scope, exit))
