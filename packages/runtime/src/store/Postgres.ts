/**
 * The PostgreSQL connection: a pool (`@effect/sql-pg`) behind the store's face
 * (StoreDb.ts), for one database that several Skein processes may share.
 *
 * - Statements are written with `?` for parameters, as for SQLite; each is rewritten
 *   once to PostgreSQL's `$1, $2 …` and kept.
 * - 64-bit integers and numerics come back as numbers, as SQLite gives them (the log's
 *   sequences stay far below 2^53).
 * - A write's body (`transaction`) runs statement by statement inside one PostgreSQL
 *   transaction on one pooled connection; `lockThread` takes a transaction-scoped
 *   advisory lock on the thread, so that two processes appending to one thread take
 *   turns and the second reads the sequence the first wrote (the expected-sequence
 *   fence then refuses a stale writer instead of a unique-key error).
 * - Rows come back with the store's references to long strings replaced (Blobs.ts),
 *   the strings read in one query per statement that needs them.
 *
 * `committed` runs right after the commit. Writes to one thread come from its one
 * actor, one after another, so its followers hear its commits in order. Each append
 * also announces its commit (`NOTIFY`, sent by the server at the commit), which the
 * other processes on the database hear through `announced` (`LISTEN`) while they
 * listen. A notice names the process that sent it, which drops its own: its followers
 * heard those commits already.
 */
import { randomBytes } from "node:crypto"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Client from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Deferred, Duration, Effect, Layer, Mailbox, Option, Redacted, Schema, Stream } from "effect"
import { StorageError } from "@skein/domain"
import Pg from "pg"
import * as Blobs from "./Blobs.js"
import {
  abort,
  Abort,
  type Commit,
  type Sql,
  StoreDb,
  type StoreDbShape,
  type TxBody,
  type TxStep,
  txDb
} from "./StoreDb.js"

/**
 * The oldest PostgreSQL the store runs on, as `server_version_num` gives it: checked on
 * 15 (what Debian 12 ships) and 18 (the tests' own server).
 */
const OLDEST_SERVER = 150_000

/** Why the server at `where` is too old for the store (its `server_version_num` and `server_version`), else null. */
const tooOld = (versionNum: number, version: string, where: string): string | null =>
  versionNum >= OLDEST_SERVER
    ? null
    : `${where} runs PostgreSQL ${version}; Skein needs PostgreSQL ${OLDEST_SERVER / 10_000} or later`

/** Fails with a StorageError, at start, when the server at `where` is older than the store runs on. */
export const supportedServer = (where: string) =>
  Effect.gen(function* () {
    const sql = yield* Client.SqlClient
    const [server] = yield* sql.unsafe<{ readonly num: string; readonly version: string }>(
      "SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS version"
    )
    const why = server === undefined ? null : tooOld(Number(server.num), server.version, where)
    if (why !== null) return yield* new StorageError({ detail: why, startup: true })
  })

/** Whether `location` names a PostgreSQL database rather than a SQLite file. */
export const isUrl = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location)

/** The URL as it may be shown: without its password. */
export const redact = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "postgresql://(unparsable URL)"
  }
}

/** 64-bit integers (int8) and numerics as numbers; every other type as `pg` parses it. */
const INT8 = 20
const NUMERIC = 1700
const types: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8 || oid === NUMERIC
      ? (value: string) => Number(value)
      : Pg.types.getTypeParser(oid, format as "text")) as Pg.CustomTypesConfig["getTypeParser"]
}

/** `?` placeholders rewritten to `$n`, outside quoted text. */
const rewritten = new Map<string, string>()
export const placeholders = (text: string): string => {
  let out = rewritten.get(text)
  if (out !== undefined) return out
  let n = 0
  let quote: string | null = null
  out = ""
  for (const char of text) {
    if (quote !== null) {
      if (char === quote) quote = null
      out += char
    } else if (char === "'" || char === '"') {
      quote = char
      out += char
    } else out += char === "?" ? `$${++n}` : char
  }
  if (rewritten.size >= 1024) rewritten.delete(rewritten.keys().next().value!)
  rewritten.set(text, out)
  return out
}

/** The channel appends announce their commits on. */
const CHANNEL = "skein_commits"
/** How long a listen waits for a mark of its own to come back, and how often it sends one. */
const MARK_WAIT = Duration.millis(200)
const MARK_TRIES = 25

/** A commit's notice; `origin` names the process that sent it (none from an older Skein). */
const isNotice = Schema.is(
  Schema.Struct({
    origin: Schema.optional(Schema.String),
    threadId: Schema.String,
    first: Schema.Int,
    last: Schema.Int
  })
)

/** A notice's commit, or none for a notice that is not one or that `origin` (this process) sent. */
const commitOf =
  (origin: string) =>
  (payload: string): Option.Option<Commit> => {
    try {
      const value: unknown = JSON.parse(payload)
      if (!isNotice(value) || value.origin === origin) return Option.none()
      return Option.some({ threadId: value.threadId, first: value.first, last: value.last })
    } catch {
      return Option.none()
    }
  }

