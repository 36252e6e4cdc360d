/**
 * The projection tables in SQL: turning (encoded) events into row upserts, and reading
 * rows back into a ThreadState. Appending and `rebuildProjections` both write through
 * `writeProjections`, so a rebuild reproduces exactly what appends wrote.
 *
 * Rows are upserts keyed like the fold's collections (runs by ordinal, every other entity
 * by id, all within the thread whose log recorded them). An upsert keeps the row's rowid,
 * so reading in rowid order gives the fold's insertion order.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import {
  AppThread,
  Checkpoint,
  ContextHandoff,
  ContextTransfer,
  ProviderThread,
  Run,
  TurnItem,
  ProviderThreadStatus,
  StorageError,
  type ContextHandoffId,
  type ProviderThreadId,
  type ThreadId
} from "@skein/domain"
import { Effect, Either, Option, Schema } from "effect"
import { fromSqlError, jsonDecoder } from "./Codec.js"
import type { StoredForm } from "./EventCodec.js"
import { emptyThreadState, type ThreadState } from "./ThreadState.js"

type Param = string | number | null

interface TableSpec {
  readonly columns: ReadonlyArray<string>
  readonly conflict: ReadonlyArray<string>
}

const tables = {
  threads: { columns: ["id", "parent_thread_id", "root_thread_id", "created_at", "data"], conflict: ["id"] },
  runs: { columns: ["thread_id", "ordinal", "id", "status", "provider", "data"], conflict: ["thread_id", "ordinal"] },
  turn_items: { columns: ["thread_id", "id", "run_id", "seq", "type", "data"], conflict: ["thread_id", "id"] },
  provider_threads: { columns: ["thread_id", "id", "provider", "status", "data"], conflict: ["thread_id", "id"] },
  provider_thread_runs: {
    columns: ["thread_id", "provider_thread_id", "ordinal", "handoff_id", "turn_ref", "status", "updated_at"],
    conflict: ["thread_id", "provider_thread_id", "ordinal"]
  },
  transfers: {
    columns: ["thread_id", "id", "type", "status", "source_thread_id", "target_thread_id", "created_at", "data"],
    conflict: ["thread_id", "id"]
  },
  handoffs: { columns: ["thread_id", "id", "transfer_id", "status", "data"], conflict: ["thread_id", "id"] },
  checkpoints: {
    columns: ["thread_id", "id", "run_id", "run_ordinal", "status", "data"],
    conflict: ["thread_id", "id"]
  }
} as const satisfies Record<string, TableSpec>

export type ProjectionTable = keyof typeof tables

/** Rows to upsert per table; within a table, keyed so that the last write of a key wins. */
export type ProjectionRows = Map<ProjectionTable, Map<string, ReadonlyArray<Param>>>

const put = (rows: ProjectionRows, table: ProjectionTable, key: string, row: ReadonlyArray<Param>) => {
  let byKey = rows.get(table)
  if (byKey === undefined) {
    byKey = new Map()
    rows.set(table, byKey)
  }
  // Map.set on an existing key keeps its position: first-write order, last-write value,
  // which is what row-by-row upserts would leave behind.
  byKey.set(key, row)
}

