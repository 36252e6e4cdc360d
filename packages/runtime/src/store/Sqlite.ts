/**
 * The SQLite connection: one better-sqlite3 connection (WAL), behind two faces that
 * share one lock.
 *
 * - `SqlClient` (`@effect/sql`), for migrations and whoever wants its statements.
 *   Statements are prepared once and kept.
 * - `StoreDb` (StoreDb.ts), for the store: `transaction`, a write's body run
 *   synchronously inside one SQLite transaction (an append), and `sql`, single
 *   statements and `withTransaction` (reads, views). better-sqlite3 is synchronous, so a
 *   statement costs what SQLite costs; through `SqlClient` each statement also builds a
 *   span, compiles, and goes through a prepared-statement cache, several times the
 *   price of the statement itself.
 *
 * Both take the same lock, a one-permit semaphore: a store transaction never runs
 * inside a `SqlClient` transaction or between its statements, and the other way round.
 * So a store transaction must not be started from inside a `SqlClient` transaction (it
 * would wait for the lock that transaction holds). A section that never yields (a
 * store transaction, one statement) runs within the call when the lock is free. One
 * connection writes, so `lockThread` and `announce` have nothing to do.
 *
 * A file database also gets a WalCheckpointer: each store transaction reports its
 * commit, and a worker thread keeps the WAL copied into the database.
 *
 * A file database is also watched for being deleted or replaced under the connection
 * (which would go on writing into a file nobody can open again): before each store
 * transaction, the path's device and inode are compared with the file opened (one
 * `stat` system call), and once more when the connection closes. Once they differ,
 * every store transaction fails, what the connection holds is saved beside the path
 * (`VACUUM INTO`), and a warning says so, once.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import Sqlite from "better-sqlite3"
import { Context, Effect, Layer, Option, Runtime, Stream } from "effect"
import { closeSync, openSync, statSync } from "node:fs"
import { resolve } from "node:path"
import { onClose } from "../resources/OnClose.js"
import * as Blobs from "./Blobs.js"
import { abort, Abort, type Sql, StoreDb, type StoreDbShape, type TxBody, type TxStep, txDb } from "./StoreDb.js"
import * as WalCheckpointer from "./WalCheckpointer.js"

/** The few better-sqlite3 calls used here (the package ships no types). */
interface RawStatement {
  readonly reader: boolean
  run(...params: ReadonlyArray<unknown>): { readonly changes: number; readonly lastInsertRowid: number | bigint }
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  raw(on: boolean): RawStatement
}
interface RawDatabase {
  pragma(text: string, options?: { readonly simple: boolean }): unknown
  prepare(text: string): RawStatement
  transaction<F extends (...args: Array<any>) => unknown>(fn: F): F & { readonly immediate: F }
  close(): void
}

/** Prepared statements by text; a long-running process with many shapes stays bounded. */
const STATEMENT_CACHE = 512

/**
 * What the WAL file is cut back to, by the write that starts the WAL over while the
 * connection is idle (`startWalOver`), rather than keep the largest size a burst of
 * commits gave it. Only then: a limit in force at every start over would cut the file
 * back under load too, and the commits that follow would pay to grow it again
 * (writing past its end costs more than writing over what is there).
 */
export const WAL_SIZE_LIMIT = 4 * 1024 * 1024

/** An in-memory database (":memory:", or "" for a temporary one): no file, no WAL. */
export const isMemory = (filename: string) =>
  filename === ":memory:" || filename === "" || filename.startsWith("file::memory:")

/** Device and inode of the file at `path`, or null when there is none. */
const identityOf = (path: string): string | null => {
  const stat = statSync(path, { throwIfNoEntry: false })
  return stat === undefined ? null : `${stat.dev}:${stat.ino}`
}

/**
 * Watches the path of the file the connection opened: `check()` says what happened to
 * it (null while it is the same file), saving what the connection holds the first time.
 */
