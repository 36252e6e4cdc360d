/**
 * The store's database, migrated before the layer is ready: a SQLite file (one
 * connection in WAL mode, Sqlite.ts), or a PostgreSQL database named by a
 * `postgresql://` URL (a pool, Postgres.ts) that several Skein processes may share.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from "node:fs"
import { dirname } from "node:path"
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { type DatabaseInUse, StorageError } from "@skein/domain"
import { Cause, Effect, Layer } from "effect"
import * as DatabaseLock from "./DatabaseLock.js"
import { loaderFor, migrations } from "./Migrations.js"
import * as Postgres from "./Postgres.js"
import * as PostgresLock from "./PostgresLock.js"
import * as Sqlite from "./Sqlite.js"
import type { Dialect, StoreDb } from "./StoreDb.js"

export interface DatabaseOptions {
  /** A file path, `:memory:` for a private in-memory database (tests), or a `postgresql://` URL. */
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
 * 1.37x to 1.23x the first 1,000 runs' average). The WAL file is cut back while the
 * connection is idle, not at every start over (Sqlite.ts, `WAL_SIZE_LIMIT`).
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

export { WAL_SIZE_LIMIT } from "./Sqlite.js"

/**
 * The version of what this Skein writes into a database beyond its tables (the event
 * types in the log, and the values they hold): kept in SQLite's `user_version`. A Skein
 * that adds an event type, or a value an older one cannot read (4: the run failure
 * `runner_lost`), raises it, so that an older one refuses the file instead of misreading it.
 */
export const STORE_FORMAT_VERSION = 4

const latestMigration = Object.keys(migrations).sort().at(-1)!

/** Where a dialect keeps the store's format, and whether the migrations' table exists. */
interface FormatStore {
  readonly read: Effect.Effect<number, unknown, SqlClient.SqlClient>
  readonly write: Effect.Effect<void, unknown, SqlClient.SqlClient>
  readonly migrated: Effect.Effect<boolean, unknown, SqlClient.SqlClient>
}

/** SQLite: the format in the file's `user_version`. */
const sqliteFormat: FormatStore = {
  read: Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.unsafe<{ readonly user_version: number }>("PRAGMA user_version"),
      (rows) => rows[0]?.user_version ?? 0
    )
  ),
  write: Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`PRAGMA user_version = ${STORE_FORMAT_VERSION}`)),
  migrated: Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.unsafe("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'effect_sql_migrations'"),
      (rows) => rows.length > 0
    )
  )
}

/** PostgreSQL: the format in a one-row table of its own. */
const postgresFormat: FormatStore = {
  read: Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.flatMap(
      sql.unsafe<{ readonly t: string | null }>("SELECT to_regclass('skein_store')::text AS t"),
      ([row]) =>
        row?.t === null || row?.t === undefined
          ? Effect.succeed(0)
          : Effect.map(
              sql.unsafe<{ readonly format: number }>("SELECT format FROM skein_store"),
              (rows) => rows[0]?.format ?? 0
            )
    )
  ),
  write: Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.all([
        sql.unsafe("CREATE TABLE IF NOT EXISTS skein_store (format INTEGER NOT NULL)"),
        sql.unsafe("DELETE FROM skein_store"),
        sql.unsafe(`INSERT INTO skein_store (format) VALUES (${STORE_FORMAT_VERSION})`)
      ])
    )
  ),
  migrated: Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.unsafe<{ readonly t: string | null }>("SELECT to_regclass('effect_sql_migrations')::text AS t"),
      (rows) => rows[0]?.t !== null && rows[0]?.t !== undefined
    )
  )
}

/**
 * Refuses a database that a newer Skein wrote (a migration or a format this one does
 * not know), before migrating or writing anything; records this format otherwise.
 */
const compatibility = (where: string, format: FormatStore) => {
  const newer = (what: string) =>
    new StorageError({
      detail: `database ${where} was written by a newer version of Skein (${what}). Upgrade Skein, or give it another database`,
      startup: true
    })
  const check = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const found = yield* format.read
    if (found > STORE_FORMAT_VERSION) {
      return yield* newer(`its store format is ${found}; this Skein reads up to ${STORE_FORMAT_VERSION}`)
    }
    if (!(yield* format.migrated)) return
    const applied = yield* sql.unsafe<{ readonly migration_id: number; readonly name: string }>(
      "SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id DESC LIMIT 1"
    )
    const last = applied[0]
    if (last !== undefined && last.migration_id > Number.parseInt(latestMigration, 10)) {
      const id = String(last.migration_id).padStart(4, "0")
      return yield* newer(`its schema is at migration ${id}_${last.name}; this Skein knows up to ${latestMigration}`)
    }
  })
  return { check, record: format.write }
}

