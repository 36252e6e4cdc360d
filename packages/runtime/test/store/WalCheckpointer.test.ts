/**
 * The background WAL checkpointer, over real database files: the worker copies commits
 * into the database before SQLite's own checkpoint would, the WAL starts over between
 * bursts of commits, everything committed is there after a reopen, and a worker that
 * cannot run leaves checkpoints to SQLite.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import * as Sqlite from "../../src/store/Sqlite.js"
import { StoreDb, type StoreDbShape } from "../../src/store/StoreDb.js"
import * as WalCheckpointer from "../../src/store/WalCheckpointer.js"
import type { WalCheckpointerOptions } from "../../src/store/WalCheckpointer.js"

const ROW = "x".repeat(2000)

/**
 * `commits` transactions of one 2 KB row each on a fresh file database, in bursts of
 * `burst` with a pause of `pauseMs` after each (as between runs); then what the test asks.
 */
const withDatabase = <A>(
  options: WalCheckpointerOptions,
  { burst, commits, pauseMs }: { commits: number; burst: number; pauseMs: number },
  after: (db: StoreDbShape, file: string) => Effect.Effect<A>
) =>
  Effect.gen(function* () {
    const dir = mkdtempSync(join(tmpdir(), "skein-wal-test-"))
    const file = join(dir, "wal.db")
    try {
      const result = yield* Effect.gen(function* () {
        const db = yield* StoreDb
        yield* db.transaction(function* (d) {
          yield* d.run("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        })
        for (let i = 0; i < commits; i++) {
          yield* db.transaction(function* (d) {
            yield* d.run("INSERT INTO t (body) VALUES (?)", [ROW])
          })
          if (i % burst === burst - 1) yield* Effect.sleep(pauseMs)
        }
        return yield* after(db, file)
      }).pipe(Effect.provide(Layer.orDie(Sqlite.layer(file, options))), Effect.scoped)
      // Reopened: every committed row is there.
      const rows = yield* Effect.gen(function* () {
        const db = yield* StoreDb
        return yield* db.sql.unsafe<{ n: number }>("SELECT count(*) AS n FROM t")
      }).pipe(Effect.provide(Layer.orDie(Sqlite.layer(file, options))), Effect.scoped)
      expect(rows[0]?.n).toBe(commits)
      return result
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }).pipe(Effect.orDie)

const bytes = (file: string) => statSync(file).size

/**
 * The WAL header's checkpoint sequence number (big-endian, bytes 12-15): SQLite adds one
 * each time a writer starts the WAL over.
 */
const walSequence = (file: string) => readFileSync(`${file}-wal`).readUInt32BE(12)

/** Waits (bounded) until `done` holds. */
const eventually = (done: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500 && !done(); i++) yield* Effect.sleep("10 millis")
    return done()
  })

/** Never asks the worker: what SQLite does on its own. */
const never: WalCheckpointerOptions = { every: Number.MAX_SAFE_INTEGER, idleMs: 2_000_000_000 }

describe("WalCheckpointer", () => {
  it.live("copies commits into the database before SQLite's own checkpoint would", () =>
    Effect.gen(function* () {
      // 300 commits stay under SQLite's 1,000-page threshold: on its own, SQLite has
      // not copied a row into the database file yet.
      const load = { commits: 300, burst: 50, pauseMs: 5 }
      const alone = yield* withDatabase(never, load, (db, file) =>
        Effect.succeed({ db: bytes(file), status: db.checkpoints() })
      )
      expect(alone.status).toEqual({ completed: 0, restarts: 0, failed: null })
      expect(alone.db).toBeLessThan(100_000)

      const helped = yield* withDatabase({ every: 16, idleMs: 2_000_000_000 }, load, (db, file) =>
        Effect.gen(function* () {
          // About two rows a page: most of the 300 rows, copied by the worker. (The file
          // grows while a checkpoint runs, before the worker's answer reaches this thread.)
          expect(yield* eventually(() => bytes(file) > 400_000 && (db.checkpoints()?.completed ?? 0) > 0)).toBe(true)
          return { status: db.checkpoints() }
        })
      )
      expect(helped.status?.failed).toBeNull()
      expect(helped.status?.completed).toBeGreaterThan(0)
    })
  )

  it.live("lets the WAL start over between bursts of commits", () =>
    Effect.gen(function* () {
      // About 2,000 pages written in bursts: on its own SQLite lets the WAL reach its
      // 1,000-page threshold before starting it over; with the worker caught up after
      // each burst (on the pause alone here), the next burst writes the WAL from its
      // start again.
      const load = { commits: 1200, burst: 24, pauseMs: 15 }
      const alone = yield* withDatabase(never, load, (_, file) => Effect.succeed(bytes(`${file}-wal`)))
      expect(alone).toBeGreaterThan(3_000_000)
      const helped = yield* withDatabase({ every: Number.MAX_SAFE_INTEGER, idleMs: 5 }, load, (_, file) =>
        Effect.succeed(bytes(`${file}-wal`))
      )
      expect(helped).toBeLessThan(alone / 3)
    })
  )

  it.live("keeps SQLite's own checkpoint out of commits at 1,000 pages while the worker runs", () =>
    Effect.gen(function* () {
      // Some 1,200 pages of commits without a pause, the worker never asked: at SQLite's
      // default threshold a commit would have checkpointed past page 1,000 (syncing both
      // files) and the next one started the WAL over. Here nobody checkpointed.
      const load = { commits: 1200, burst: 1200, pauseMs: 0 }
      const seen = yield* withDatabase(never, load, (db, file) =>
        Effect.gen(function* () {
          const [pragma] = yield* Effect.orDie(
            db.sql.unsafe<{ wal_autocheckpoint: number }>("PRAGMA wal_autocheckpoint")
          )
          return { pages: pragma?.wal_autocheckpoint, sequence: walSequence(file), wal: bytes(`${file}-wal`) }
        })
      )
      expect(seen.pages).toBe(10_000)
      expect(seen.sequence).toBe(0)
      expect(seen.wal).toBeGreaterThan(1000 * 4096)
      // A connection of its own, with no worker beside it, has SQLite's default.
      const plain = new Database(":memory:") as { pragma(text: string, o: { simple: true }): unknown; close(): void }
      expect(plain.pragma("wal_autocheckpoint", { simple: true })).toBe(WalCheckpointer.SQLITE_DEFAULT_PAGES)
      plain.close()
    })
  )

  it.live("starts the WAL over while the connection is idle, not in the next command's commit", () =>
    withDatabase({ every: Number.MAX_SAFE_INTEGER, idleMs: 5 }, { commits: 20, burst: 1000, pauseMs: 0 }, (db, file) =>
      Effect.gen(function* () {
        const before = walSequence(file)
        // The pause: the worker catches up, and the WAL is started over then.
        expect(yield* eventually(() => db.checkpoints()?.restarts === 1)).toBe(true)
        expect(walSequence(file)).toBe(before + 1)
        // The write that started it over is no commit of the store's: no checkpoint follows it.
        const { completed } = db.checkpoints()!
        yield* Effect.sleep("50 millis")
        expect(db.checkpoints()).toEqual({ completed, restarts: 1, failed: null })
        // The next commit appends to the WAL as it is: it does not start it over again.
        yield* Effect.orDie(
          db.transaction(function* (d) {
            yield* d.run("CREATE TABLE u (x)")
          })
        )
        expect(walSequence(file)).toBe(before + 1)
      })
    )
  )

  it.live("a failing restart while idle is only a warning: checkpoints go on", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-wal-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "wal.db")
      const db = new Database(file) as {
        pragma(text: string): unknown
        exec(text: string): unknown
        prepare(text: string): { run(...params: ReadonlyArray<unknown>): unknown }
        close(): void
      }
      yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
      db.pragma("journal_mode = WAL")
      db.exec("CREATE TABLE t (x)")
      let asked = 0
      const checkpointer = yield* WalCheckpointer.start(
        file,
        { every: Number.MAX_SAFE_INTEGER, idleMs: 5 },
        {
          startWalOver: () => {
            asked++
            throw new Error("no write today")
          },
          autocheckpoint: (pages) => void db.pragma(`wal_autocheckpoint = ${pages}`)
        }
      )
      for (let round = 1; round <= 2; round++) {
        db.prepare("INSERT INTO t VALUES (?)").run(round)
        checkpointer.committed()
        expect(yield* eventually(() => checkpointer.status().completed === round)).toBe(true)
      }
      expect(asked).toBe(2)
      expect(checkpointer.status()).toEqual({ completed: 2, restarts: 0, failed: null })
    }).pipe(Effect.scoped)
  )

  it.live("leaves checkpoints to SQLite when its worker cannot run", () =>
    withDatabase(
      { every: 4, idleMs: 5, module: "/nonexistent/better-sqlite3.node.js" },
      { commits: 50, burst: 10, pauseMs: 1 },
      (db) =>
        Effect.gen(function* () {
          expect(yield* eventually(() => db.checkpoints()?.failed != null)).toBe(true)
          expect(db.checkpoints()?.failed).toMatch(/Cannot find module/)
          const [pragma] = yield* Effect.orDie(
            db.sql.unsafe<{ wal_autocheckpoint: number }>("PRAGMA wal_autocheckpoint")
          )
          expect(pragma?.wal_autocheckpoint).toBe(1000)
        })
    )
  )

  it.live("has nothing to do for an in-memory database", () =>
    Effect.gen(function* () {
      const db = yield* StoreDb
      yield* db.transaction(function* (d) {
        yield* d.run("CREATE TABLE t (x)")
      })
      expect(db.checkpoints()).toBeNull()
    }).pipe(Effect.provide(Layer.orDie(Sqlite.layer(":memory:"))), Effect.scoped)
  )
})
