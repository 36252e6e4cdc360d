/**
 * The event store: the append-only per-thread log, its projection tables and command
 * receipts, written together in one SQLite transaction per append; plus live following
 * of appended events.
 */
import {
  isTerminalRunStatus,
  SequenceConflict,
  StorageError,
  type AppThread,
  type Checkpoint,
  type CheckpointId,
  type CommandId,
  type ContextHandoff,
  type ContextHandoffId,
  type ProviderThread,
  type ProviderThreadId,
  type Run,
  type RunId,
  type StoredEvent,
  type ThreadEvent,
  type ThreadId,
  type ThreadView,
  type ThreadViewOptions,
  type TurnItem,
  type TurnItemId
} from "@skein/domain"
import { Context, Deferred, Effect, Either, Exit, Layer, Option, Stream } from "effect"
import type { Scope } from "effect"
import { describeError, fromSqlError } from "./Codec.js"
import { decodeEvent, encodeEvent, type StoredForm } from "./EventCodec.js"
import {
  activeRunRows,
  approvalRequestRows,
  checkpointOfRunRow,
  checkpointRow,
  chunks,
  clearProjections,
  gitCheckpointOfOrdinalRow,
  handoffRow,
  latestStableRunRow,
  listThreadRows,
  maxRowsPerStatement,
  pendingCheckpointRows,
  owedRestoreRows,
  previousGitCommitRow,
  subagentsWithoutResultRows,
  turnItemRow,
  multiRowInsert,
  projectionRows,
  projectionStatements,
  providerThreadRow,
  runByOrdinalRow,
  servedTurnRow,
  runRow,
  threadRow,
  writeProjections,
  type ProjectionRows
} from "./ProjectionTables.js"
import { fillNeed, loadCompactThreadState, loadCompleteThreadState } from "./ThreadLoading.js"
import { threadView as threadViewOf } from "./ThreadViews.js"
import { SqliteDirect, type DirectDb } from "./Sqlite.js"
import { NotLoaded, type ThreadState } from "./ThreadState.js"

/** What a mutating command returned, stored so that a retry with its commandId gets the same answer. */
export interface CommandReceipt {
  readonly commandId: CommandId
  /** The RPC method, e.g. `run.start`. */
  readonly method: string
  /** A hash of the command's payload, to tell a retry from a conflicting reuse of the id. */
  readonly payloadHash: string
  /** Stored as JSON: pass an already-encoded (JSON-safe) value. */
  readonly result: unknown
}

export interface StoredReceipt {
  readonly method: string
  readonly payloadHash: string
  readonly result: unknown
}

export interface AppendInput {
  readonly threadId: ThreadId
  /** In order; a thread's very first append must begin with ThreadCreated. */
  readonly events: ReadonlyArray<ThreadEvent>
  /** Recorded on every event; defaults to the receipt's commandId. */
  readonly commandId?: CommandId | undefined
  readonly receipt?: CommandReceipt | undefined
  /**
   * The per-thread sequence the writer last saw (0 for a new thread). When given, the
   * append is refused with `SequenceConflict`, writing nothing, unless the log still
   * ends there: a writer working from a stale state can never interleave its events
   * with another writer's (this is the fencing that a second live actor for one
   * thread, here or on another machine, runs into).
   */
  readonly expectedSequence?: number | undefined
}

export interface ThreadFilter {
  readonly parentThreadId?: ThreadId | undefined
  readonly rootThreadId?: ThreadId | undefined
}

