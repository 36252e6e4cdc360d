/**
 * A one-shot result cell: completed once with an Exit, awaited by any number of fibers.
 * What `Deferred` does for the actors' needs (a reply, an entry's value, "stopped"), in a
 * plain object of two fields: a thread actor holds a few for as long as it lives, and
 * an Effect Deferred is a large object of its own shape (about 0.8 KB each).
 */
import { Effect, Exit, Fiber, Runtime } from "effect"

export interface OneShot<A, E> {
  exit: Exit.Exit<A, E> | undefined
  waiters: Array<(exit: Exit.Exit<A, E>) => void> | undefined
}

export const make = <A, E = never>(): OneShot<A, E> => ({ exit: undefined, waiters: undefined })

/** Completes the cell (the first completion wins); returns whether this one did. */
export const complete = <A, E>(cell: OneShot<A, E>, exit: Exit.Exit<A, E>): boolean => {
  if (cell.exit !== undefined) return false
  cell.exit = exit
  const waiters = cell.waiters
  cell.waiters = undefined
  if (waiters !== undefined) for (const resume of waiters) resume(exit)
  return true
}

export const succeed = <A, E>(cell: OneShot<A, E>, value: A): boolean => complete(cell, Exit.succeed(value))

export const fail = <A, E>(cell: OneShot<A, E>, error: E): boolean => complete(cell, Exit.fail(error))

/**
 * Calls `f` with the cell's result once it has one (at once if it has). Returns how to
 * stop listening.
 */
export const listen = <A, E>(cell: OneShot<A, E>, f: (exit: Exit.Exit<A, E>) => void): (() => void) => {
  if (cell.exit !== undefined) {
    f(cell.exit)
    return () => {}
  }
  if (cell.waiters === undefined) cell.waiters = [f]
  else cell.waiters.push(f)
  return () => {
    const waiters = cell.waiters
    if (waiters === undefined) return
    const at = waiters.indexOf(f)
    if (at >= 0) waiters.splice(at, 1)
  }
}

/** Waits for the cell's result (at once when it has one); interruptible while waiting. */
export const wait = <A, E>(cell: OneShot<A, E>): Effect.Effect<A, E> =>
  Effect.suspend(() =>
    cell.exit !== undefined ? cell.exit : Effect.async<A, E>((resume) => Effect.sync(listen(cell, resume)))
  )

/**
 * Runs `effect` in a fiber of its own and answers with the first result its cell gets:
 * the fiber's exit, or whatever `watch` completes the cell with first (from a timer, a
 * callback). `watch` arms its watchers and returns how to disarm them; once there is a
 * result they are disarmed and the fiber, if still running, is interrupted (also when
 * the caller is). One fork, where racing fibers would fork one per watcher and
 * interrupt the losers. The fiber starts at once, on this stack, rather than when the
 * scheduler next gets to it: whatever `effect` does before its first wait (a provider
 * run writing its turn to the process) is not queued behind other fibers' work.
 */
export const race = <A, E>(
  effect: Effect.Effect<A, E>,
  watch: (cell: OneShot<A, E>) => Effect.Effect<void>
): Effect.Effect<A, E> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) => {
      const cell = make<A, E>()
      const fiber = Runtime.runFork(runtime)(Effect.interruptible(effect))
      fiber.addObserver((exit) => void complete(cell, exit))
      const disarm = watch(cell)
      return restore(wait(cell)).pipe(
        Effect.exit,
        Effect.tap(() =>
          Effect.zipRight(
            disarm,
            Effect.suspend(() => (fiber.unsafePoll() === null ? Fiber.interrupt(fiber) : Effect.void))
          )
        ),
        Effect.flatten
      )
    })
  )