/** The projection rows of a batch of one thread's events (pure). */
export const projectionRows = (
  threadId: string,
  events: ReadonlyArray<Pick<StoredForm, "encoded" | "data">>,
  rows: ProjectionRows = new Map()
): ProjectionRows => {
  for (const { encoded: event, data } of events) {
    switch (event._tag) {
      case "ThreadCreated":
      case "ThreadUpdated": {
        const t = event.thread
        put(rows, "threads", "", [threadId, t.lineage.parentThreadId, t.lineage.rootThreadId, t.createdAt, data])
        break
      }
      case "RunStarted":
      case "RunUpdated":
      case "RunEnded": {
        const r = event.run
        put(rows, "runs", String(r.ordinal), [threadId, r.ordinal, r.id, r.status, r.provider, data])
        break
      }
      case "TurnItemRecorded": {
        const i = event.item
        put(rows, "turn_items", i.id, [threadId, i.id, i.runId, i.seq, i.type, data])
        break
      }
      case "ProviderThreadRecorded": {
        const p = event.providerThread
        put(rows, "provider_threads", p.id, [threadId, p.id, p.provider, p.status, data])
        break
      }
      case "ProviderThreadServed": {
        put(rows, "provider_thread_runs", `${event.providerThreadId}/${event.runOrdinal}`, [
          threadId,
          event.providerThreadId,
          event.runOrdinal,
          event.handoffId,
          event.turnRef,
          event.status,
          event.updatedAt
        ])
        break
      }
      case "TransferRecorded": {
        const x = event.transfer
        put(rows, "transfers", x.id, [
          threadId,
          x.id,
          x.type,
          x.status,
          x.sourceThreadId,
          x.targetThreadId,
          x.createdAt,
          data
        ])
        break
      }
      case "HandoffRecorded": {
        const h = event.handoff
        put(rows, "handoffs", h.id, [threadId, h.id, h.transferId, h.status, data])
        break
      }
      case "CheckpointRecorded": {
        const c = event.checkpoint
        put(rows, "checkpoints", c.id, [threadId, c.id, c.runId, c.runOrdinal, c.status, data])
        break
      }
    }
  }
  return rows
}

/** Rows per statement: 200 rows × at most 8 columns stays far below SQLite's variable limit. */
export const maxRowsPerStatement = 200

/** `INSERT … VALUES (?, …), … <suffix>` for n rows, built once per shape and reused. */
const statementCache = new Map<string, string>()
export const multiRowInsert = (table: string, columns: ReadonlyArray<string>, n: number, suffix = ""): string => {
  const cacheKey = `${table}|${n}|${suffix}`
  let text = statementCache.get(cacheKey)
  if (text === undefined) {
    const tuple = `(${columns.map(() => "?").join(", ")})`
    text = `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${Array.from({ length: n }, () => tuple).join(", ")}${suffix}`
    statementCache.set(cacheKey, text)
  }
  return text
}

const upsertSuffix = (spec: TableSpec): string =>
  ` ON CONFLICT (${spec.conflict.join(", ")}) DO UPDATE SET ${spec.columns
    .filter((c) => !spec.conflict.includes(c))
    .map((c) => `${c} = excluded.${c}`)
    .join(", ")}`

const suffixes = Object.fromEntries(Object.entries(tables).map(([name, spec]) => [name, upsertSuffix(spec)])) as Record<
  ProjectionTable,
  string
>

/** Upserts the rows, a few multi-row statements per table. Runs inside the caller's transaction. */
export const writeProjections = (sql: SqlClient, rows: ProjectionRows): Effect.Effect<void, SqlError> =>
  Effect.forEach(
    rows,
    ([table, byKey]) => {
      const spec = tables[table]
      const all = [...byKey.values()]
      return Effect.forEach(
        chunks(all, maxRowsPerStatement),
        (chunk) => sql.unsafe(multiRowInsert(table, spec.columns, chunk.length, suffixes[table]), chunk.flat()),
        { discard: true }
      )
    },
    { discard: true }
  )

export const chunks = <A>(all: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  if (all.length === 0) return []
  if (all.length <= size) return [all]
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size))
  return out
}

// --- reading ---------------------------------------------------------------------------

const decodeThread = jsonDecoder(AppThread, "thread")
const decodeRun = jsonDecoder(Run, "run")
const decodeItem = jsonDecoder(TurnItem, "turn item")
const decodeProviderThread = jsonDecoder(ProviderThread, "provider thread")
const decodeTransfer = jsonDecoder(ContextTransfer, "context transfer")
const decodeHandoff = jsonDecoder(ContextHandoff, "context handoff")
const decodeCheckpoint = jsonDecoder(Checkpoint, "checkpoint")

interface DataRow {
  readonly data: string
}

