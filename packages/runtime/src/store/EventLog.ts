/**
 * The log: per-thread event sequences written with their projection rows and the
 * command's receipt in one SQLite transaction per append, fenced on the sequence the
 * writer last saw; reads of it; and live following, without gap or duplicate.
 */
import {
  isTerminalRunStatus,
  SequenceConflict,
  StorageError,
  type CommandId,
  type Run,
  type RunId,
  type StoredEvent,
  type ThreadEvent,
  type ThreadId
} from "@skein/domain"
import { type Clock, Deferred, Effect, Either, Exit, Option, Stream } from "effect"
import type { Scope } from "effect"
import { describeError, fromSqlError } from "./Codec.js"
import { decodeEvent, encodeEvent, type StoredForm } from "./EventCodec.js"
import type { Followers } from "./Followers.js"
import {
  chunks,
  maxRowsPerStatement,
  multiRowInsert,
  projectionRows,
  projectionStatements
} from "./ProjectionTables.js"
import { runRow } from "./ProjectionReads.js"
import * as RemoteCommits from "./RemoteCommits.js"
import type { Sql, StoreDbShape, TxDb } from "./StoreDb.js"

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
  /**
   * A queued run these events start (RunQueue.ts): taken out of its queue in the same
   * transaction, and the append refused, writing nothing, if it is no longer queued.
   */
  readonly dequeue?: RunId | undefined
}

export interface EventLogShape {
  /**
   * Appends in one transaction: per-thread sequences (last + 1 …), the events, their
   * projection rows and the receipt. On any failure nothing is stored. Once committed,
   * the stored events go to live followers (`events`). Appends are serialised; do not
   * call it inside an outer `withTransaction`.
   */
  readonly append: (input: AppendInput) => Effect.Effect<ReadonlyArray<StoredEvent>, StorageError | SequenceConflict>
  readonly receipt: (commandId: CommandId) => Effect.Effect<Option.Option<StoredReceipt>, StorageError>
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
   * on something this process commits (check the state after subscribing): other
   * processes' commits come only while another follower here has them heard. No scope
   * is made for it: a run's start on its thread's own runner waits this way.
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
}

const eventColumns = ["thread_id", "thread_sequence", "type", "payload", "command_id", "created_at"] as const
const replayPageSize = 500

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

/** What an append writes, encoded before the transaction starts. */
interface Prepared {
  readonly input: AppendInput
  readonly forms: ReadonlyArray<StoredForm>
  readonly resultJson: string
  readonly createdAt: string
}

/** Encodes the events and the receipt's result, or says why they cannot be stored. */
const prepare = (input: AppendInput, createdAt: string): Either.Either<Prepared, StorageError> => {
  const invalid = checkEvents(input.threadId, input.events)
  if (invalid !== undefined) return Either.left(invalid)
  const forms: Array<StoredForm> = new Array(input.events.length)
  for (let i = 0; i < input.events.length; i++) {
    const result = encodeEvent(input.events[i]!)
    if (Either.isLeft(result)) return Either.left(result.left)
    forms[i] = result.right
  }
  let resultJson = "null"
  if (input.receipt !== undefined) {
    try {
      resultJson = JSON.stringify(input.receipt.result) ?? "null"
    } catch (error) {
      return Either.left(
        new StorageError({
          detail: `the receipt result of ${input.receipt.commandId} is not JSON: ${describeError(error)}`
        })
      )
    }
  }
  return Either.right({ input, forms, resultJson, createdAt })
}

/**
 * The append's one transaction (see StoreDb.ts): the fence on the sequence, the
 * events, their projection rows, the receipt.
 */
function* insertEvents(
  db: TxDb,
  abort: (error: StorageError | SequenceConflict) => never,
  { input, forms, resultJson, createdAt }: Prepared
) {
  const { threadId } = input
  const commandId = input.commandId ?? input.receipt?.commandId ?? null
  yield* db.lockThread(threadId)
  const last =
    (yield* db.all<{ readonly last: number }>(
      "SELECT COALESCE(MAX(thread_sequence), 0) AS last FROM events WHERE thread_id = ?",
      [threadId]
    ))[0]?.last ?? 0
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
  const sequences: Array<number> = new Array(input.events.length)
  const width = eventColumns.length
  for (const [index, chunk] of chunks(input.events, maxRowsPerStatement).entries()) {
    const offset = index * maxRowsPerStatement * width
    const inserted = yield* db.insert(
      multiRowInsert("events", eventColumns, chunk.length),
      chunk.length === input.events.length ? params : params.slice(offset, offset + chunk.length * width),
      "sequence",
      chunk.length
    )
    for (const [i, sequence] of inserted.entries()) sequences[index * maxRowsPerStatement + i] = sequence
  }
  if (input.dequeue !== undefined) {
    const taken = yield* db.all("DELETE FROM queued_runs WHERE run_id = ? AND thread_id = ? RETURNING run_id", [
      input.dequeue,
      threadId
    ])
    if (taken.length !== 1)
      abort(new StorageError({ detail: `run ${input.dequeue} is no longer queued on thread ${threadId}` }))
  }
  for (const [text, rowParams] of projectionStatements(projectionRows(threadId, forms))) yield* db.run(text, rowParams)
  if (input.receipt !== undefined) {
    const { commandId: receiptId, method, payloadHash } = input.receipt
    yield* db.run(
      "INSERT INTO receipts (command_id, method, payload_hash, result, created_at) VALUES (?, ?, ?, ?, ?)",
      [receiptId, method, payloadHash, resultJson, createdAt]
    )
  }
  if (input.events.length > 0) yield* db.announce({ threadId, first: last + 1, last: last + input.events.length })
  return input.events.map((event, i): StoredEvent => ({
    sequence: sequences[i]!,
    threadId,
    threadSequence: last + i + 1,
    commandId,
    createdAt,
    event
  }))
}

