/**
 * One runtime per PostgreSQL database, or one cluster: a session-level advisory lock,
 * taken on a connection of its own and held for as long as the runtime is open,
 * exclusive for a runtime alone and shared by a cluster's runners (so neither starts on
 * a database the other serves).
 * PostgreSQL drops it with the session, so a runtime that dies (SIGKILL included), whose
 * connection the server then sees close, leaves the database to the next one. The
 * connection names its process (`application_name`), which a refused runtime reads to
 * say who holds the database.
 */
import { DatabaseInUse, StorageError } from "@skein/domain"
import { Effect, type Scope } from "effect"
import Pg from "pg"
import { redact } from "./Postgres.js"

/** The lock's two keys: "SKN" and the store's lock. */
const KEYS = [0x534b4e, 1] as const
/** The migrations' lock: "SKN" and 2. */
const MIGRATION_KEYS = [0x534b4e, 2] as const

const holderPid = (client: Pg.Client): Promise<number | null> =>
  client
    .query<{ readonly name: string }>(
      `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2`,
      [...KEYS]
    )
    .then((result) => {
      const match = /pid (\d+)/.exec(result.rows[0]?.name ?? "")
      return match === null ? null : Number(match[1])
    })

/** Holds the database's lock until the scope closes; DatabaseInUse when another runtime holds it. */
export const hold = (
  url: string,
  options: { readonly shared?: boolean } = {}
): Effect.Effect<void, DatabaseInUse | StorageError, Scope.Scope> => {
  const take = options.shared === true ? "pg_try_advisory_lock_shared" : "pg_try_advisory_lock"
  const where = redact(url)
  const failed = (error: unknown) =>
    new StorageError({
      detail: `cannot lock database ${where}: ${error instanceof Error ? error.message : String(error)}`,
      startup: true
    })
  return Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Pg.Client({
          connectionString: url,
          application_name: `skein (pid ${process.pid})`,
          connectionTimeoutMillis: 10_000
        })
        await client.connect()
        // A broken connection is reported here, not thrown out of the event loop.
        client.on("error", () => {})
        const { rows } = await client.query<{ readonly held: boolean }>(`SELECT ${take}($1, $2) AS held`, [...KEYS])
        if (rows[0]?.held === true) return { client, pid: null }
        const pid = await holderPid(client).catch(() => null)
        await client.end()
        return { client: null, pid }
      },
      catch: failed
    }).pipe(
      Effect.flatMap(({ client, pid }) =>
        client === null ? Effect.fail(new DatabaseInUse({ path: where, pid })) : Effect.succeed(client)
      )
    ),
    (client) => Effect.promise(() => client.end().catch(() => {}))
  ).pipe(Effect.asVoid)
}

/**
 * Runs `effect` (the migrations) while holding the database's migration lock, waiting
 * for it: processes starting at once on one database migrate one after another (two
 * `CREATE TABLE IF NOT EXISTS` at the same instant collide in PostgreSQL's catalog).
 */
export const whileMigrating = <A, E, R>(
  url: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | StorageError, R> =>
  Effect.acquireUseRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
        await client.connect()
        client.on("error", () => {})
        await client.query("SELECT pg_advisory_lock($1, $2)", [...MIGRATION_KEYS])
        return client
      },
      catch: (error) =>
        new StorageError({
          detail: `cannot lock database ${redact(url)} to migrate it: ${error instanceof Error ? error.message : String(error)}`,
          startup: true
        })
    }),
    () => effect,
    // Ending the session lets go of the lock.
    (client) => Effect.promise(() => client.end().catch(() => {}))
  )
