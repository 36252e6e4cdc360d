/**
 * Runs waiting for their thread (`run.start` with `whenBusy: queue`): each holds the
 * start's request and the run id its caller was given, in the order they came. A
 * queued run is not in the thread's log yet (the log is history; this is a promise):
 * it joins the log when its start is appended, and that append removes it from here in
 * the same transaction (`AppendInput.dequeue`), so a crash can neither lose it nor
 * start it twice.
 */
import type { CommandId, ProviderName, Run, RunId, ThreadId } from "@skein/domain"
import { StorageError } from "@skein/domain"
import { Effect, Schema } from "effect"
import { fromSqlError } from "./Codec.js"
import type { CommandReceipt } from "./EventLog.js"
import type { StoreDbShape } from "./StoreDb.js"

/** What a queued start asked for: `run.start`'s fields that decide the run. */
export const QueuedRequest = Schema.Struct({
  provider: Schema.String,
  message: Schema.String,
  model: Schema.NullOr(Schema.String),
  cleanContext: Schema.Boolean,
  handoffBudgetTokens: Schema.NullOr(Schema.Number)
})
export type QueuedRequest = typeof QueuedRequest.Type

export interface QueuedRun {
  readonly runId: RunId
  readonly threadId: ThreadId
  /** 1 for the next to start. */
  readonly position: number
  readonly request: QueuedRequest & { readonly provider: ProviderName }
  readonly commandId: CommandId | null
  readonly createdAt: string
}

/** A queued run as a run: `queued`, at the ordinal it will take (unless a rollback intervenes) after `runCount` runs. */
export const queuedRunOf = (entry: QueuedRun, runCount: number): Run => ({
  id: entry.runId,
  threadId: entry.threadId,
  ordinal: runCount + entry.position,
  provider: entry.request.provider,
  model: entry.request.model,
  message: entry.request.message,
  status: "queued",
  providerThreadId: null,
  contextHandoffId: null,
  contextResolution: null,
  failure: null,
  commandId: entry.commandId,
  createdAt: entry.createdAt,
  startedAt: null,
  completedAt: null
})

export interface RunQueueShape {
  /** Adds a run at the end of its thread's queue, with the command's receipt, in one transaction. */
  readonly enqueue: (entry: {
    readonly runId: RunId
    readonly threadId: ThreadId
    readonly request: QueuedRequest
    readonly commandId: CommandId | null
    readonly createdAt: string
    readonly receipt: CommandReceipt | undefined
  }) => Effect.Effect<QueuedRun, StorageError>
  /** The thread's queued runs, the next first. */
  readonly of: (threadId: ThreadId) => Effect.Effect<ReadonlyArray<QueuedRun>, StorageError>
  /** The ids of the thread's queued runs, the next first (nothing decoded: cheap however long the queue). */
  readonly ids: (threadId: ThreadId) => Effect.Effect<ReadonlyArray<RunId>, StorageError>
  /** One queued run with its place in its thread's queue, or undefined when it is not queued. */
  readonly entry: (runId: RunId) => Effect.Effect<QueuedRun | undefined, StorageError>
  /** Threads with a run queued. */
  readonly threads: Effect.Effect<ReadonlyArray<ThreadId>, StorageError>
  /** Takes a queued run out without starting it (its start was refused for good). */
  readonly drop: (runId: RunId) => Effect.Effect<void, StorageError>
}

interface Row {
  readonly run_id: string
  readonly thread_id: string
  readonly request: string
  readonly command_id: string | null
  readonly created_at: string
}

const decodeRequest = Schema.decodeUnknownEither(Schema.parseJson(QueuedRequest))

const toQueued = (row: Row, position: number): Effect.Effect<QueuedRun, StorageError> => {
  const request = decodeRequest(row.request)
  return request._tag === "Left"
    ? Effect.fail(new StorageError({ detail: `queued run ${row.run_id} holds an invalid request` }))
    : Effect.succeed({
        runId: row.run_id as RunId,
        threadId: row.thread_id as ThreadId,
        position,
        request: request.right as QueuedRun["request"],
        commandId: row.command_id as CommandId | null,
        createdAt: row.created_at
      })
}

