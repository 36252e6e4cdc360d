/**
 * The projection tables in SQL: turning (encoded) events into row upserts, and clearing
 * them for a rebuild (reading them back: ProjectionReads.ts). Appending and
 * `rebuildProjections` both write through `writeProjections`, so a rebuild reproduces
 * exactly what appends wrote.
 *
 * Rows are upserts keyed like the fold's collections (runs by ordinal, every other entity
 * by id, all within the thread whose log recorded them). An upsert keeps the row's rowid,
 * so reading in rowid order gives the fold's insertion order.
 */
import type { Sql } from "./StoreDb.js"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import * as Blobs from "./Blobs.js"
import type { StoredForm } from "./EventCodec.js"

export type Param = string | number | null

interface TableSpec {
  readonly columns: ReadonlyArray<string>
  readonly conflict: ReadonlyArray<string>
  /**
   * Columns an entity's later records never change (its identity: a run's id at its
   * ordinal, a thread's lineage, a checkpoint's run, a transfer's ends), left out of
   * the upsert's update. SQLite rewrites every index over a column an UPDATE sets, even
   * to the same value: a run's end rewrote the index of run ids, a frame more per run.
   */
  readonly fixed?: ReadonlyArray<string>
}

const tables = {
  threads: {
    columns: ["id", "parent_thread_id", "root_thread_id", "created_at", "data"],
    conflict: ["id"],
    fixed: ["parent_thread_id", "root_thread_id", "created_at"]
  },
  runs: {
    columns: ["thread_id", "ordinal", "id", "status", "provider", "data"],
    conflict: ["thread_id", "ordinal"],
    fixed: ["id", "provider"]
  },
  turn_items: {
    columns: ["thread_id", "id", "run_id", "seq", "type", "data"],
    conflict: ["thread_id", "run_id", "id"]
  },
  provider_threads: {
    columns: ["thread_id", "id", "provider", "status", "data", "head"],
    conflict: ["thread_id", "id"]
  },
  provider_thread_runs: {
    columns: ["thread_id", "provider_thread_id", "ordinal", "handoff_id", "turn_ref", "status", "updated_at"],
    conflict: ["thread_id", "provider_thread_id", "ordinal"]
  },
  transfers: {
    columns: ["thread_id", "id", "type", "status", "source_thread_id", "target_thread_id", "created_at", "data"],
    conflict: ["thread_id", "id"],
    fixed: ["type", "source_thread_id", "target_thread_id", "created_at"]
  },
  handoffs: {
    columns: ["thread_id", "id", "transfer_id", "status", "target_run_id", "data", "head"],
    conflict: ["thread_id", "id"]
  },
  checkpoints: {
    columns: ["thread_id", "id", "run_id", "run_ordinal", "status", "data"],
    conflict: ["thread_id", "id"],
    fixed: ["run_id", "run_ordinal"]
  },
  // Not a projection: the long strings the rows and the log refer to (Blobs.ts), each
  // written once; never cleared.
  blobs: {
    columns: ["hash", "text"],
    conflict: ["hash"],
    fixed: ["text"]
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
  events: ReadonlyArray<Pick<StoredForm, "encoded" | "data" | "blobs">>,
  rows: ProjectionRows = new Map()
): ProjectionRows => {
  const putBlobs = (blobs: ReadonlyArray<Blobs.Blob>) => {
    for (const b of blobs) put(rows, "blobs", b.hash, [b.hash, b.text])
  }
  /** A head column's JSON, its long strings referenced like the data's. */
  const headJson = (head: unknown) => {
    const stored = Blobs.externalize(head, JSON.stringify(head))
    putBlobs(stored.blobs)
    return Blobs.mark(stored.json, stored.blobs)
  }
  for (const { encoded: event, data, blobs } of events) {
    putBlobs(blobs)
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
        const { coverage, nativeTurns: _, ...rest } = p
        const head = headJson({ ...rest, coverage: { handoffIds: coverage.handoffIds } })
        put(rows, "provider_threads", p.id, [threadId, p.id, p.provider, p.status, data, head])
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
        const { payload: _, summaryText: __, ...head } = h
        put(rows, "handoffs", h.id, [threadId, h.id, h.transferId, h.status, h.targetRunId, data, headJson(head)])
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

const upsertSuffix = (spec: TableSpec): string => {
  const updated = spec.columns.filter((c) => !spec.conflict.includes(c) && !(spec.fixed ?? []).includes(c))
  return ` ON CONFLICT (${spec.conflict.join(", ")}) ${
    updated.length === 0 ? "DO NOTHING" : `DO UPDATE SET ${updated.map((c) => `${c} = excluded.${c}`).join(", ")}`
  }`
}

const suffixes = Object.fromEntries(Object.entries(tables).map(([name, spec]) => [name, upsertSuffix(spec)])) as Record<
  ProjectionTable,
  string
>

/** The statements that upsert the rows: a few multi-row statements per table. */
export const projectionStatements = (rows: ProjectionRows): Array<readonly [string, ReadonlyArray<Param>]> => {
  const statements: Array<readonly [string, ReadonlyArray<Param>]> = []
  for (const [table, byKey] of rows) {
    const spec = tables[table]
    for (const chunk of chunks([...byKey.values()], maxRowsPerStatement)) {
      statements.push([multiRowInsert(table, spec.columns, chunk.length, suffixes[table]), chunk.flat()])
    }
  }
  return statements
}

/** Upserts the rows. Runs inside the caller's transaction. */
export const writeProjections = (sql: Sql, rows: ProjectionRows): Effect.Effect<void, SqlError> =>
  Effect.forEach(projectionStatements(rows), ([text, params]) => sql.unsafe(text, params), { discard: true })

export const chunks = <A>(all: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  if (all.length === 0) return []
  if (all.length <= size) return [all]
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size))
  return out
}

/** Deletes every projection row (inside the caller's transaction). */
export const clearProjections = (sql: Sql): Effect.Effect<void, SqlError> =>
  Effect.forEach(
    Object.keys(tables).filter((table) => table !== "blobs"),
    (table) => sql.unsafe(`DELETE FROM ${table}`),
    { discard: true }
  )
