/**
 * A one-shot result cell: completed once with an Exit, awaited by any number of fibers.
 * What `Deferred` does for the actors' needs (a reply, an entry's value, "stopped"), in a
 * plain object of two fields: a thread actor holds a few for as long as it lives, and
 * an Effect Deferred is a large object of its own shape (about 0.8 KB each).
 */
import { Effect, Exit } from "effect"

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
  Effect.suspend(() => {
    if (cell.exit !== undefined) return cell.exit
    return Effect.async<A, E>((resume) => {
      const waiter = (exit: Exit.Exit<A, E>) => resume(exit)
      if (cell.waiters === undefined) cell.waiters = [waiter]
      else cell.waiters.push(waiter)
      return Effect.sync(() => {
        const waiters = cell.waiters
        if (waiters === undefined) return
        const at = waiters.indexOf(waiter)
        if (at >= 0) waiters.splice(at, 1)
      })
    })
  })