const make = Effect.gen(function* () {
  const client = yield* PgClient.PgClient
  /** This process, as its notices name it. */
  const origin = randomBytes(8).toString("hex")

  const query = <A extends object>(text: string, params: ReadonlyArray<unknown>) =>
    client.unsafe<A>(placeholders(text), params as Array<never>)

  /** `rows` with their references to long strings replaced: one read of the strings they name. */
  const expanded = <A extends object>(rows: ReadonlyArray<A>): Effect.Effect<ReadonlyArray<A>, SqlError> => {
    const hashes = Blobs.referencedHashes(rows)
    if (hashes.length === 0) return Effect.succeed(rows)
    return Effect.map(query<Blobs.Blob>("SELECT hash, text FROM blobs WHERE hash = ANY(?)", [hashes]), (found) => {
      const byHash = new Map(found.map((blob) => [blob.hash, blob.text]))
      return Blobs.expandRows([...rows], (hash) => byHash.get(hash))
    })
  }

  const unsafe: Sql["unsafe"] = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
    Effect.flatMap(query<A>(text, params), expanded)

  const step = (next: TxStep): Effect.Effect<unknown, SqlError> => {
    switch (next._tag) {
      case "statement":
        return unsafe(next.sql, next.params)
      case "insert":
        // Assigned ascending in the order of the rows, whatever order RETURNING gives them in.
        return Effect.map(query<Record<string, unknown>>(`${next.sql} RETURNING ${next.key}`, next.params), (rows) =>
          rows.map((row) => Number(row[next.key])).sort((a, b) => a - b)
        )
      case "lockThread":
        return query("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [next.threadId])
      case "announce":
        // Sent by the server at the commit, and not at all on a rollback.
        return query("SELECT pg_notify(?, ?)", [CHANNEL, JSON.stringify({ origin, ...next.commit })])
    }
  }

  const transaction: StoreDbShape["transaction"] = <A, E>(body: TxBody<A, E>, committed?: (result: A) => void) =>
    Effect.suspend(() => {
      const steps = body(txDb, abort)
      const go = (input: unknown): Effect.Effect<A, E | SqlError> => {
        let next: IteratorResult<TxStep, A>
        try {
          next = steps.next(input)
        } catch (cause) {
          if (cause instanceof Abort) return Effect.fail(cause.error as E)
          return Effect.fail(new SqlError({ cause, message: "Failed to run a transaction" }))
        }
        return next.done === true ? Effect.succeed(next.value) : Effect.flatMap(step(next.value), go)
      }
      return go(undefined)
    }).pipe(
      client.withTransaction,
      Effect.tap((result) => Effect.sync(() => committed?.(result)))
    )

  /**
   * LISTEN is in place once a notice sent after it comes back: until one of this
   * process's marks does (each sent after the last went unheard for a while), the
   * stream is not handed out. Other processes take a mark for no commit.
   */
  const announced: StoreDbShape["announced"] = Effect.gen(function* () {
    const notices = yield* Mailbox.make<Commit, SqlError>()
    const heard = yield* Deferred.make<void>()
    const mark = JSON.stringify({ origin, mark: randomBytes(8).toString("hex") })
    const take = commitOf(origin)
    yield* client.listen(CHANNEL).pipe(
      Stream.runForEach((payload) =>
        payload === mark
          ? Deferred.succeed(heard, undefined)
          : Option.match(take(payload), { onNone: () => Effect.void, onSome: (commit) => notices.offer(commit) })
      ),
      Effect.exit,
      Effect.flatMap((exit) => notices.done(exit)),
      Effect.forkScoped
    )
    const markHeard = Effect.zipRight(
      query("SELECT pg_notify(?, ?)", [CHANNEL, mark]),
      Effect.timeoutFail(Deferred.await(heard), {
        duration: MARK_WAIT,
        onTimeout: () => new SqlError({ message: "LISTEN did not take effect (no notice of its own came back)" })
      })
    )
    yield* Effect.retry(markHeard, { times: MARK_TRIES })
    return Mailbox.toStream(notices)
  })

  const sql: Sql = { dialect: "postgresql", unsafe, withTransaction: client.withTransaction }
  return { sql, transaction, checkpoints: () => null, announced } satisfies StoreDbShape
})

/** `SqlClient` and `StoreDb` over a pool of connections to the database at `url`. */
export const layer = (url: string): Layer.Layer<Client.SqlClient | StoreDb, SqlError> =>
  Layer.effect(StoreDb, make).pipe(
    Layer.provideMerge(
      PgClient.layer({
        url: Redacted.make(url),
        types,
        applicationName: "skein",
        connectTimeout: Duration.seconds(10)
      })
    ),
    Layer.provide(Reactivity.layer)
  )
