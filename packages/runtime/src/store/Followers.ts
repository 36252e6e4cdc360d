/**
 * Live followers of the log, by thread: plain callbacks told of each commit of their
 * thread. A commit notifies only its own thread's followers, synchronously and in commit
 * order (the log calls `notify` right after the commit); a follower that throws is
 * reported and does not stop the others. Commits of other processes sharing the
 * database reach them too (RemoteCommits.ts), after the last sequence told (`told`).
 */
import type { StoredEvent, ThreadId } from "@skein/domain"
import { Effect } from "effect"
import type { Scope } from "effect"
import { describeError } from "./Codec.js"

export type Listener = (events: ReadonlyArray<StoredEvent>) => void

export interface Followers {
  /** Tells the thread's followers of a commit (nothing for an empty one). */
  readonly notify: (threadId: ThreadId, stored: ReadonlyArray<StoredEvent>) => void
  /** Follows the thread until the scope closes. */
  readonly listen: (threadId: ThreadId, listener: Listener) => Effect.Effect<void, never, Scope.Scope>
  /** The threads someone follows now. */
  readonly followed: () => ReadonlyArray<ThreadId>
  /** Whether someone follows the thread now. */
  readonly isFollowed: (threadId: ThreadId) => boolean
  /** The last thread sequence told to the thread's followers (0 when none yet). */
  readonly told: (threadId: ThreadId) => number
  /**
   * A follower read the thread's log up to `threadSequence` itself: with nothing told
   * yet, that is where the followers stand (so a lost notice of the next commit is
   * made up for, RemoteCommits.ts). Once something was told, that stays the mark.
   */
  readonly known: (threadId: ThreadId, threadSequence: number) => void
  /** Follows the thread while `effect` runs, without a scope. */
  readonly watching: <A, E, R>(
    threadId: ThreadId,
    listener: Listener,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
}

export const make = (): Followers => {
  const listeners = new Map<ThreadId, Set<Listener>>()
  const told = new Map<ThreadId, number>()
  const notify = (threadId: ThreadId, stored: ReadonlyArray<StoredEvent>) => {
    if (stored.length === 0) return
    const last = stored[stored.length - 1]!.threadSequence
    if (last > (told.get(threadId) ?? 0)) told.set(threadId, last)
    for (const listener of listeners.get(threadId) ?? []) {
      try {
        listener(stored)
      } catch (error) {
        console.error(`skein: an event follower of thread ${threadId} failed: ${describeError(error)}`)
      }
    }
  }
  const add = (threadId: ThreadId, listener: Listener) =>
    Effect.sync(() => {
      const set = listeners.get(threadId) ?? new Set()
      listeners.set(threadId, set.add(listener))
      return set
    })
  const remove = (threadId: ThreadId, listener: Listener) => (set: Set<Listener>) =>
    Effect.sync(() => {
      set.delete(listener)
      if (set.size === 0 && listeners.get(threadId) === set) {
        listeners.delete(threadId)
        told.delete(threadId)
      }
    })
  return {
    notify,
    followed: () => [...listeners.keys()],
    isFollowed: (threadId) => listeners.has(threadId),
    told: (threadId) => told.get(threadId) ?? 0,
    known: (threadId, threadSequence) => {
      if (listeners.has(threadId) && !told.has(threadId) && threadSequence > 0) told.set(threadId, threadSequence)
    },
    listen: (threadId, listener) =>
      Effect.asVoid(Effect.acquireRelease(add(threadId, listener), remove(threadId, listener))),
    watching: (threadId, listener, effect) =>
      Effect.acquireUseRelease(add(threadId, listener), () => effect, remove(threadId, listener))
  }
}
