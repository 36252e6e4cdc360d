/**
 * Reading threads: a thread's compact state (how an actor activates) or its complete
 * one, filling a compact state on demand, the `thread.get` views, the thread list, the
 * transfers by status and handoffs by id. Reads only; the cost of a compact load does not
 * grow with the log.
 */
import type {
  AppThread,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  StorageError,
  ThreadId,
  ThreadView,
  ThreadViewOptions
} from "@skein/domain"
import { Effect } from "effect"
import type { Option } from "effect"
import { handoffRow, listThreadRows, listTransferRows, type TransferFilter } from "./ProjectionReads.js"
import type { Sql } from "./StoreDb.js"
import { fillNeed } from "./StateNeeds.js"
import { loadCompactThreadState, loadCompleteThreadState } from "./ThreadLoading.js"
import { NotLoaded, type ThreadState } from "./ThreadState.js"
import { threadView as threadViewOf } from "./ThreadViews.js"

export interface ThreadFilter {
  readonly parentThreadId?: ThreadId | undefined
  readonly rootThreadId?: ThreadId | undefined
}

export interface ThreadReaderShape {
  /**
   * The thread's compact state (how an actor activates): a few indexed reads, whatever
   * the length of its history. See ThreadState.
   */
  readonly loadThread: (threadId: ThreadId) => Effect.Effect<Option.Option<ThreadState>, StorageError>
  /** The thread's complete state: everything its log holds (for audits and tests). */
  readonly loadCompleteThread: (threadId: ThreadId) => Effect.Effect<Option.Option<ThreadState>, StorageError>
  /**
   * Runs a pure function of a compact state, reading into the state whatever it lacks
   * (each `NotLoaded` it throws) and running it again, until it has its answer.
   */
  readonly demand: <A>(state: ThreadState, f: () => A) => Effect.Effect<A, StorageError>
  /**
   * `thread.get`: the whole thread (with the transfers in which it is the source or the
   * target), or a window of its runs with what belongs to them (see ThreadViews).
   */
  readonly threadView: (
    threadId: ThreadId,
    options?: ThreadViewOptions
  ) => Effect.Effect<Option.Option<ThreadView>, StorageError>
  readonly listThreads: (filter: ThreadFilter) => Effect.Effect<ReadonlyArray<AppThread>, StorageError>
  /** Transfers by status, of every thread or of one lineage, oldest first. */
  readonly listTransfers: (filter: TransferFilter) => Effect.Effect<ReadonlyArray<ContextTransfer>, StorageError>
  readonly getHandoff: (id: ContextHandoffId) => Effect.Effect<Option.Option<ContextHandoff>, StorageError>
}

/** At most this many reads for one question (each reads a whole range at once). */
const maxRounds = 64

export const make = (sql: Sql): ThreadReaderShape => {
  const demand = <A>(state: ThreadState, f: () => A): Effect.Effect<A, StorageError> => {
    let rounds = 0
    const attempt = (): Effect.Effect<A, StorageError> => {
      try {
        return Effect.succeed(f())
      } catch (error) {
        if (!(error instanceof NotLoaded)) return Effect.die(error)
        if (++rounds > maxRounds) {
          return Effect.die(
            new Error(`thread ${state.thread.id}: still lacking ${error.need._tag} after ${maxRounds} reads`)
          )
        }
        return Effect.flatMap(fillNeed(sql, state, error.need), attempt)
      }
    }
    return Effect.suspend(attempt)
  }
  return {
    loadThread: Effect.fnUntraced(function* (threadId: ThreadId) {
      return yield* loadCompactThreadState(sql, threadId)
    }),
    loadCompleteThread: Effect.fnUntraced(function* (threadId: ThreadId) {
      return yield* loadCompleteThreadState(sql, threadId)
    }),
    demand,
    threadView: Effect.fnUntraced(function* (threadId: ThreadId, options?: ThreadViewOptions) {
      return yield* threadViewOf(sql, threadId, options)
    }),
    listThreads: Effect.fnUntraced(function* (filter: ThreadFilter) {
      const threads = yield* listThreadRows(sql, filter)
      // A side chat is shown with its parent, not among the top-level threads.
      return filter.parentThreadId === undefined ? threads.filter((t) => !t.lineage.sideChat) : threads
    }),
    listTransfers: Effect.fnUntraced(function* (filter: TransferFilter) {
      return yield* listTransferRows(sql, filter)
    }),
    getHandoff: Effect.fnUntraced(function* (id: ContextHandoffId) {
      return yield* handoffRow(sql, id)
    })
  }
}