const fileWatch = (filename: string, db: RawDatabase, warn: (message: string) => void) => {
  // The path as SQLite resolved it when it opened the file, whatever the working directory becomes.
  const path = resolve(filename)
  const opened = identityOf(path)
  let lost: string | null = null
  /** Saves the connection's database beside the path, private; the copy's path, or why not. */
  const rescue = (): string => {
    const copy = `${path}.orphaned-${new Date().toISOString().replace(/[:.]/g, "-")}`
    try {
      closeSync(openSync(copy, "wx", 0o600))
      db.prepare("VACUUM INTO ?").run(copy)
      return `what this Skein had stored is saved in ${copy} (move it to ${path} to keep it)`
    } catch (error) {
      return `it could not save what it had stored (${error instanceof Error ? error.message : String(error)})`
    }
  }
  const check = (): string | null => {
    if (lost !== null || opened === null) return lost
    const now = identityOf(path)
    if (now === opened) return null
    const what = now === null ? "deleted" : "replaced by another file"
    lost =
      `the database file ${path} was ${what} while Skein had it open, so nothing more is written: ` +
      `${rescue()}; then restart Skein`
    warn(lost)
    return lost
  }
  return { check }
}

type Prepare = (sql: string) => RawStatement

/** Prepared statements by text, kept (up to `STATEMENT_CACHE`). */
const statementCache = (db: RawDatabase): Prepare => {
  const statements = new Map<string, RawStatement>()
  return (sql) => {
    let statement = statements.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (statements.size >= STATEMENT_CACHE) statements.delete(statements.keys().next().value!)
      statements.set(sql, statement)
    }
    return statement
  }
}

/** Runs `f` now: its result, or its throw as a SqlError. */
const attemptNow = <A>(what: string, f: () => A): Effect.Effect<A, SqlError> => {
  try {
    return Effect.succeed(f())
  } catch (cause) {
    return Effect.fail(new SqlError({ cause, message: what }))
  }
}
const attempt = <A>(what: string, f: () => A): Effect.Effect<A, SqlError> => Effect.suspend(() => attemptNow(what, f))
const rows = (statement: RawStatement, params: ReadonlyArray<unknown>) => {
  if (statement.reader) return statement.all(...params)
  statement.run(...params)
  return []
}

/** `SqlClient`'s connection over `db`. */
const connectionOver = (db: RawDatabase, prepare: Prepare): Connection => ({
  execute: (sql, params, transformRows) =>
    attempt("Failed to execute statement", () => {
      const result = rows(prepare(sql), params)
      return transformRows ? transformRows(result as Array<object>) : result
    }),
  executeRaw: (sql, params) =>
    attempt("Failed to execute statement", () => {
      const statement = prepare(sql)
      return statement.reader ? statement.all(...params) : statement.run(...params)
    }),
  executeValues: (sql, params) =>
    attempt("Failed to execute statement", () => {
      const statement = prepare(sql)
      if (!statement.reader) {
        statement.run(...params)
        return []
      }
      statement.raw(true)
      try {
        return statement.all(...params) as Array<ReadonlyArray<unknown>>
      } finally {
        statement.raw(false)
      }
    }),
  executeUnprepared: (sql, params, transformRows) =>
    attempt("Failed to execute statement", () => {
      const result = rows(db.prepare(sql), params ?? [])
      return transformRows ? transformRows(result as Array<object>) : result
    }),
  executeStream: () => Stream.dieMessage("executeStream is not implemented for SQLite")
})

/**
 * Runs `section`, which must not yield, holding `lock`: at once when the lock is free
 * (`withPermitsIfAvailable` takes it without suspending the fiber, as `withPermits`
 * does even then), else once it is.
 */
