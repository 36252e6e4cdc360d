/**
 * Reading the projection tables: the rows' decoders, whole lists (threads, transfers,
 * owed restores, active runs, pending checkpoints) and single rows by key, whose cost
 * does not grow with the thread's length. Writing them is ProjectionTables.ts.
 */
import * as Json from "./JsonSql.js"
import type { Dialect, Sql } from "./StoreDb.js"
import {
  AppThread,
  Checkpoint,
  ContextHandoff,
  ContextTransfer,
  ProviderThread,
  Run,
  TurnItem,
  StorageError,
  type ThreadId,
  type TransferStatus
} from "@skein/domain"
import { Effect, Either, Option } from "effect"
import { fromSqlError, jsonDecoder } from "./Codec.js"
import { withActivity } from "./ThreadActivity.js"
import type { Param } from "./ProjectionTables.js"

export const decodeThread = jsonDecoder(AppThread, "thread")
export const decodeRun = jsonDecoder(Run, "run")
export const decodeItem = jsonDecoder(TurnItem, "turn item")
export const decodeProviderThread = jsonDecoder(ProviderThread, "provider thread")
export const decodeTransfer = jsonDecoder(ContextTransfer, "context transfer")
export const decodeHandoff = jsonDecoder(ContextHandoff, "context handoff")
export const decodeCheckpoint = jsonDecoder(Checkpoint, "checkpoint")

export interface DataRow {
  readonly data: string
}

export const decodeAll = <A>(
  rows: ReadonlyArray<DataRow>,
  decode: (json: string, what: string) => Either.Either<A, StorageError>,
  what: string
): Either.Either<Array<A>, StorageError> => {
  const out: Array<A> = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) {
    const decoded = decode(rows[i]!.data, `${what} row ${i + 1}`)
    if (Either.isLeft(decoded)) return Either.left(decoded.left)
    out[i] = decoded.right
  }
  return Either.right(out)
}

export const selectData = (sql: Sql, text: string, params: ReadonlyArray<Param>) => sql.unsafe<DataRow>(text, params)

/** Transfers recorded in other threads' logs whose source is `threadId`. */
export const outgoingTransfers = (
  sql: Sql,
  threadId: ThreadId
): Effect.Effect<ReadonlyArray<ContextTransfer>, StorageError> =>
  selectData(sql, "SELECT data FROM transfers WHERE source_thread_id = ? AND thread_id <> ? ORDER BY rowid", [
    threadId,
    threadId
  ]).pipe(
    Effect.mapError(fromSqlError(`cannot read the transfers of thread ${threadId}`)),
    Effect.flatMap((rows) => decodeAll(rows, decodeTransfer, `transfer from thread ${threadId}`))
  )

/** ` WHERE a AND b …` of the conditions whose parameter is given (nothing when none is), and those parameters. */
const whereOf = (
  conditions: ReadonlyArray<readonly [string, Param | undefined]>
): readonly [string, ReadonlyArray<Param>] => {
  const given = conditions.filter((c): c is readonly [string, Param] => c[1] !== undefined)
  return [given.length > 0 ? ` WHERE ${given.map(([clause]) => clause).join(" AND ")}` : "", given.map(([, p]) => p)]
}

export const listThreadRows = (
  sql: Sql,
  filter: { readonly parentThreadId?: ThreadId | undefined; readonly rootThreadId?: ThreadId | undefined }
): Effect.Effect<ReadonlyArray<AppThread>, StorageError> => {
  const [where, params] = whereOf([
    ["parent_thread_id = ?", filter.parentThreadId],
    ["root_thread_id = ?", filter.rootThreadId]
  ])
  return sql
    .unsafe<DataRow & { readonly activity: string | null }>(
      `SELECT t.data AS data, (${lastRunActivity(sql.dialect)}) AS activity FROM threads t${where} ORDER BY t.created_at, t.rowid`,
      params
    )
    .pipe(
      Effect.mapError(fromSqlError("cannot list threads")),
      Effect.flatMap((rows) =>
        Either.map(decodeAll(rows, decodeThread, "thread"), (threads) =>
          threads.map((thread, i) => withActivity(thread, activityOf(rows[i]!.activity)))
        )
      )
    )
}

/** Which transfers `transfer.list` asks for: with a status (any without), in one lineage (all without). */
export interface TransferFilter {
  readonly status?: TransferStatus | undefined
  readonly rootThreadId?: ThreadId | undefined
}