export interface EventStoreShape {
  /**
   * Appends in one transaction: per-thread sequences (last + 1 …), the events, their
   * projection rows and the receipt. On any failure nothing is stored. Once committed,
   * the stored events go to live followers (`events`). Appends are serialised; do not
   * call it inside an outer `withTransaction`.
   */
  readonly append: (input: AppendInput) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError | SequenceConflict>
  readonly receipt: (commandId: CommandId) => Effect.Effect<Option.Option<StoredReceipt>, StorageError>
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
  readonly getHandoff: (id: ContextHandoffId) => Effect.Effect<Option.Option<ContextHandoff>, StorageError>
  /** Up to `limit` events with a thread sequence above `afterThreadSequence`, in order. */
  readonly readEvents: (
    threadId: ThreadId,
    afterThreadSequence: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError>
  /**
   * The events after `afterThreadSequence` from the log, then live ones as they are
   * appended: in order, without gap or duplicate. Never ends on its own.
   */
  readonly events: (threadId: ThreadId, afterThreadSequence: number) => Stream.Stream<StoredEvent, StorageError>
  /**
   * The same, delivered to a plain callback for as long as the scope is open: batches
   * in order, without gap or duplicate, the live ones synchronously right after their
   * commit. For fan-out to many followers at once (no fiber per follower).
   */
  readonly follow: (
    threadId: ThreadId,
    afterThreadSequence: number,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void
  ) => Effect.Effect<void, StorageError, Scope.Scope>
  /**
   * Live events only, from now on, while `effect` runs: no replay, no read. For waiting
   * on something to happen (check the state after subscribing). No scope is made for it:
   * a run's start waits this way.
   */
  readonly watching: <A, E, R>(
    threadId: ThreadId,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /**
   * The run once it is terminal: watched live, after checking what is stored (so an
   * end committed before the watch began is not missed). Waits for as long as it takes.
   */
  readonly awaitRunEnd: (threadId: ThreadId, runId: RunId) => Effect.Effect<Run, StorageError>
  /** Single rows by key, for lineage (cost independent of the thread's length). */
  readonly lookup: {
    readonly thread: (threadId: ThreadId) => Effect.Effect<Option.Option<AppThread>, StorageError>
    readonly run: (threadId: ThreadId, runId: RunId) => Effect.Effect<Option.Option<Run>, StorageError>
    readonly runByOrdinal: (threadId: ThreadId, ordinal: number) => Effect.Effect<Option.Option<Run>, StorageError>
    /** The newest completed run that has a ready checkpoint. */
    readonly latestStableRun: (threadId: ThreadId) => Effect.Effect<Option.Option<Run>, StorageError>
    readonly checkpoint: (
      threadId: ThreadId,
      id: CheckpointId
    ) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
    readonly checkpointOfRun: (
      threadId: ThreadId,
      runId: RunId
    ) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
    /** Its last recorded snapshot (the runs it served since are rows: see `servedTurn`). */
    readonly providerThread: (
      threadId: ThreadId,
      id: ProviderThreadId
    ) => Effect.Effect<Option.Option<ProviderThread>, StorageError>
    /** The provider's turn handle for a run the provider thread served natively. */
    readonly servedTurn: (
      threadId: ThreadId,
      id: ProviderThreadId,
      ordinal: number
    ) => Effect.Effect<Option.Option<string>, StorageError>
    /** An item by id; with its run, an indexed read (receipts before the run was kept in them have none). */
    readonly turnItem: (
      threadId: ThreadId,
      id: TurnItemId,
      runId?: RunId
    ) => Effect.Effect<Option.Option<TurnItem>, StorageError>
    /** The thread's approval requests with this approval id, the newest run's first. */
    readonly approvalRequests: (
      threadId: ThreadId,
      approvalId: string
    ) => Effect.Effect<ReadonlyArray<TurnItem>, StorageError>
    /** Subagent children (not observe-only) whose result the parent's log holds no transfer for, oldest first. */
    readonly subagentsWithoutResult: (parentId: ThreadId) => Effect.Effect<ReadonlyArray<AppThread>, StorageError>
    /** Threads whose file restore a rollback recorded owed and nothing recorded finished (see ThreadRestore). */
    readonly owedRestores: Effect.Effect<ReadonlyArray<AppThread>, StorageError>
    /** The commit of the newest git checkpoint of a run not rolled back (a new checkpoint's parent). */
    readonly previousGitCommit: (threadId: ThreadId) => Effect.Effect<string | null, StorageError>
    /** A ready git checkpoint of run `ordinal` with its commit (what a rollback restores files from). */
    readonly gitCheckpointOfRun: (
      threadId: ThreadId,
      ordinal: number
    ) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
  }
  /** Runs that are queued or running (after a crash: the ones to end as interrupted). */
  readonly activeRuns: Effect.Effect<ReadonlyArray<Run>, StorageError>
  /** Git checkpoints not taken yet: of one thread, or of all (after a crash: the ones never taken). */
  readonly pendingCheckpoints: (threadId: ThreadId | null) => Effect.Effect<ReadonlyArray<Checkpoint>, StorageError>
  /** Clears the projection tables and refolds the whole log into them, in one transaction. */
  readonly rebuildProjections: Effect.Effect<void, StorageError>
}

const eventColumns = ["thread_id", "thread_sequence", "type", "payload", "command_id", "created_at"] as const
const replayPageSize = 500
const rebuildPageSize = 1000

interface EventRow {
  readonly sequence: number
  readonly thread_sequence: number
  readonly command_id: string | null
  readonly created_at: string
  readonly payload: string
}

/** Checks what SQL cannot: a new thread begins with ThreadCreated, thread events name their log. */
const checkEvents = (threadId: ThreadId, events: ReadonlyArray<ThreadEvent>): StorageError | undefined => {
  for (const event of events) {
    if ((event._tag === "ThreadCreated" || event._tag === "ThreadUpdated") && event.thread.id !== threadId) {
      return new StorageError({
        detail: `a ${event._tag} event for thread ${event.thread.id} cannot go into the log of thread ${threadId}`
      })
    }
  }
  return undefined
}

const make = Effect.gen(function* () {
  const direct = yield* SqliteDirect
  const sql = direct.sql
  // Live followers, by thread: a commit notifies only the followers of its thread.
  const listeners = new Map<ThreadId, Set<(events: ReadonlyArray<StoredEvent>) => void>>()
  /**
   * Tells the thread's followers of a commit. Called right after it, still holding the
   * connection (SqliteDirect's `committed`), so that followers receive each thread's
   * events in sequence order.
   */
  const notify = (threadId: ThreadId, stored: ReadonlyArray<StoredEvent>) => {
    if (stored.length === 0) return
    for (const listener of listeners.get(threadId) ?? []) {
      try {
        listener(stored)
      } catch (error) {
        console.error(`skein: an event follower of thread ${threadId} failed: ${describeError(error)}`)
      }
    }
  }
  const clock = yield* Effect.clock

  /**
   * The append's one transaction, run synchronously (see Sqlite.ts): the fence on the
   * sequence, the events, their projection rows, the receipt.
   */
  const insertEvents = (
    db: DirectDb,
    abort: (error: StorageError | SequenceConflict) => never,
    threadId: ThreadId,
    input: AppendInput,
    forms: ReadonlyArray<StoredForm>,
    resultJson: string,
    createdAt: string
  ): ReadonlyArray<StoredEvent> => {
    const commandId = input.commandId ?? input.receipt?.commandId ?? null
    const last =
      db.all<{ readonly last: number }>(
        "SELECT COALESCE(MAX(thread_sequence), 0) AS last FROM events WHERE thread_id = ?",
        [threadId]
      )[0]?.last ?? 0
    if (input.expectedSequence !== undefined && input.expectedSequence !== last) {
      abort(new SequenceConflict({ threadId, expected: input.expectedSequence, actual: last }))
    }
    const first = input.events[0]
    if (last === 0 && first !== undefined && first._tag !== "ThreadCreated") {
      abort(
        new StorageError({
          detail: `thread ${threadId} has no events yet, so its first event must be ThreadCreated (got ${first._tag})`
        })
      )
    }
    const params: Array<string | number | null> = []
    for (let i = 0; i < input.events.length; i++) {
      params.push(threadId, last + i + 1, input.events[i]!._tag, forms[i]!.payload, commandId, createdAt)
    }
    const sequences: Array<number> = []
    const width = eventColumns.length
    for (const [index, chunk] of chunks(input.events, maxRowsPerStatement).entries()) {
      const offset = index * maxRowsPerStatement * width
      const { lastInsertRowid } = db.run(
        multiRowInsert("events", eventColumns, chunk.length),
        chunk.length === input.events.length ? params : params.slice(offset, offset + chunk.length * width)
      )
      // One INSERT under the write lock gives its rows consecutive sequences, in VALUES order.
      for (let i = chunk.length - 1; i >= 0; i--) sequences.push(lastInsertRowid - i)
    }
    for (const [text, rowParams] of projectionStatements(projectionRows(threadId, forms))) db.run(text, rowParams)
    if (input.receipt !== undefined) {
      const { commandId: receiptId, method, payloadHash } = input.receipt
      db.run("INSERT INTO receipts (command_id, method, payload_hash, result, created_at) VALUES (?, ?, ?, ?, ?)", [
        receiptId,
        method,
        payloadHash,
        resultJson,
        createdAt
      ])
    }
    return input.events.map((event, i): StoredEvent => ({
      sequence: sequences[i]!,
      threadId,
      threadSequence: last + i + 1,
      commandId,
      createdAt,
      event
    }))
  }

  const append = (input: AppendInput): Effect.Effect<ReadonlyArray<StoredEvent>, StorageError | SequenceConflict> =>
    Effect.suspend(() => {
      const { threadId } = input
      const invalid = checkEvents(threadId, input.events)
      if (invalid !== undefined) return Effect.fail(invalid)
      const forms: Array<StoredForm> = new Array(input.events.length)
      for (let i = 0; i < input.events.length; i++) {
        const result = encodeEvent(input.events[i]!)
        if (Either.isLeft(result)) return Effect.fail(result.left)
        forms[i] = result.right
      }
      let resultJson = "null"
      if (input.receipt !== undefined) {
        try {
          resultJson = JSON.stringify(input.receipt.result) ?? "null"
        } catch (error) {
          return Effect.fail(
            new StorageError({
              detail: `the receipt result of ${input.receipt.commandId} is not JSON: ${describeError(error)}`
            })
          )
        }
      }
      const createdAt = new Date(clock.unsafeCurrentTimeMillis()).toISOString()
      // The transaction and the followers' notice run without yielding: nothing can
      // interrupt the append between its commit and its publication.
      return direct
        .transaction<ReadonlyArray<StoredEvent>, StorageError | SequenceConflict>(
          (db, abort) => insertEvents(db, abort, threadId, input, forms, resultJson, createdAt),
          (stored) => notify(threadId, stored)
        )
        .pipe(
          Effect.mapError((error) =>
            error._tag === "SqlError"
              ? fromSqlError(`cannot append ${input.events.length} event(s) to thread ${threadId}`)(error)
              : error
          )
        )
    })

  const receipt = (commandId: CommandId): Effect.Effect<Option.Option<StoredReceipt>, StorageError> =>
    sql
      .unsafe<{ readonly method: string; readonly payload_hash: string; readonly result: string }>(
        "SELECT method, payload_hash, result FROM receipts WHERE command_id = ?",
        [commandId]
      )
      .pipe(
        Effect.mapError(fromSqlError(`cannot read the receipt of command ${commandId}`)),
        Effect.flatMap((rows) => {
          const row = rows[0]
          if (row === undefined) return Effect.succeedNone
          return Effect.try({
            try: () =>
              Option.some({ method: row.method, payloadHash: row.payload_hash, result: JSON.parse(row.result) }),
            catch: (error) =>
              new StorageError({
                detail: `the receipt of command ${commandId} holds invalid JSON (${describeError(error)})`
              })
          })
        })
      )

  const loadThread = (threadId: ThreadId) => loadCompactThreadState(sql, threadId)
  const loadCompleteThread = (threadId: ThreadId) => loadCompleteThreadState(sql, threadId)

  /** At most this many reads for one question (each reads a whole range at once). */
  const maxRounds = 64
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

  const threadView = (threadId: ThreadId, options?: ThreadViewOptions) => threadViewOf(sql, threadId, options)

  const readEvents = (
    threadId: ThreadId,
    afterThreadSequence: number,
    limit: number
  ): Effect.Effect<ReadonlyArray<StoredEvent>, StorageError> =>
    sql
      .unsafe<EventRow>(
        "SELECT sequence, thread_sequence, command_id, created_at, payload FROM events WHERE thread_id = ? AND thread_sequence > ? ORDER BY thread_sequence LIMIT ?",
        [threadId, afterThreadSequence, limit]
      )
      .pipe(
        Effect.mapError(fromSqlError(`cannot read the events of thread ${threadId}`)),
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) =>
            Effect.map(
              decodeEvent(row.payload, `event ${row.thread_sequence} of thread ${threadId}`),
              (event): StoredEvent => ({
                sequence: row.sequence,
                threadId,
                threadSequence: row.thread_sequence,
                commandId: row.command_id as CommandId | null,
                createdAt: row.created_at,
                event
              })
            )
          )
        )
      )

