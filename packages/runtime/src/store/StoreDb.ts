/**
 * The store's connection, whichever database holds it: SQLite (Sqlite.ts, one file, the
 * default) or PostgreSQL (Postgres.ts, shared by several Skein processes). The store's
 * modules speak only to this face.
 *
 * - `sql`: single statements and `withTransaction` (reads, views). Statements are
 *   written once, in the SQL both databases take, with `?` for parameters; the few
 *   that must differ ask `sql.dialect`.
 * - `transaction`: a write (an append, a queued run), written as a generator of its
 *   statements (`yield* db.all(…)`), so that the same body runs synchronously inside one
 *   SQLite transaction and statement by statement inside one PostgreSQL transaction.
 *   `abort(error)` rolls back and fails with `error`; anything else thrown fails with a
 *   SqlError. `lockThread` serialises the writers of one thread across processes, and
 *   `announce` tells the other processes of the commit (both no-ops where one process
 *   writes).
 *
 * Rows read through either come back with the store's references to long strings
 * replaced by the strings (Blobs.ts); through `SqlClient`, as stored.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Effect, Scope, Stream } from "effect"
import { Context } from "effect"
import type * as WalCheckpointer from "./WalCheckpointer.js"

export type Dialect = "sqlite" | "postgresql"

/** The part of `SqlClient` the store uses. */
export interface Sql {
  readonly dialect: Dialect
  /** Runs one statement: the rows of a query (or of `RETURNING`), none for anything else. */
  readonly unsafe: <A extends object = Record<string, unknown>>(
    sql: string,
    params?: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<A>, SqlError>
  /** `SqlClient`'s transaction: statements of `sql.unsafe` inside it run in it. */
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}

/** One statement a write's body asks for. */
export type TxStep =
  | { readonly _tag: "statement"; readonly sql: string; readonly params: ReadonlyArray<unknown> }
  | {
      readonly _tag: "insert"
      readonly sql: string
      readonly params: ReadonlyArray<unknown>
      readonly key: string
      readonly rows: number
    }
  | { readonly _tag: "lockThread"; readonly threadId: string }
  | { readonly _tag: "announce"; readonly commit: Commit }

/** A write's statements: `yield*` each, for its rows. */
export interface TxDb {
  /** Rows of a query, or of a statement's `RETURNING`. */
  readonly all: <A = Record<string, unknown>>(
    sql: string,
    params?: ReadonlyArray<unknown>
  ) => Generator<TxStep, ReadonlyArray<A>, unknown>
  /** Runs a statement (its rows, if any, are dropped). */
  readonly run: (sql: string, params?: ReadonlyArray<unknown>) => Generator<TxStep, void, unknown>
  /**
   * Runs an INSERT of `rows` rows into a table whose integer column `key` the database
   * assigns, ascending in the order of the rows: the keys given, in that order. (SQLite
   * knows them from the last row's id, without a `RETURNING`, which costs it as much
   * again as the insert; there `key` must be the table's `INTEGER PRIMARY KEY`.)
   */
  readonly insert: (
    sql: string,
    params: ReadonlyArray<unknown>,
    key: string,
    rows: number
  ) => Generator<TxStep, ReadonlyArray<number>, unknown>
  /** Holds the thread's write lock until the transaction ends. */
  readonly lockThread: (threadId: string) => Generator<TxStep, void, unknown>
  /** Tells the other processes on the database of this commit, once it is made. */
  readonly announce: (commit: Commit) => Generator<TxStep, void, unknown>
}

/** What an append committed: the thread and its range of thread sequences. */
export interface Commit {
  readonly threadId: string
  readonly first: number
  readonly last: number
}

/** The body of a write: its statements in order, then its result. */
export type TxBody<A, E> = (db: TxDb, abort: (error: E) => never) => Generator<TxStep, A, unknown>

export const txDb: TxDb = {
  all: function* <A>(sql: string, params: ReadonlyArray<unknown> = []) {
    return (yield { _tag: "statement", sql, params }) as ReadonlyArray<A>
  },
  run: function* (sql: string, params: ReadonlyArray<unknown> = []) {
    yield { _tag: "statement", sql, params }
  },
  insert: function* (sql: string, params: ReadonlyArray<unknown>, key: string, rows: number) {
    return (yield { _tag: "insert", sql, params, key, rows }) as ReadonlyArray<number>
  },
  lockThread: function* (threadId: string) {
    yield { _tag: "lockThread", threadId }
  },
  announce: function* (commit: Commit) {
    yield { _tag: "announce", commit }
  }
}

/** How `abort` leaves a body: its error, past the database's rollback. */
export class Abort {
  constructor(readonly error: unknown) {}
}

export const abort = (error: unknown): never => {
  throw new Abort(error)
}

export interface StoreDbShape {
  readonly sql: Sql
  /**
   * Runs `body` inside one transaction: committed if it returns, rolled back if it
   * throws. `committed` runs right after the commit, before anything else is written
   * by this process, so that what it publishes goes out in commit order.
   */
  readonly transaction: <A, E = never>(
    body: TxBody<A, E>,
    committed?: (result: A) => void
  ) => Effect.Effect<A, E | SqlError>
  /** The background WAL checkpointer's progress (null but for a SQLite file). */
  readonly checkpoints: () => WalCheckpointer.WalCheckpointerStatus | null
  /**
   * Listens, until the scope closes, for the commits other processes announce on a
   * shared database (null where one process writes): once it has succeeded, every later
   * commit's notice comes on the stream. A dropped notice is made up for by the next
   * one of the same thread, which names where its commit begins.
   */
  readonly announced: Effect.Effect<Stream.Stream<Commit, SqlError>, SqlError, Scope.Scope> | null
}

export class StoreDb extends Context.Tag("@skein/runtime/StoreDb")<StoreDb, StoreDbShape>() {}