/** The query of `listTransferRows` and its parameters (a test checks it reads an index). */
export const transferListQuery = (filter: TransferFilter): readonly [string, ReadonlyArray<Param>] => {
  const [where, params] = whereOf([
    ["x.status = ?", filter.status],
    ["x.thread_id IN (SELECT id FROM threads WHERE root_thread_id = ?)", filter.rootThreadId]
  ])
  return [`SELECT x.data AS data FROM transfers x${where} ORDER BY x.created_at, x.rowid`, params]
}

/**
 * Transfers with a status (any without one), recorded in the logs of one lineage's
 * threads (all without a root), oldest first.
 */
export const listTransferRows = (
  sql: Sql,
  filter: TransferFilter
): Effect.Effect<ReadonlyArray<ContextTransfer>, StorageError> =>
  selectData(sql, ...transferListQuery(filter)).pipe(
    Effect.mapError(fromSqlError("cannot list transfers")),
    Effect.flatMap((rows) => decodeAll(rows, decodeTransfer, "transfer"))
  )

/** Threads whose file restore is owed (a rollback recorded it; nothing recorded it finished). */
export const owedRestoreRows = (sql: Sql): Effect.Effect<ReadonlyArray<AppThread>, StorageError> =>
  selectData(
    sql,
    `SELECT data FROM threads WHERE ${Json.field(sql.dialect, "data", "restore.status")} = 'owed'`,
    []
  ).pipe(
    Effect.mapError(fromSqlError("cannot list owed restores")),
    Effect.flatMap((rows) => decodeAll(rows, decodeThread, "thread"))
  )

/** The timestamps of a thread's last run (a JSON array), for a query over `threads t`. */
const lastRunActivity = (dialect: Dialect) => `SELECT ${Json.array(
  dialect,
  ["createdAt", "startedAt", "completedAt", "rolledBackAt"].map((path) => Json.field(dialect, "r.data", path))
)}
  FROM runs r WHERE r.thread_id = t.id ORDER BY r.ordinal DESC LIMIT 1`

const activityOf = (json: string | null): ReadonlyArray<string | null | undefined> =>
  json === null ? [] : (JSON.parse(json) as Array<string | null>)

/** A thread's record with `updatedAt` as `withActivity` gives it. */
export const threadWithActivity = (sql: Sql, threadId: ThreadId, thread: AppThread) =>
  sql
    .unsafe<{ readonly activity: string | null }>(
      `SELECT (${lastRunActivity(sql.dialect)}) AS activity FROM threads t WHERE t.id = ?`,
      [threadId]
    )
    .pipe(Effect.map((rows) => withActivity(thread, activityOf(rows[0]?.activity ?? null))))

export const handoffRow = (sql: Sql, id: string): Effect.Effect<Option.Option<ContextHandoff>, StorageError> =>
  selectData(sql, "SELECT data FROM handoffs WHERE id = ? ORDER BY rowid DESC LIMIT 1", [id]).pipe(
    Effect.mapError(fromSqlError(`cannot read handoff ${id}`)),
    Effect.flatMap((rows) =>
      rows[0] === undefined ? Effect.succeedNone : Effect.map(decodeHandoff(rows[0].data, `handoff ${id}`), Option.some)
    )
  )

export const activeRunRows = (sql: Sql): Effect.Effect<ReadonlyArray<Run>, StorageError> =>
  selectData(sql, "SELECT data FROM runs WHERE status IN ('queued', 'running') ORDER BY thread_id, ordinal", []).pipe(
    Effect.mapError(fromSqlError("cannot read the active runs")),
    Effect.flatMap((rows) => decodeAll(rows, decodeRun, "active run"))
  )

/** The queries of `pendingCheckpointRows` (a test checks that both read the partial index). */
export const pendingCheckpointQueries = {
  ofThread: "SELECT data FROM checkpoints WHERE status = 'pending' AND thread_id = ? ORDER BY run_ordinal",
  ofAll: "SELECT data FROM checkpoints WHERE status = 'pending' ORDER BY thread_id, run_ordinal"
} as const

/**
 * Git checkpoints still pending: of one thread, or of every thread (start-up), oldest
 * first. Through the partial index `checkpoints_pending`, whatever the number of others.
 */
export const pendingCheckpointRows = (
  sql: Sql,
  threadId: ThreadId | null
): Effect.Effect<ReadonlyArray<Checkpoint>, StorageError> =>
  selectData(
    sql,
    threadId === null ? pendingCheckpointQueries.ofAll : pendingCheckpointQueries.ofThread,
    threadId === null ? [] : [threadId]
  ).pipe(
    Effect.mapError(fromSqlError("cannot read the pending checkpoints")),
    Effect.flatMap((rows) => decodeAll(rows, decodeCheckpoint, "pending checkpoint"))
  )