const lockedBy =
  (lock: Effect.Semaphore) =>
  <A, E>(section: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.flatMap(
      lock.withPermitsIfAvailable(1)(Effect.suspend(section)),
      Option.match({ onSome: Effect.succeed, onNone: () => lock.withPermits(1)(Effect.suspend(section)) })
    )

/**
 * Starts the WAL over while the connection is idle (see WalCheckpointer.ts): one write
 * that changes nothing (`user_version` set to itself, read and written under the
 * write lock), whose WAL header sync the next command's commit then does not pay,
 * and which cuts the WAL file back (see `WAL_SIZE_LIMIT`).
 * Only if nobody holds the connection, and without waiting for another process's
 * write lock: skipped (false), the next commit starts the WAL over as SQLite always did.
 */
const walStartOver = (db: RawDatabase, lock: Effect.Semaphore, runtime: Runtime.Runtime<never>) => {
  const rewriteVersion = db.transaction(() => {
    db.pragma(`user_version = ${Number(db.pragma("user_version", { simple: true }))}`)
  }).immediate
  const rewriteAndCut = () => {
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`)
    try {
      rewriteVersion()
    } finally {
      db.pragma("journal_size_limit = -1")
    }
  }
  return (): boolean =>
    Option.getOrElse(
      Runtime.runSync(runtime)(
        lock.withPermitsIfAvailable(1)(
          Effect.sync(() => {
            const timeout = Number(db.pragma("busy_timeout", { simple: true }))
            db.pragma("busy_timeout = 0")
            try {
              rewriteAndCut()
              return true
            } catch {
              return false
            } finally {
              db.pragma(`busy_timeout = ${timeout}`)
            }
          })
        )
      ),
      () => false
    )
}

/** What a store transaction needs of the connection. */
interface TransactionParts {
  readonly db: RawDatabase
  readonly prepare: Prepare
  readonly blob: BlobText
  readonly locked: ReturnType<typeof lockedBy>
  readonly watch: ReturnType<typeof fileWatch> | null
  readonly checkpointer: WalCheckpointer.WalCheckpointer | null
}

type BlobText = (hash: string) => string | undefined
/** A long string the store keeps once (Blobs.ts), by its hash. */
const blobOf =
  (prepare: Prepare): BlobText =>
  (hash) =>
    (prepare("SELECT text FROM blobs WHERE hash = ?").all(hash)[0] as { readonly text: string } | undefined)?.text

/** The ids of the `count` rows an INSERT just wrote: one INSERT under the write lock gives them consecutive ids. */
const insertedIds = (count: number, last: number | bigint): ReadonlyArray<number> => {
  const first = Number(last) - count + 1
  return Array.from({ length: count }, (_, i) => first + i)
}

/** `StoreDb.transaction`: a write's body run synchronously inside one SQLite transaction, after the file check. */
const storeTransaction = ({ blob, checkpointer, db, locked, prepare, watch }: TransactionParts) => {
  /** One statement of a write's body, run now. */
  const step = (next: TxStep): unknown => {
    switch (next._tag) {
      case "statement":
        return Blobs.expandRows(rows(prepare(next.sql), next.params), blob)
      case "insert":
        return insertedIds(next.rows, prepare(next.sql).run(...next.params).lastInsertRowid)
      default:
        return undefined
    }
  }
  /** better-sqlite3 builds a transaction function's wrappers on each `transaction()`: built once here. */
  const inTransaction = db.transaction(<A>(body: () => A): A => body()) as <A>(body: () => A) => A
  const runBody = <A, E>(body: TxBody<A, E>): A => {
    const steps = body(txDb, abort)
    let next = steps.next()
    while (next.done !== true) next = steps.next(step(next.value))
    return next.value
  }
  const transaction: StoreDbShape["transaction"] = <A, E>(body: TxBody<A, E>, committed?: (result: A) => void) =>
    locked((): Effect.Effect<A, E | SqlError> => {
      const lost = watch?.check() ?? null
      if (lost !== null) return Effect.fail(new SqlError({ message: lost }))
      let result: A
      try {
        result = inTransaction(() => runBody(body))
      } catch (cause) {
        if (cause instanceof Abort) return Effect.fail(cause.error as E)
        return Effect.fail(new SqlError({ cause, message: "Failed to run a transaction" }))
      }
      checkpointer?.committed()
      committed?.(result)
      return Effect.succeed(result)
    })
  return transaction
}

/** `StoreDb.sql`: single statements, run in the section of the lock or in the `SqlClient` transaction that holds it. */
const storeSql = (
  prepare: Prepare,
  blob: BlobText,
  locked: ReturnType<typeof lockedBy>,
  client: Client.SqlClient
): Sql => {
  const runNow = <A>(sql: string, params: ReadonlyArray<unknown>) =>
    attemptNow(
      "Failed to execute statement",
      () => Blobs.expandRows(rows(prepare(sql), params), blob) as ReadonlyArray<A>
    )
  return {
    dialect: "sqlite",
    // Inside a `withTransaction`, its fiber holds the lock already.
    unsafe: <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
      Effect.contextWithEffect((context: Context.Context<never>) =>
        Option.isSome(Context.getOption(context, Client.TransactionConnection))
          ? runNow<A>(text, params)
          : // Run inside the section, not after it: a fiber may yield between two steps.
            locked(() => runNow<A>(text, params))
      ),
    withTransaction: client.withTransaction
  }
}

const make = (filename: string, checkpointing: WalCheckpointer.WalCheckpointerOptions) =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => new Sqlite(filename) as unknown as RawDatabase,
        catch: (cause) => new SqlError({ cause, message: `Failed to open ${filename}` })
      }),
      (db) => Effect.sync(() => db.close())
    )
    yield* Effect.try({
      try: () => db.pragma("journal_mode = WAL"),
      catch: (cause) => new SqlError({ cause, message: "Failed to enable WAL" })
    })
    /** The one lock on the connection; a holder across a wait is a `SqlClient` transaction. */
    const lock = yield* Effect.makeSemaphore(1)
    const locked = lockedBy(lock)
    const runtime = yield* Effect.runtime<never>()
    const watch = isMemory(filename)
      ? null
      : fileWatch(filename, db, (message) => Runtime.runSync(runtime)(Effect.logWarning(message)))
    // Looked at once more before the connection closes (finalizers run in reverse): a
    // file deleted while nothing was written is still saved, and said, before it is gone.
    if (watch !== null) yield* Effect.addFinalizer(() => Effect.sync(() => void watch.check()))
    const checkpointer = isMemory(filename)
      ? null
      : yield* WalCheckpointer.start(filename, checkpointing, {
          startWalOver: walStartOver(db, lock, runtime),
          autocheckpoint: (pages) => void db.pragma(`wal_autocheckpoint = ${Math.floor(pages)}`)
        })

    const prepare = statementCache(db)
    const connection = connectionOver(db, prepare)
    const client = yield* Client.make({
      acquirer: locked(() => Effect.succeed(connection)),
      compiler: Statement.makeCompilerSqlite(),
      // Held until the transaction's scope closes; interruptible while it waits. Given
      // back with `onClose`: the release needs none of the taker's fiber references.
      transactionAcquirer: Effect.uninterruptibleMask((restore) =>
        Effect.as(Effect.zipRight(restore(lock.take(1)), onClose(lock.release(1))), connection)
      ),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const blob = blobOf(prepare)
    const transaction = storeTransaction({ db, prepare, blob, locked, watch, checkpointer })
    const sql = storeSql(prepare, blob, locked, client)
    const checkpoints = () => checkpointer?.status() ?? null
    return { client, store: { sql, transaction, checkpoints, announced: null } satisfies StoreDbShape }
  })

/** `SqlClient` and `StoreDb` over one connection to `filename` (`:memory:` for a private one). */
export const layer = (
  filename: string,
  checkpointing: WalCheckpointer.WalCheckpointerOptions = WalCheckpointer.defaultOptions
): Layer.Layer<Client.SqlClient | StoreDb, SqlError> =>
  Layer.scopedContext(
    Effect.map(make(filename, checkpointing), ({ client, store }) =>
      Context.make(Client.SqlClient, client).pipe(Context.add(StoreDb, store))
    )
  ).pipe(Layer.provide(Reactivity.layer))
