/** The store under test over a fresh in-memory database, and table dumps for comparisons. */
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { Database } from "../../src/store/Database.js"
import { EventStore } from "../../src/store/EventStore.js"
import { projectionTables } from "../../src/store/Migrations.js"

export const storeLayer = (filename = ":memory:") =>
  EventStore.layer.pipe(Layer.provideMerge(Database.layer({ filename })))

/** Every row of every table (rowid included), in rowid order. */
export const dumpTables = (tables: ReadonlyArray<string> = [...projectionTables, "events", "receipts"]) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.forEach(tables, (table) =>
      Effect.map(sql.unsafe(`SELECT rowid AS _rowid, * FROM ${table} ORDER BY rowid`), (rows) => [table, rows] as const)
    ).pipe(Effect.map((entries) => Object.fromEntries(entries)))
  )