// --- lineage lookups: single rows by key, cost independent of the thread's length ---

const oneRow = <A>(
  sql: Sql,
  text: string,
  params: ReadonlyArray<Param>,
  decode: (json: string, what: string) => Either.Either<A, StorageError>,
  what: string
): Effect.Effect<Option.Option<A>, StorageError> =>
  selectData(sql, text, params).pipe(
    Effect.mapError(fromSqlError(`cannot read ${what}`)),
    Effect.flatMap((rows) =>
      rows[0] === undefined ? Effect.succeedNone : Effect.map(decode(rows[0].data, what), Option.some)
    )
  )

export const runRow = (sql: Sql, threadId: ThreadId, runId: string) =>
  oneRow(sql, "SELECT data FROM runs WHERE id = ? AND thread_id = ?", [runId, threadId], decodeRun, `run ${runId}`)

export const runByOrdinalRow = (sql: Sql, threadId: ThreadId, ordinal: number) =>
  oneRow(
    sql,
    "SELECT data FROM runs WHERE thread_id = ? AND ordinal = ?",
    [threadId, ordinal],
    decodeRun,
    `run ${ordinal} of thread ${threadId}`
  )

/** The newest completed run of the thread that has a ready checkpoint. */
export const latestStableRunRow = (sql: Sql, threadId: ThreadId) =>
  oneRow(
    sql,
    `SELECT r.data AS data FROM runs r
     WHERE r.thread_id = ? AND r.status = 'completed'
       AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = r.thread_id AND c.run_ordinal = r.ordinal AND c.run_id = r.id AND c.status = 'ready')
     ORDER BY r.ordinal DESC LIMIT 1`,
    [threadId],
    decodeRun,
    `the latest stable run of thread ${threadId}`
  )

export const checkpointRow = (sql: Sql, threadId: ThreadId, checkpointId: string) =>
  oneRow(
    sql,
    "SELECT data FROM checkpoints WHERE thread_id = ? AND id = ?",
    [threadId, checkpointId],
    decodeCheckpoint,
    `checkpoint ${checkpointId}`
  )

export const checkpointOfRunRow = (sql: Sql, threadId: ThreadId, runId: string) =>
  oneRow(
    sql,
    // By the run's ordinal (checkpoints_ordinal; run ids are unique across threads).
    `SELECT data FROM checkpoints WHERE thread_id = ? AND run_ordinal = (SELECT ordinal FROM runs WHERE id = ?)
       AND run_id = ? AND status = 'ready' ORDER BY rowid DESC LIMIT 1`,
    [threadId, runId, runId],
    decodeCheckpoint,
    `the checkpoint of run ${runId}`
  )

/** A provider thread's last snapshot (without the runs it served since: those are rows). */
export const providerThreadRow = (sql: Sql, threadId: ThreadId, id: string) =>
  oneRow(
    sql,
    "SELECT data FROM provider_threads WHERE thread_id = ? AND id = ?",
    [threadId, id],
    decodeProviderThread,
    `provider thread ${id}`
  )

/** The turn handle of a run a provider thread served: in its row, or in its snapshot for older runs. */
export const servedTurnRow = (
  sql: Sql,
  threadId: ThreadId,
  id: string,
  ordinal: number
): Effect.Effect<Option.Option<string>, StorageError> =>
  Effect.gen(function* () {
    const rows = yield* sql
      .unsafe<{ readonly turn_ref: string | null }>(
        "SELECT turn_ref FROM provider_thread_runs WHERE thread_id = ? AND provider_thread_id = ? AND ordinal = ?",
        [threadId, id, ordinal]
      )
      .pipe(Effect.mapError(fromSqlError(`cannot read provider thread ${id}`)))
    const fromRow = rows[0]?.turn_ref
    if (fromRow !== undefined && fromRow !== null) return Option.some(fromRow)
    const snapshot = yield* providerThreadRow(sql, threadId, id)
    return Option.flatMap(snapshot, (pt) =>
      Option.fromNullable(pt.nativeTurns.find((t) => t.runOrdinal === ordinal)?.turnRef)
    )
  })

export const threadRow = (sql: Sql, threadId: ThreadId) =>
  oneRow(sql, "SELECT data FROM threads WHERE id = ?", [threadId], decodeThread, `thread ${threadId}`)

/** An item by id: an indexed read with its run, a scan of the thread's items without. */
export const turnItemRow = (sql: Sql, threadId: ThreadId, id: string, runId?: string) =>
  runId === undefined
    ? oneRow(
        sql,
        "SELECT data FROM turn_items WHERE thread_id = ? AND id = ?",
        [threadId, id],
        decodeItem,
        `turn item ${id}`
      )
    : oneRow(
        sql,
        "SELECT data FROM turn_items WHERE thread_id = ? AND run_id = ? AND id = ?",
        [threadId, runId, id],
        decodeItem,
        `turn item ${id}`
      )