  const addListener = (threadId: ThreadId, listener: (events: ReadonlyArray<StoredEvent>) => void) =>
    Effect.sync(() => {
      const set = listeners.get(threadId) ?? new Set()
      listeners.set(threadId, set.add(listener))
      return set
    })
  const removeListener =
    (threadId: ThreadId, listener: (events: ReadonlyArray<StoredEvent>) => void) =>
    (set: Set<(events: ReadonlyArray<StoredEvent>) => void>) =>
      Effect.sync(() => {
        set.delete(listener)
        if (set.size === 0 && listeners.get(threadId) === set) listeners.delete(threadId)
      })
  const listen = (threadId: ThreadId, listener: (events: ReadonlyArray<StoredEvent>) => void) =>
    Effect.acquireRelease(addListener(threadId, listener), removeListener(threadId, listener))

  const watching = <A, E, R>(
    threadId: ThreadId,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void,
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(addListener(threadId, onEvents), () => effect, removeListener(threadId, onEvents))

  const awaitRunEnd = (threadId: ThreadId, runId: RunId): Effect.Effect<Run, StorageError> =>
    Effect.flatMap(Deferred.make<Run>(), (ended) =>
      watching(
        threadId,
        (events) => {
          for (const { event } of events) {
            if (event._tag === "RunEnded" && event.run.id === runId) Deferred.unsafeDone(ended, Exit.succeed(event.run))
          }
        },
        Effect.flatMap(runRow(sql, threadId, runId), (stored) =>
          Option.isSome(stored) && isTerminalRunStatus(stored.value.status)
            ? Effect.succeed(stored.value)
            : Deferred.await(ended)
        )
      )
    )

  const follow = (
    threadId: ThreadId,
    afterThreadSequence: number,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void
  ): Effect.Effect<void, StorageError, Scope.Scope> =>
    Effect.gen(function* () {
      let last = afterThreadSequence
      const deliver = (batch: ReadonlyArray<StoredEvent>) => {
        // A live commit reaches every follower as the same array (so a transport can
        // encode it once for all of them); only overlap with the replay is filtered.
        const fresh =
          batch.length > 0 && batch[0]!.threadSequence > last
            ? batch
            : batch.filter((event) => event.threadSequence > last)
        if (fresh.length === 0) return
        last = fresh[fresh.length - 1]!.threadSequence
        onEvents(fresh)
      }
      // Listen before reading the log: what commits from now on is buffered, what
      // committed before is in the log; `last` drops what both hold.
      let buffered: Array<StoredEvent> | null = []
      yield* listen(threadId, (batch) => (buffered ? buffered.push(...batch) : deliver(batch)))
      for (;;) {
        const page = yield* readEvents(threadId, last, replayPageSize)
        deliver(page)
        if (page.length < replayPageSize) break
      }
      const pending = buffered
      buffered = null
      deliver(pending)
    })

  const events = (threadId: ThreadId, afterThreadSequence: number): Stream.Stream<StoredEvent, StorageError> =>
    Stream.asyncPush<StoredEvent, StorageError>(
      (emit) => follow(threadId, afterThreadSequence, (batch) => void emit.array(batch)),
      { bufferSize: "unbounded" }
    )

  const activeRuns = activeRunRows(sql)

  const rebuildProjections: Effect.Effect<void, StorageError> = Effect.gen(function* () {
    yield* clearProjections(sql)
    let after = 0
    for (;;) {
      const rows = yield* sql.unsafe<{
        readonly sequence: number
        readonly thread_id: string
        readonly payload: string
      }>("SELECT sequence, thread_id, payload FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?", [
        after,
        rebuildPageSize
      ])
      let rowsOf: ProjectionRows = new Map()
      let threadOf: string | undefined
      for (const row of rows) {
        if (row.thread_id !== threadOf) {
          if (threadOf !== undefined) yield* writeProjections(sql, rowsOf)
          threadOf = row.thread_id
          rowsOf = new Map()
        }
        const event = yield* decodeEvent(row.payload, `event ${row.sequence} (thread ${row.thread_id})`)
        // Re-encoded exactly as append encodes, into the same row builder.
        projectionRows(row.thread_id, [yield* encodeEvent(event)], rowsOf)
      }
      if (threadOf !== undefined) yield* writeProjections(sql, rowsOf)
      const lastRow = rows[rows.length - 1]
      if (lastRow === undefined || rows.length < rebuildPageSize) break
      after = lastRow.sequence
    }
  }).pipe(sql.withTransaction, Effect.mapError(fromSqlError("cannot rebuild the projections")))

  return EventStore.of({
    append,
    receipt,
    loadThread,
    loadCompleteThread,
    demand,
    threadView,
    // A side chat is shown with its parent, not among the top-level threads.
    listThreads: (filter) =>
      Effect.map(listThreadRows(sql, filter), (threads) =>
        filter.parentThreadId === undefined ? threads.filter((t) => !t.lineage.sideChat) : threads
      ),
    getHandoff: (id) => handoffRow(sql, id),
    readEvents,
    events,
    follow,
    watching,
    awaitRunEnd,
    lookup: {
      thread: (threadId) => threadRow(sql, threadId),
      run: (threadId, runId) => runRow(sql, threadId, runId),
      runByOrdinal: (threadId, ordinal) => runByOrdinalRow(sql, threadId, ordinal),
      latestStableRun: (threadId) => latestStableRunRow(sql, threadId),
      checkpoint: (threadId, id) => checkpointRow(sql, threadId, id),
      checkpointOfRun: (threadId, runId) => checkpointOfRunRow(sql, threadId, runId),
      providerThread: (threadId, id) => providerThreadRow(sql, threadId, id),
      servedTurn: (threadId, id, ordinal) => servedTurnRow(sql, threadId, id, ordinal),
      turnItem: (threadId, id, runId) => turnItemRow(sql, threadId, id, runId),
      approvalRequests: (threadId, approvalId) => approvalRequestRows(sql, threadId, approvalId),
      subagentsWithoutResult: (parentId) => subagentsWithoutResultRows(sql, parentId),
      previousGitCommit: (threadId) => previousGitCommitRow(sql, threadId),
      owedRestores: owedRestoreRows(sql),
      gitCheckpointOfRun: (threadId, ordinal) => gitCheckpointOfOrdinalRow(sql, threadId, ordinal)
    },
    activeRuns,
    pendingCheckpoints: (threadId) => pendingCheckpointRows(sql, threadId),
    rebuildProjections
  })
})

export class EventStore extends Context.Tag("@skein/runtime/EventStore")<EventStore, EventStoreShape>() {
  static readonly layer: Layer.Layer<EventStore, never, SqliteDirect> = Layer.scoped(EventStore, make)
}
