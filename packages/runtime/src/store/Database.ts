/**
 * The SQLite database: one connection (WAL) through `@effect/sql-sqlite-node`, with every
 * migration applied before the layer is ready.
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { SqliteClient, SqliteMigrator } from "@effect/sql-sqlite-node"
import { StorageError } from "@skein/domain"
import { Cause, Effect, Layer } from "effect"
import { loader } from "./Migrations.js"

export interface DatabaseOptions {
  /** A file path, or `:memory:` for a private in-memory database (tests). */
  readonly filename: string
}

const isMemory = (filename: string) =>
  filename === ":memory:" || filename === "" || filename.startsWith("file::memory:")

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
    isMemory(filename)
      ? Effect.void
      : Effect.try({
          try: () => {
            mkdirSync(dirname(filename), { recursive: true })
          },
          catch: (error) =>
            new StorageError({ detail: `cannot create the directory of database ${filename}: ${describe(error)}` })
        })
  )

/**
 * `synchronous = NORMAL` is the documented safe setting under WAL: a power loss may drop
 * the last transactions but never corrupts the database.
 */
const pragmas = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.zipRight(sql.unsafe("PRAGMA synchronous = NORMAL"), sql.unsafe("PRAGMA busy_timeout = 5000"))
  )
)

/**
 * SqlClient and SqliteClient over `options.filename`, migrated to the latest schema.
 * Fails with a StorageError naming the file when it cannot be opened or migrated.
 */
const layer = (
  options: DatabaseOptions
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, StorageError> => {
  const client = SqliteClient.layer({ filename: options.filename }).pipe(
    Layer.provide(ensureDirectory(options.filename))
  )
  const migrate = SqliteMigrator.layer({ loader }).pipe(Layer.provide(NodeContext.layer))
  return Layer.provideMerge(Layer.merge(pragmas, migrate), client).pipe(
    Layer.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      return Layer.fail(
        error instanceof StorageError
          ? error
          : new StorageError({ detail: `cannot open or migrate database ${options.filename}: ${describe(error)}` })
      )
    })
  )
}

/** `Database.layer({ filename })`: the migrated SQLite database. */
export const Database = { layer } as const
