/**
 * A thread's state cell: the state the actor last saw, written only by its own
 * handlers. `commit` appends events fenced by the sequence the cell holds (with the
 * command's receipt in the same transaction) and applies what was stored; a
 * `SequenceConflict` means someone else wrote to the thread, so the cell reloads
 * before the error reaches the handler. `demand` runs a pure function of the state
 * after reading from storage whatever a compact state does not hold (see ThreadState).
 */
import type { CommandId, RunId, ThreadEvent, ThreadId } from "@skein/domain"
import { StorageError, ThreadNotFound } from "@skein/domain"
import type { CommandConflict, SequenceConflict } from "@skein/domain"
import { Effect, Option } from "effect"
import type { Schema } from "effect"
import type { EventStoreShape } from "../../store/EventStore.js"
import { applyEvent } from "../../store/Projection.js"
import { replay as replayReceipt } from "../../store/Receipts.js"
import type { ThreadState } from "../../store/ThreadState.js"

/** The receipt written with a command's events, so that its commandId answers the same later. */
export interface Receipt {
  readonly method: string
  readonly hash: string
  readonly result: unknown
}

export interface ThreadCell {
  readonly threadId: ThreadId
  /** The state as of the last commit or reload. */
  readonly state: () => ThreadState
  readonly now: () => string
  readonly demand: <A>(f: (state: ThreadState) => A) => Effect.Effect<A, StorageError>
  readonly commit: (
    events: ReadonlyArray<ThreadEvent>,
    commandId?: CommandId,
    receipt?: Receipt,
    /** A queued run these events start: out of the queue in the same transaction. */
    dequeue?: RunId
  ) => Effect.Effect<void, StorageError | SequenceConflict>
  /** Reads the thread from storage again (memory may be ahead of, or behind, what is stored). */
  readonly reload: Effect.Effect<void, StorageError | ThreadNotFound>
  /** The stored result of a command id already used for this method and payload (see Receipts.replay). */
  readonly replay: <A, I>(
    commandId: CommandId | undefined,
    method: string,
    hash: string,
    result: Schema.Schema<A, I>
  ) => Effect.Effect<Option.Option<A>, CommandConflict | StorageError>
}

/** Methods on a prototype: an idle actor keeps its cell small. */
class Cell implements ThreadCell {
  constructor(
    readonly threadId: ThreadId,
    private readonly store: EventStoreShape,
    private current: ThreadState
  ) {}

  state(): ThreadState {
    return this.current
  }

  now(): string {
    return new Date().toISOString()
  }

  demand<A>(f: (state: ThreadState) => A): Effect.Effect<A, StorageError> {
    return Effect.suspend(() => {
      const s = this.current
      return this.store.demand(s, () => f(s))
    })
  }

  commit(
    events: ReadonlyArray<ThreadEvent>,
    commandId?: CommandId,
    receipt?: Receipt,
    dequeue?: RunId
  ): Effect.Effect<void, StorageError | SequenceConflict> {
    if (events.length === 0) return Effect.void
    return this.store
      .append({
        threadId: this.threadId,
        events,
        expectedSequence: this.current.lastThreadSequence,
        commandId,
        dequeue,
        receipt:
          receipt && commandId
            ? { commandId, method: receipt.method, payloadHash: receipt.hash, result: receipt.result }
            : undefined
      })
      .pipe(
        Effect.tap((stored) =>
          Effect.sync(() => {
            for (const e of stored) this.current = applyEvent(this.current, e.event)
          })
        ),
        // Someone else wrote to this thread: what memory holds is stale.
        Effect.tapError((error) => (error._tag === "SequenceConflict" ? Effect.ignore(this.reload) : Effect.void)),
        Effect.asVoid
      )
  }

  get reload(): Effect.Effect<void, StorageError | ThreadNotFound> {
    return Effect.flatMap(
      this.store.loadThread(this.threadId),
      Option.match({
        onNone: () => Effect.fail(new ThreadNotFound({ threadId: this.threadId })),
        onSome: (fresh) => Effect.sync(() => void (this.current = fresh))
      })
    )
  }

  replay<A, I>(
    commandId: CommandId | undefined,
    method: string,
    hash: string,
    result: Schema.Schema<A, I>
  ): Effect.Effect<Option.Option<A>, CommandConflict | StorageError> {
    return replayReceipt(this.store.receipt, commandId, method, hash, result)
  }
}

export const make = (threadId: ThreadId, store: EventStoreShape, initial: ThreadState): ThreadCell =>
  new Cell(threadId, store, initial)
