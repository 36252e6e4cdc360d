/** The store under test over a fresh in-memory database, and table dumps for comparisons. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { Database } from "../../src/store/Database.js"
import { EventStore } from "../../src/store/EventStore.js"
import { projectionTables } from "../../src/store/Migrations.js"

export const storeLayer = (filename = ":memory:") =>
  EventStore.layer.pipe(Layer.provideMerge(Database.layer({ filename })))

/**
 * Every row of every table: rowid included, in rowid order, or for a table WITHOUT ROWID
 * in its key's order.
 */
export const dumpTables = (tables: ReadonlyArray<string> = [...projectionTables, "events", "receipts"]) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.forEach(tables, (table) =>
      Effect.gen(function* () {
        const [listed] = yield* sql.unsafe<{ readonly wr: number }>(`PRAGMA table_list(${table})`)
        if (listed?.wr !== 1)
          return [table, yield* sql.unsafe(`SELECT rowid AS _rowid, * FROM ${table} ORDER BY rowid`)]
        const columns = yield* sql.unsafe<{ readonly name: string; readonly pk: number }>(`PRAGMA table_info(${table})`)
        const key = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk)
        return [table, yield* sql.unsafe(`SELECT * FROM ${table} ORDER BY ${key.map((c) => c.name).join(", ")}`)]
      })
    ).pipe(Effect.map((entries) => Object.fromEntries(entries)))
  )
