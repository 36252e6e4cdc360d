/**
 * The SQLite database: one connection (WAL, see Sqlite.ts), with every migration
 * applied before the layer is ready.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { type DatabaseInUse, StorageError } from "@skein/domain"
import { Cause, Effect, Layer } from "effect"
import * as DatabaseLock from "./DatabaseLock.js"
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

/** The files SQLite keeps for a database: the file itself, its WAL and shared memory, a rollback journal. */
const filesOf = (filename: string) => [filename, `${filename}-wal`, `${filename}-shm`, `${filename}-journal`]

/**
 * Readies the database file: creates its directory (so that `--db some/new/dir/x.db`
 * works), creates the file itself readable by its owner only (it holds every message;
 * SQLite gives the WAL and shared-memory files the main file's mode), and takes group
 * and other permissions off an existing database's files, saying so. The file is never
 * opened when it exists: closing a descriptor would drop the locks of another
 * connection of this process to it.
 */
const prepareFile = (filename: string) =>
  Layer.effectDiscard(
    Sqlite.isMemory(filename)
      ? Effect.void
      : Effect.flatMap(
          Effect.try({
            try: () => {
              mkdirSync(dirname(filename), { recursive: true })
              try {
                closeSync(openSync(filename, "wx", 0o600))
              } catch (error) {
                if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
              }
              return filesOf(filename).flatMap((file) => {
                const stat = statSync(file, { throwIfNoEntry: false })
                if (stat === undefined || (stat.mode & 0o077) === 0) return []
                chmodSync(file, stat.mode & 0o700)
                return [`${file} (was ${(stat.mode & 0o777).toString(8)})`]
              })
            },
            catch: (error) =>
              new StorageError({
                detail: `cannot create database ${filename} or make it private: ${describe(error)}`,
                startup: true
              })
          }),
          (tightened) =>
            tightened.length === 0
              ? Effect.void
              : Effect.logWarning(
                  `made the database files readable by their owner only (mode 600): ${tightened.join(", ")}`
                )
        )
  )

/**
 * `synchronous = NORMAL` is the documented safe setting under WAL: a power loss may drop
 * the last transactions but never corrupts the database. The page cache may grow to
 * 32 MiB (SQLite's default is 2 MiB): the indexes a run touches on a long thread stay
 * in memory (`npm run bench`, lineage: run.start at run 9,901 of one thread went from
 * 1.37x to 1.23x the first 1,000 runs' average). When the WAL starts over (after a
 * checkpoint that caught up, see WalCheckpointer.ts) SQLite cuts its file back to
 * `journal_size_limit`, 4 MiB, rather than keep the largest size a burst of commits
 * gave it.
 */
const pragmas = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all([
      sql.unsafe("PRAGMA synchronous = NORMAL"),
      sql.unsafe("PRAGMA busy_timeout = 5000"),
      sql.unsafe("PRAGMA cache_size = -32768"),
      sql.unsafe(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT}`)
    ])
  )
)

/** What the WAL file is cut back to when it starts over. */
export const WAL_SIZE_LIMIT = 4 * 1024 * 1024

/**
 * The version of what this Skein writes into a database beyond its tables (the event
 * types in the log): kept in SQLite's `user_version`. A Skein that adds an event type
 * raises it, so that an older one refuses the file instead of misreading it.
 */
export const STORE_FORMAT_VERSION = 3

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
  const client = Sqlite.layer(options.filename).pipe(Layer.provide(prepareFile(options.filename)))
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

/**
 * The database as a runtime holds it: `layer`, with the database's lock held while it
 * is open (DatabaseLock.ts), so that a second runtime on the same file is refused.
 * Tools that only read beside a runtime use `layer`.
 */
const locked = (
  options: DatabaseOptions
): Layer.Layer<SqlClient.SqlClient | SqliteDirect, StorageError | DatabaseInUse> =>
  // Locked before the file is opened, released after it is closed.
  layer(options).pipe(
    Layer.provide(Layer.scopedDiscard(DatabaseLock.hold(options.filename, Sqlite.isMemory(options.filename))))
  )

/** `Database.layer({ filename })`: the migrated SQLite database; `Database.locked`: one runtime's. */
export const Database = { layer, locked } as const