const decodeAll = <A>(
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

const selectData = (sql: SqlClient, text: string, params: ReadonlyArray<Param>) => sql.unsafe<DataRow>(text, params)

/**
 * A thread's state from the projection tables. Reads in one transaction, so that a
 * concurrent append is either fully in or fully out.
 */
export const loadThreadState = (
  sql: SqlClient,
  threadId: ThreadId
): Effect.Effect<Option.Option<ThreadState>, StorageError> =>
  Effect.gen(function* () {
    const threadRows = yield* selectData(sql, "SELECT data FROM threads WHERE id = ?", [threadId])
    const threadRow = threadRows[0]
    if (threadRow === undefined) return Option.none()
    const where = "WHERE thread_id = ?"
    const [runRows, itemRows, ptRows, servedRows, transferRows, handoffRows, checkpointRows, lastRows] =
      yield* Effect.all([
        selectData(sql, `SELECT data FROM runs ${where} ORDER BY ordinal`, [threadId]),
        selectData(sql, `SELECT data FROM turn_items ${where} ORDER BY rowid`, [threadId]),
        selectData(sql, `SELECT data FROM provider_threads ${where} ORDER BY rowid`, [threadId]),
        sql.unsafe<ServedRow>(
          `SELECT provider_thread_id, ordinal, handoff_id, turn_ref, status, updated_at FROM provider_thread_runs ${where} ORDER BY provider_thread_id, ordinal`,
          [threadId]
        ),
        selectData(sql, `SELECT data FROM transfers ${where} ORDER BY rowid`, [threadId]),
        selectData(sql, `SELECT data FROM handoffs ${where} ORDER BY rowid`, [threadId]),
        selectData(sql, `SELECT data FROM checkpoints ${where} ORDER BY rowid`, [threadId]),
        sql.unsafe<{ readonly last: number }>(
          "SELECT COALESCE(MAX(thread_sequence), 0) AS last FROM events WHERE thread_id = ?",
          [threadId]
        )
      ])
    const what = `thread ${threadId}:`
    const thread = yield* decodeThread(threadRow.data, `${what} thread row`)
    const state = emptyThreadState(thread)
    for (const run of yield* decodeAll(runRows, decodeRun, `${what} run`)) state.runs[run.ordinal - 1] = run
    for (const item of yield* decodeAll(itemRows, decodeItem, `${what} turn item`)) {
      const list = state.items.get(item.runId)
      if (list === undefined) state.items.set(item.runId, [item])
      else list.push(item)
    }
    for (const list of state.items.values()) sortBySeq(list)
    for (const pt of yield* decodeAll(ptRows, decodeProviderThread, `${what} provider thread`)) {
      state.providerThreads.set(pt.id, pt)
    }
    // Rows come ordered by provider thread, then ordinal: apply each one's rows at once.
    for (let i = 0; i < servedRows.length;) {
      const id = servedRows[i]!.provider_thread_id
      let j = i
      while (j < servedRows.length && servedRows[j]!.provider_thread_id === id) j++
      const pt = state.providerThreads.get(id as ProviderThreadId)
      if (pt !== undefined) state.providerThreads.set(pt.id, yield* withServedRows(pt, servedRows.slice(i, j), what))
      i = j
    }
    for (const t of yield* decodeAll(transferRows, decodeTransfer, `${what} transfer`)) state.transfers.set(t.id, t)
    for (const h of yield* decodeAll(handoffRows, decodeHandoff, `${what} handoff`)) state.handoffs.set(h.id, h)
    for (const c of yield* decodeAll(checkpointRows, decodeCheckpoint, `${what} checkpoint`)) {
      state.checkpoints.set(c.id, c)
    }
    state.lastThreadSequence = lastRows[0]?.last ?? 0
    return Option.some(state)
  }).pipe(sql.withTransaction, Effect.mapError(fromSqlError(`cannot load thread ${threadId}`)))

/**
 * A provider thread's record is its last snapshot; the runs it served since are rows.
 * Every later snapshot holds every run served before it, and ordinals only grow, so the
 * rows past the snapshot's last run are exactly the newer ones, in order: applied in one
 * pass (the same result as folding each ProviderThreadServed event in turn).
 */
const withServedRows = (
  pt: ProviderThread,
  rows: ReadonlyArray<ServedRow>,
  what: string
): Effect.Effect<ProviderThread, StorageError> => {
  const last = pt.lastRunOrdinal ?? 0
  const newer = rows.filter((row) => row.ordinal > last)
  if (newer.length === 0) return Effect.succeed(pt)
  const native = [...pt.coverage.nativeRunOrdinals]
  const turns = [...pt.nativeTurns]
  const handoffIds = [...pt.coverage.handoffIds]
  const received = [...pt.handoffIds]
  for (const row of newer) {
    native.push(row.ordinal)
    if (row.turn_ref !== null) turns.push({ runOrdinal: row.ordinal, turnRef: row.turn_ref })
    const handoffId = row.handoff_id as ContextHandoffId | null
    if (handoffId !== null && !handoffIds.includes(handoffId)) {
      handoffIds.push(handoffId)
      received.push(handoffId)
    }
  }
  const final = newer[newer.length - 1]!
  const status = Schema.decodeUnknownEither(ProviderThreadStatus)(final.status)
  if (Either.isLeft(status)) {
    return Effect.fail(
      new StorageError({ detail: `${what} provider thread run row ${final.ordinal}: bad status ${final.status}` })
    )
  }
  return Effect.succeed({
    ...pt,
    firstRunOrdinal: pt.firstRunOrdinal ?? newer[0]!.ordinal,
    lastRunOrdinal: final.ordinal,
    handoffIds: received,
    coverage: { nativeRunOrdinals: native, handoffIds },
    nativeTurns: turns,
    status: status.right,
    updatedAt: final.updated_at
  })
}

interface ServedRow {
  readonly provider_thread_id: string
  readonly ordinal: number
  readonly handoff_id: string | null
  readonly turn_ref: string | null
  readonly status: string
  readonly updated_at: string
}

/** Stable sort by seq (rows arrive in first-write order; V8's sort is stable). */
const sortBySeq = (list: Array<{ readonly seq: number }>) => {
  for (let i = 1; i < list.length; i++) {
    if (list[i - 1]!.seq > list[i]!.seq) {
      list.sort((a, b) => a.seq - b.seq)
      return
    }
  }
}

/** Transfers recorded in other threads' logs whose source is `threadId`. */
export const outgoingTransfers = (
  sql: SqlClient,
  threadId: ThreadId
): Effect.Effect<ReadonlyArray<ContextTransfer>, StorageError> =>
  selectData(sql, "SELECT data FROM transfers WHERE source_thread_id = ? AND thread_id <> ? ORDER BY rowid", [
    threadId,
    threadId
  ]).pipe(
    Effect.mapError(fromSqlError(`cannot read the transfers of thread ${threadId}`)),
    Effect.flatMap((rows) => decodeAll(rows, decodeTransfer, `transfer from thread ${threadId}`))
  )

export const listThreadRows = (
  sql: SqlClient,
  filter: { readonly parentThreadId?: ThreadId | undefined; readonly rootThreadId?: ThreadId | undefined }
): Effect.Effect<ReadonlyArray<AppThread>, StorageError> => {
  const clauses: Array<string> = []
  const params: Array<Param> = []
  if (filter.parentThreadId !== undefined) {
    clauses.push("parent_thread_id = ?")
    params.push(filter.parentThreadId)
  }
  if (filter.rootThreadId !== undefined) {
    clauses.push("root_thread_id = ?")
    params.push(filter.rootThreadId)
  }
  const where = clauses.length > 0 ? ` WHERE ${clauses.join(" AND ")}` : ""
  return selectData(sql, `SELECT data FROM threads${where} ORDER BY created_at, rowid`, params).pipe(
    Effect.mapError(fromSqlError("cannot list threads")),
    Effect.flatMap((rows) => decodeAll(rows, decodeThread, "thread"))
  )
}

export const handoffRow = (sql: SqlClient, id: string): Effect.Effect<Option.Option<ContextHandoff>, StorageError> =>
  selectData(sql, "SELECT data FROM handoffs WHERE id = ? ORDER BY rowid DESC LIMIT 1", [id]).pipe(
    Effect.mapError(fromSqlError(`cannot read handoff ${id}`)),
    Effect.flatMap((rows) =>
      rows[0] === undefined ? Effect.succeedNone : Effect.map(decodeHandoff(rows[0].data, `handoff ${id}`), Option.some)
    )
  )

export const activeRunRows = (sql: SqlClient): Effect.Effect<ReadonlyArray<Run>, StorageError> =>
  selectData(sql, "SELECT data FROM runs WHERE status IN ('queued', 'running') ORDER BY thread_id, ordinal", []).pipe(
    Effect.mapError(fromSqlError("cannot read the active runs")),
    Effect.flatMap((rows) => decodeAll(rows, decodeRun, "active run"))
  )

/** Deletes every projection row (inside the caller's transaction). */
export const clearProjections = (sql: SqlClient): Effect.Effect<void, SqlError> =>
  Effect.forEach(Object.keys(tables), (table) => sql.unsafe(`DELETE FROM ${table}`), { discard: true })

// --- lineage lookups: single rows by key, cost independent of the thread's length ---

const oneRow = <A>(
  sql: SqlClient,
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

export const runRow = (sql: SqlClient, threadId: ThreadId, runId: string) =>
  oneRow(sql, "SELECT data FROM runs WHERE id = ? AND thread_id = ?", [runId, threadId], decodeRun, `run ${runId}`)

export const runByOrdinalRow = (sql: SqlClient, threadId: ThreadId, ordinal: number) =>
  oneRow(
    sql,
    "SELECT data FROM runs WHERE thread_id = ? AND ordinal = ?",
    [threadId, ordinal],
    decodeRun,
    `run ${ordinal} of thread ${threadId}`
  )

/** The newest completed run of the thread that has a ready checkpoint. */
export const latestStableRunRow = (sql: SqlClient, threadId: ThreadId) =>
  oneRow(
    sql,
    `SELECT r.data AS data FROM runs r
     WHERE r.thread_id = ? AND r.status = 'completed'
       AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = r.thread_id AND c.run_id = r.id AND c.status = 'ready')
     ORDER BY r.ordinal DESC LIMIT 1`,
    [threadId],
    decodeRun,
    `the latest stable run of thread ${threadId}`
  )

export const checkpointRow = (sql: SqlClient, threadId: ThreadId, checkpointId: string) =>
  oneRow(
    sql,
    "SELECT data FROM checkpoints WHERE thread_id = ? AND id = ?",
    [threadId, checkpointId],
    decodeCheckpoint,
    `checkpoint ${checkpointId}`
  )

export const checkpointOfRunRow = (sql: SqlClient, threadId: ThreadId, runId: string) =>
  oneRow(
    sql,
    "SELECT data FROM checkpoints WHERE thread_id = ? AND run_id = ? AND status = 'ready' ORDER BY rowid DESC LIMIT 1",
    [threadId, runId],
    decodeCheckpoint,
    `the checkpoint of run ${runId}`
  )

/** A provider thread's last snapshot (without the runs it served since: those are rows). */
export const providerThreadRow = (sql: SqlClient, threadId: ThreadId, id: string) =>
  oneRow(
    sql,
    "SELECT data FROM provider_threads WHERE thread_id = ? AND id = ?",
    [threadId, id],
    decodeProviderThread,
    `provider thread ${id}`
  )

/** The turn handle of a run a provider thread served: in its row, or in its snapshot for older runs. */
export const servedTurnRow = (
  sql: SqlClient,
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

export const threadRow = (sql: SqlClient, threadId: ThreadId) =>
  oneRow(sql, "SELECT data FROM threads WHERE id = ?", [threadId], decodeThread, `thread ${threadId}`)
