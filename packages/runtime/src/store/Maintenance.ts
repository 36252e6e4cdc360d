/**
 * What recovery and upkeep read and rewrite across threads: the runs a crash left
 * active, the git checkpoints never taken, and the projections refolded from the log.
 */
import type { Checkpoint, Run, StorageError, ThreadId } from "@skein/domain"
import { Effect } from "effect"
import { fromSqlError } from "./Codec.js"
import { decodeEvent, encodeEvent } from "./EventCodec.js"
import { clearProjections, projectionRows, writeProjections, type ProjectionRows } from "./ProjectionTables.js"
import { activeRunRows, pendingCheckpointRows } from "./ProjectionReads.js"
import type { Sql } from "./StoreDb.js"

export interface MaintenanceShape {
  /** Runs that are queued or running (after a crash: the ones to end as interrupted). */
  readonly activeRuns: Effect.Effect<ReadonlyArray<Run>, StorageError>
  /** Git checkpoints not taken yet: of one thread, or of all (after a crash: the ones never taken). */
  readonly pendingCheckpoints: (threadId: ThreadId | null) => Effect.Effect<ReadonlyArray<Checkpoint>, StorageError>
  /** Clears the projection tables and refolds the whole log into them, in one transaction. */
  readonly rebuildProjections: Effect.Effect<void, StorageError>
}

const rebuildPageSize = 1000

/** Refolds the log into the projection tables, a page of events at a time, in one transaction. */
const rebuild = (sql: Sql): Effect.Effect<void, StorageError> =>
  Effect.gen(function* () {
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

export const make = (sql: Sql): MaintenanceShape => ({
  activeRuns: Effect.withSpan(activeRunRows(sql), "EventStore.activeRuns"),
  // Every run's checkpoint reads it: no span (docs/decisions/0006-spans-off-the-run-path.md).
  pendingCheckpoints: Effect.fnUntraced(function* (threadId: ThreadId | null) {
    return yield* pendingCheckpointRows(sql, threadId)
  }),
  rebuildProjections: Effect.withSpan(rebuild(sql), "EventStore.rebuildProjections")
})