export const make = (direct: StoreDbShape): RunQueueShape => {
  const { sql } = direct
  const of = (threadId: ThreadId) =>
    sql
      .unsafe<Row>(
        "SELECT run_id, thread_id, request, command_id, created_at FROM queued_runs WHERE thread_id = ? ORDER BY position",
        [threadId]
      )
      .pipe(
        Effect.mapError(fromSqlError(`cannot read the queued runs of thread ${threadId}`)),
        Effect.flatMap((rows) => Effect.forEach(rows, (row, i) => toQueued(row, i + 1)))
      )
  return {
    enqueue: (entry) =>
      direct
        .transaction<number, never>(function* (db) {
          yield* db.lockThread(entry.threadId)
          const position =
            (yield* db.all<{ readonly n: number }>(
              "SELECT COALESCE(MAX(position), 0) + 1 AS n FROM queued_runs WHERE thread_id = ?",
              [entry.threadId]
            ))[0]?.n ?? 1
          yield* db.run(
            "INSERT INTO queued_runs (run_id, thread_id, position, request, command_id, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [entry.runId, entry.threadId, position, JSON.stringify(entry.request), entry.commandId, entry.createdAt]
          )
          if (entry.receipt !== undefined) {
            const { commandId, method, payloadHash, result } = entry.receipt
            yield* db.run(
              "INSERT INTO receipts (command_id, method, payload_hash, result, created_at) VALUES (?, ?, ?, ?, ?)",
              [commandId, method, payloadHash, JSON.stringify(result), entry.createdAt]
            )
          }
          return (yield* db.all<{ readonly n: number }>("SELECT COUNT(*) AS n FROM queued_runs WHERE thread_id = ?", [
            entry.threadId
          ]))[0]!.n
        })
        .pipe(
          Effect.mapError(fromSqlError(`cannot queue a run on thread ${entry.threadId}`)),
          Effect.map((position): QueuedRun => ({
            runId: entry.runId,
            threadId: entry.threadId,
            position,
            request: entry.request as QueuedRun["request"],
            commandId: entry.commandId,
            createdAt: entry.createdAt
          }))
        ),
    of,
    ids: (threadId) =>
      sql
        .unsafe<{ readonly run_id: string }>("SELECT run_id FROM queued_runs WHERE thread_id = ? ORDER BY position", [
          threadId
        ])
        .pipe(
          Effect.mapError(fromSqlError(`cannot read the queued runs of thread ${threadId}`)),
          Effect.map((rows) => rows.map((row) => row.run_id as RunId))
        ),
    entry: (runId) =>
      sql
        .unsafe<Row & { readonly place: number }>(
          `SELECT q.run_id, q.thread_id, q.request, q.command_id, q.created_at,
             (SELECT COUNT(*) FROM queued_runs p WHERE p.thread_id = q.thread_id AND p.position <= q.position) AS place
           FROM queued_runs q WHERE q.run_id = ?`,
          [runId]
        )
        .pipe(
          Effect.mapError(fromSqlError(`cannot read queued run ${runId}`)),
          Effect.flatMap(([row]) => (row === undefined ? Effect.succeed(undefined) : toQueued(row, row.place)))
        ),
    threads: sql.unsafe<{ readonly thread_id: string }>("SELECT DISTINCT thread_id FROM queued_runs").pipe(
      Effect.mapError(fromSqlError("cannot read which threads have runs queued")),
      Effect.map((rows) => rows.map((row) => row.thread_id as ThreadId))
    ),
    drop: (runId) =>
      sql
        .unsafe("DELETE FROM queued_runs WHERE run_id = ?", [runId])
        .pipe(Effect.mapError(fromSqlError(`cannot take run ${runId} out of its queue`)), Effect.asVoid)
  }
}
