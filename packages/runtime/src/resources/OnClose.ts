/**
 * A finalizer on the calling effect's scope, run as the scope closes. `Effect.addFinalizer`
 * also restores, for the finalizer, the fiber references of the fiber that added it: it
 * diffs the two fibers' references, the whole service context among them, each time one
 * runs. A run adds a few finalizers that only put back a plain value (a turn slot, a
 * lease, a set's entry), for which the closing fiber's references do as well.
 */
import { Effect, Scope } from "effect"

/** Runs `finalizer` when the calling effect's scope closes. */
export const onClose = (finalizer: Effect.Effect<unknown>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, finalizer))