/** `append`: checked, then committed in one transaction whose followers hear it before it returns. */
const appender = (direct: StoreDbShape, followers: Followers, clock: Clock.Clock) =>
  Effect.fnUntraced(function* (input: AppendInput) {
    const prepared = prepare(input, new Date(clock.unsafeCurrentTimeMillis()).toISOString())
    if (Either.isLeft(prepared)) return yield* prepared.left
    // The transaction and the followers' notice run without yielding: nothing can
    // interrupt the append between its commit and its publication.
    return yield* direct
      .transaction<ReadonlyArray<StoredEvent>, StorageError | SequenceConflict>(
        (db, abort) => insertEvents(db, abort, prepared.right),
        (stored) => followers.notify(input.threadId, stored)
      )
      .pipe(
        Effect.mapError((error) =>
          error._tag === "SqlError"
            ? fromSqlError(`cannot append ${input.events.length} event(s) to thread ${input.threadId}`)(error)
            : error
        )
      )
  })

/** `receipt`: what a command id was answered, if it was. */
const receiptReader = (sql: Sql) =>
  Effect.fnUntraced(function* (commandId: CommandId) {
    const rows = yield* sql
      .unsafe<{ readonly method: string; readonly payload_hash: string; readonly result: string }>(
        "SELECT method, payload_hash, result FROM receipts WHERE command_id = ?",
        [commandId]
      )
      .pipe(Effect.mapError(fromSqlError(`cannot read the receipt of command ${commandId}`)))
    const row = rows[0]
    if (row === undefined) return Option.none<StoredReceipt>()
    return yield* Effect.try({
      try: (): Option.Option<StoredReceipt> =>
        Option.some({ method: row.method, payloadHash: row.payload_hash, result: JSON.parse(row.result) }),
      catch: (error) =>
        new StorageError({
          detail: `the receipt of command ${commandId} holds invalid JSON (${describeError(error)})`
        })
    })
  })

/** `readEvents`: a page of a thread's events after a thread sequence. */
const eventReader = (sql: Sql) =>
  Effect.fnUntraced(function* (threadId: ThreadId, afterThreadSequence: number, limit: number) {
    const rows = yield* sql
      .unsafe<EventRow>(
        "SELECT sequence, thread_sequence, command_id, created_at, payload FROM events WHERE thread_id = ? AND thread_sequence > ? ORDER BY thread_sequence LIMIT ?",
        [threadId, afterThreadSequence, limit]
      )
      .pipe(Effect.mapError(fromSqlError(`cannot read the events of thread ${threadId}`)))
    return yield* Effect.forEach(rows, (row) =>
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
  })

/** `awaitRunEnd`: the run once it has ended, at once if it has. */
const runEndWaiter = (sql: Sql, followers: Followers, remote: RemoteCommits.RemoteCommits) =>
  Effect.fnUntraced(function* (threadId: ThreadId, runId: RunId) {
    const ended = yield* Deferred.make<Run>()
    yield* remote.need
    return yield* followers.watching(
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
  }, Effect.scoped)

/** `follow`: a thread's events from a sequence on, the log's then the live commits', each once. */
const follower = (readEvents: EventLogShape["readEvents"], followers: Followers, remote: RemoteCommits.RemoteCommits) =>
  Effect.fnUntraced(function* (
    threadId: ThreadId,
    afterThreadSequence: number,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void
  ) {
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
    yield* remote.need
    yield* followers.listen(threadId, (batch) => (buffered ? buffered.push(...batch) : deliver(batch)))
    for (;;) {
      const page = yield* readEvents(threadId, last, replayPageSize)
      deliver(page)
      if (page.length < replayPageSize) break
    }
    const pending = buffered
    buffered = null
    deliver(pending)
    followers.known(threadId, last)
  })

export const make = (direct: StoreDbShape, followers: Followers) =>
  Effect.gen(function* () {
    const readEvents = eventReader(direct.sql)
    // Other processes' commits on a shared database reach this one's followers too.
    const remote = yield* RemoteCommits.make(direct, readEvents, followers)
    const follow = follower(readEvents, followers, remote)
    const events = (threadId: ThreadId, afterThreadSequence: number): Stream.Stream<StoredEvent, StorageError> =>
      Stream.asyncPush<StoredEvent, StorageError>(
        (emit) => follow(threadId, afterThreadSequence, (batch) => void emit.array(batch)),
        { bufferSize: "unbounded" }
      )
    return {
      append: appender(direct, followers, yield* Effect.clock),
      receipt: receiptReader(direct.sql),
      readEvents,
      events,
      follow,
      watching: followers.watching,
      awaitRunEnd: runEndWaiter(direct.sql, followers, remote)
    } satisfies EventLogShape
  })