/** The approval requests with this approval id, the newest run's first, each run's in seq order. */
export const approvalRequestRows = (
  sql: Sql,
  threadId: ThreadId,
  approvalId: string
): Effect.Effect<ReadonlyArray<TurnItem>, StorageError> =>
  selectData(
    sql,
    `SELECT i.data AS data FROM turn_items i JOIN runs r ON r.thread_id = i.thread_id AND r.id = i.run_id
     WHERE i.thread_id = ? AND i.type = 'approval_request' AND ${Json.field(sql.dialect, "i.data", "approvalId")} = ?
     ORDER BY r.ordinal DESC, i.seq, i.rowid`,
    [threadId, approvalId]
  ).pipe(
    Effect.mapError(fromSqlError(`cannot read the approval requests of thread ${threadId}`)),
    Effect.flatMap((rows) => decodeAll(rows, decodeItem, `approval request of thread ${threadId}`))
  )

/** The subagent_result the parent's log holds from this child, whatever its status (a child has one at most). */
export const subagentResultRow = (sql: Sql, parentId: ThreadId, childId: ThreadId) =>
  oneRow(
    sql,
    `SELECT data FROM transfers
     WHERE thread_id = ? AND type = 'subagent_result' AND source_thread_id = ?
     ORDER BY rowid LIMIT 1`,
    [parentId, childId],
    decodeTransfer,
    `the result of subagent ${childId} in thread ${parentId}`
  )

/** Subagent children, not observe-only, with no subagent_result from them in the parent's log; oldest first. */
export const subagentsWithoutResultRows = (
  sql: Sql,
  parentId: ThreadId
): Effect.Effect<ReadonlyArray<AppThread>, StorageError> =>
  selectData(
    sql,
    `SELECT t.data AS data FROM threads t
     WHERE t.parent_thread_id = ?
       AND ${Json.field(sql.dialect, "t.data", "lineage.relationshipToParent")} = 'subagent'
       AND NOT (${Json.isTrue(sql.dialect, "t.data", "lineage.observeOnly")})
       AND NOT EXISTS (SELECT 1 FROM transfers x
                       WHERE x.thread_id = ? AND x.type = 'subagent_result' AND x.source_thread_id = t.id)
     ORDER BY t.created_at, t.rowid`,
    [parentId, parentId]
  ).pipe(
    Effect.mapError(fromSqlError(`cannot read the subagents of thread ${parentId}`)),
    Effect.flatMap((rows) => decodeAll(rows, decodeThread, "thread"))
  )

/**
 * The commit of the newest git checkpoint of a run that is not rolled back (the first
 * recorded of that run's, as the actor's fold picked it).
 */
export const previousGitCommitRow = (sql: Sql, threadId: ThreadId): Effect.Effect<string | null, StorageError> =>
  sql
    .unsafe<{ readonly commit: string | null }>(
      `SELECT ${Json.field(sql.dialect, "c.data", "commitSha")} AS "commit" FROM checkpoints c
       JOIN runs r ON r.thread_id = c.thread_id AND r.ordinal = c.run_ordinal
       WHERE c.thread_id = ? AND r.status <> 'rolled_back'
         AND ${Json.field(sql.dialect, "c.data", "kind")} = 'git' AND ${Json.field(sql.dialect, "c.data", "commitSha")} IS NOT NULL
       ORDER BY c.run_ordinal DESC, c.rowid ASC LIMIT 1`,
      [threadId]
    )
    .pipe(
      Effect.map((rows) => rows[0]?.commit ?? null),
      Effect.mapError(fromSqlError(`cannot read the checkpoints of thread ${threadId}`))
    )

/** The first recorded ready git checkpoint of run `ordinal` that has a commit. */
export const gitCheckpointOfOrdinalRow = (sql: Sql, threadId: ThreadId, ordinal: number) =>
  oneRow(
    sql,
    `SELECT data FROM checkpoints WHERE thread_id = ? AND run_ordinal = ? AND status = 'ready'
       AND ${Json.field(sql.dialect, "data", "kind")} = 'git' AND ${Json.field(sql.dialect, "data", "commitSha")} IS NOT NULL
     ORDER BY rowid LIMIT 1`,
    [threadId, ordinal],
    decodeCheckpoint,
    `the git checkpoint of run ${ordinal} of thread ${threadId}`
  )
