/**
 * The SQLite database: one connection (WAL, see Sqlite.ts), with every migration
 * applied before the layer is ready.
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { StorageError } from "@skein/domain"
import { Cause, Effect, Layer } from "effect"
import { loader, migrations } from "./Migrations.js"
import * as Sqlite from "./Sqlite.js"
import type { SqliteDirect } from "./Sqlite.js"

export interface DatabaseOptions {
  /** A file path, or `:memory:` for a private in-memory database (tests). */
  readonly filename: string
}

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause
    return cause instanceof Error && cause.message !== error.message
      ? `${error.message}: ${cause.message}`
      : error.message
  }
  return String(error)
}

/** Creates the directory the database file lives in, so that `--db some/new/dir/x.db` works. */
const ensureDirectory = (filename: string) =>
  Layer.effectDiscard(
    Sqlite.isMemory(filename)
      ? Effect.void
      : Effect.try({
          try: () => {
            mkdirSync(dirname(filename), { recursive: true })
          },
          catch: (error) =>
            new StorageError({
              detail: `cannot create the directory of database ${filename}: ${describe(error)}`,
              startup: true
            })
        })
  )

/**
 * `synchronous = NORMAL` is the documented safe setting under WAL: a power loss may drop
 * the last transactions but never corrupts the database. The page cache may grow to
 * 32 MiB (SQLite's default is 2 MiB): the indexes a run touches on a long thread stay
 * in memory (`npm run bench`, lineage: run.start at run 9,901 of one thread went from
 * 1.37x to 1.23x the first 1,000 runs' average).
 */
const pragmas = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all([
      sql.unsafe("PRAGMA synchronous = NORMAL"),
      sql.unsafe("PRAGMA busy_timeout = 5000"),
      sql.unsafe("PRAGMA cache_size = -32768")
    ])
  )
)

/**
 * The version of what this Skein writes into a database beyond its tables (the event
 * types in the log): kept in SQLite's `user_version`. A Skein that adds an event type
 * raises it, so that an older one refuses the file instead of misreading it.
 */
export const STORE_FORMAT_VERSION = 2

const latestMigration = Object.keys(migrations).sort().at(-1)!

/**
 * Refuses a database that a newer Skein wrote (a migration or a format this one does
 * not know), before migrating or writing anything; records this format otherwise.
 */
const compatibility = (filename: string) => {
  const newer = (what: string) =>
    new StorageError({
      detail: `database ${filename} was written by a newer version of Skein (${what}). Upgrade Skein, or give it another database file`,
      startup: true
    })
  const check = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [{ user_version: format } = { user_version: 0 }] = yield* sql.unsafe<{ readonly user_version: number }>(
      "PRAGMA user_version"
    )
    if (format > STORE_FORMAT_VERSION) {
      return yield* newer(`its store format is ${format}; this Skein reads up to ${STORE_FORMAT_VERSION}`)
    }
    const tables = yield* sql.unsafe<{ readonly name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'effect_sql_migrations'"
    )
    if (tables.length === 0) return
    const applied = yield* sql.unsafe<{ readonly migration_id: number; readonly name: string }>(
      "SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id DESC LIMIT 1"
    )
    const last = applied[0]
    if (last !== undefined && last.migration_id > Number.parseInt(latestMigration, 10)) {
      const id = String(last.migration_id).padStart(4, "0")
      return yield* newer(`its schema is at migration ${id}_${last.name}; this Skein knows up to ${latestMigration}`)
    }
  })
  const record = Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe(`PRAGMA user_version = ${STORE_FORMAT_VERSION}`)
  )
  return { check: Layer.effectDiscard(check), record: Layer.effectDiscard(record) }
}

/**
 * SqlClient and SqliteDirect over `options.filename`, migrated to the latest schema.
 * Fails with a StorageError naming the file when it cannot be opened or migrated.
 */
const layer = (options: DatabaseOptions): Layer.Layer<SqlClient.SqlClient | SqliteDirect, StorageError> => {
  const client = Sqlite.layer(options.filename).pipe(Layer.provide(ensureDirectory(options.filename)))
  const { check, record } = compatibility(options.filename)
  // In order: refuse a newer database, migrate, then record this format.
  const migrate = record.pipe(
    Layer.provide(Layer.effectDiscard(Migrator.make({})({ loader })).pipe(Layer.provide(check)))
  )
  return Layer.provideMerge(Layer.merge(pragmas, migrate), client).pipe(
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      return Layer.fail(
        error instanceof StorageError
          ? error
          : new StorageError({
              detail: `cannot open or migrate database ${options.filename}: ${describe(error)}`,
              startup: true
            })
      )
    })
  )
}

/** `Database.layer({ filename })`: the migrated SQLite database. */
export const Database = { layer } as const