/** Fails with a StorageError naming the database when it cannot be opened or migrated. */
const named =
  (where: string) =>
  <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>): Layer.Layer<ROut, StorageError, RIn> =>
    layer.pipe(
      Layer.catchAllCause((cause) => {
        const error = Cause.squash(cause)
        return Layer.fail(
          error instanceof StorageError
            ? error
            : new StorageError({
                detail: `cannot open or migrate database ${where}: ${describe(error)}`,
                startup: true
              })
        )
      })
    )

/**
 * `client` migrated to the latest schema: refuse a PostgreSQL server too old and a newer
 * database, migrate, then record this format; all of it inside `exclusive` (one process
 * at a time).
 */
const migrated = <E>(
  client: Layer.Layer<SqlClient.SqlClient | StoreDb, E>,
  where: string,
  dialect: Dialect,
  format: FormatStore,
  exclusive: <A, E1, R>(effect: Effect.Effect<A, E1, R>) => Effect.Effect<A, E1 | StorageError, R> = (effect) => effect
) => {
  const { check, record } = compatibility(where, format)
  const supported = dialect === "postgresql" ? Postgres.supportedServer(where) : Effect.void
  const migrate = Effect.zipRight(
    Effect.zipRight(supported, check),
    Effect.zipRight(Migrator.make({})({ loader: loaderFor(dialect) }), record)
  )
  return Layer.provideMerge(Layer.effectDiscard(exclusive(migrate)), client)
}

/**
 * SqlClient and StoreDb over `options.filename` (a SQLite file, or a `postgresql://`
 * URL), migrated to the latest schema. Fails with a StorageError naming the database
 * when it cannot be opened or migrated.
 */
const layer = (options: DatabaseOptions): Layer.Layer<SqlClient.SqlClient | StoreDb, StorageError> => {
  if (Postgres.isUrl(options.filename)) {
    const where = Postgres.redact(options.filename)
    // Runners of a cluster may start at once: one migrates at a time.
    return named(where)(
      migrated(Postgres.layer(options.filename), where, "postgresql", postgresFormat, (effect) =>
        PostgresLock.whileMigrating(options.filename, effect)
      )
    )
  }
  const client = Sqlite.layer(options.filename).pipe(Layer.provide(prepareFile(options.filename)))
  return named(options.filename)(
    Layer.provideMerge(pragmas, migrated(client, options.filename, "sqlite", sqliteFormat))
  )
}

/**
 * The database as a runtime holds it: `layer`, with the database's lock held while it
 * is open, so that a second runtime on the same database is refused: a SQLite file's
 * lock file (DatabaseLock.ts), a PostgreSQL database's advisory lock (PostgresLock.ts).
 * Tools that only read beside a runtime use `layer`.
 */
const locked = (
  options: DatabaseOptions & {
    /** A cluster's runner: the PostgreSQL lock shared with the other runners. */
    readonly shared?: boolean
  }
): Layer.Layer<SqlClient.SqlClient | StoreDb, StorageError | DatabaseInUse> =>
  // Locked before the database is opened, released after it is closed.
  layer(options).pipe(
    Layer.provide(
      Layer.scopedDiscard(
        Postgres.isUrl(options.filename)
          ? PostgresLock.hold(options.filename, { shared: options.shared === true })
          : DatabaseLock.hold(options.filename, Sqlite.isMemory(options.filename))
      )
    )
  )

/**
 * `Database.layer({ filename })`: the migrated database; `Database.locked`: one
 * runtime's; `Database.isUrl(location)`: whether a location names a PostgreSQL database
 * (else it is a SQLite file); `Database.redact(url)`: the URL without its password.
 */
export const Database = { layer, locked, isUrl: Postgres.isUrl, redact: Postgres.redact } as const
