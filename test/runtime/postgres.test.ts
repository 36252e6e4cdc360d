/**
 * The store on PostgreSQL (a real server, test/support/postgres.ts): the same runtime
 * as on SQLite, over a `postgresql://` URL. A thread's life (runs, an approval, a
 * handoff between providers, a fork and its merge-back, a subagent, a rollback, a queued
 * run, long strings), read back by a fresh runtime and after the projections are
 * rebuilt; receipts; the expected-sequence fence between two processes' writers; a
 * follower in another process told every commit, also one whose notice was lost; a
 * process deaf to its own notices; one runtime per database; a server too old refused;
 * and the schema the same as SQLite's.
 */
import { SqlClient } from "@effect/sql"
import type { AppThread, CommandId, ProviderName, StoredEvent, ThreadId, ThreadView } from "@skein/domain"
import { ThreadUpdated } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Database, EventStore, Orchestrator } from "@skein/runtime"
import { Effect, Either, Fiber, Layer, ManagedRuntime, Schedule, Stream } from "effect"
import Pg from "pg"
import { StoreDb } from "../../packages/runtime/src/store/StoreDb.js"
import { dropDatabase, freshDatabase } from "../support/postgres.js"
import { usePostgres } from "../support/usePostgres.js"
import { inTempRuntime, removeDir, runtimeLayer, storeOn, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

const pg = usePostgres()

/** Resolves once `done` holds, checked every 50 ms; fails after 10 s. */
const until = (done: () => boolean) => untilAsync(async () => done())

const untilAsync = async (done: () => Promise<boolean>) => {
  for (const deadline = Date.now() + 10_000; !(await done());) {
    if (Date.now() > deadline) throw new Error("not within 10 s")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The connections listening for commit notices on the test's database. */
const LISTENING = "FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = current_database()"

/** Resolves once `n` connections listen for commit notices. */
const untilListening = (admin: Pg.Client, n: number) =>
  untilAsync(async () => (await admin.query(`SELECT pid ${LISTENING}`)).rowCount === n)

/** Appends a ThreadUpdated that gives the thread `title`, through `store`. */
const retitle = (store: ManagedRuntime.ManagedRuntime<EventStore, unknown>, thread: AppThread, title: string) =>
  store.runPromise(
    Effect.flatMap(EventStore, (s) =>
      s.append({ threadId: thread.id, events: [new ThreadUpdated({ thread: { ...thread, title } })] })
    )
  )

/** A writer's and a reader's store (two processes) on the test database, and an admin connection. */
const withTwoStores = async (
  body: (
    stores: Record<"writer" | "reader", ReturnType<typeof storeOn>>,
    admin: Pg.Client,
    dir: string
  ) => Promise<void>
) => {
  const dir = tempDir()
  const [writer, reader] = [storeOn(dir, pg.url()), storeOn(dir, pg.url())]
  const admin = new Pg.Client({ connectionString: pg.url() })
  await admin.connect()
  try {
    await body({ writer, reader }, admin, dir)
  } finally {
    await admin.end()
    await reader.dispose()
    await writer.dispose()
    removeDir(dir)
  }
}

/** Follows the thread in `store` from its start, each event pushed to `seen`; the fiber. */
const followInto = (store: ReturnType<typeof storeOn>, threadId: ThreadId, seen: Array<StoredEvent>) =>
  store.runFork(
    Effect.flatMap(EventStore, (s) =>
      s.events(threadId, 0).pipe(Stream.runForEach((event) => Effect.sync(() => void seen.push(event))))
    )
  )

/** What a view says, without what differs between two reads of the same state. */
const comparable = (view: ThreadView) => JSON.parse(JSON.stringify(view)) as unknown

describe("the store on PostgreSQL", () => {
  it("keeps a thread's whole life: read back by a fresh runtime, and the same after a rebuild", async () => {
    const dir = tempDir()
    try {
      const long = `${"a long message ".repeat(1000)}end`
      const ids = await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ title: "on postgres", workspace: dir })
            const one = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "hello", wait: true })
            expect(one.status).toBe("completed")
            // An approval, answered.
            const asking = yield* o.startRun({
              threadId: thread.id,
              provider: alpha,
              message: "[[ask:May I?]]",
              commandId: "cmd_pg_ask" as CommandId
            })
            const approval = yield* Effect.retry(
              Effect.flatMap(o.getThread(thread.id), (view) => {
                const item = view.runs.find((r) => r.id === asking.id)?.items.find((i) => i.type === "approval_request")
                return item === undefined ? Effect.fail("not yet") : Effect.succeed(item)
              }),
              { times: 200 }
            )
            yield* o.respondApproval({ threadId: thread.id, approvalId: approval.approvalId!, decision: "accept" })
            // Another provider: a handoff carries the context over.
            const three = yield* o.startRun({ threadId: thread.id, provider: beta, message: long, wait: true })
            expect(three.status).toBe("completed")
            const { thread: fork } = yield* o.forkThread({ sourceThreadId: thread.id, sourcePoint: "latest_stable" })
            yield* o.startRun({ threadId: fork.id, provider: alpha, message: "on the fork", wait: true })
            yield* o.mergeBack({ forkThreadId: fork.id })
            const { thread: child } = yield* o.spawnSubagent({
              parentThreadId: thread.id,
              provider: beta,
              prompt: "help"
            })
            yield* o.startRun({ threadId: thread.id, provider: alpha, message: "four", wait: true })
            yield* o.rollback({ threadId: thread.id, toRunOrdinal: 3 })
            return { thread: thread.id, fork: fork.id, child: child.id }
          }),
        { store: pg.url() }
      )
      const views = await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const main = yield* o.getThread(ids.thread)
            expect(main.runs.map((r) => [r.ordinal, r.status])).toEqual([
              [1, "completed"],
              [2, "completed"],
              [3, "completed"],
              [4, "rolled_back"]
            ])
            expect(main.runs[2]!.message).toBe(long)
            expect(main.runs[1]!.items.find((i) => i.type === "approval_request")).toMatchObject({ status: "accept" })
            expect(main.handoffs.length).toBeGreaterThan(0)
            expect(main.children.map((c) => c.id).sort()).toEqual([ids.fork, ids.child].sort())
            // The fresh runtime goes on where the first stopped.
            const five = yield* o.startRun({ threadId: ids.thread, provider: beta, message: "five", wait: true })
            expect([five.ordinal, five.status]).toEqual([5, "completed"])
            // The receipt answers a retry as the first time, from the database.
            const again = yield* o.startRun({
              threadId: ids.thread,
              provider: alpha,
              message: "[[ask:May I?]]",
              commandId: "cmd_pg_ask" as CommandId
            })
            expect(again.ordinal).toBe(2)
            return yield* Effect.all([ids.thread, ids.fork, ids.child].map((id) => o.getThread(id as ThreadId)))
          }),
        { store: pg.url() }
      )
      const store = storeOn(dir, pg.url())
      try {
        await store.runPromise(Effect.flatMap(EventStore, (s) => s.rebuildProjections))
      } finally {
        await store.dispose()
      }
      const rebuilt = await withRuntime(
        dir,
        (o) => Effect.all([ids.thread, ids.fork, ids.child].map((id) => o.getThread(id as ThreadId))),
        { store: pg.url() }
      )
      expect(rebuilt.map(comparable)).toEqual(views.map(comparable))
    } finally {
      removeDir(dir)
    }
  })

  it("queues a run behind a running one and starts it after", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          const slow = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[sleep:300]] slow" })
          const queued = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "next", whenBusy: "queue" })
          expect(queued.status).toBe("queued")
          yield* Effect.retry(
            Effect.flatMap(o.getThread(thread.id), (view) =>
              view.runs.every((r) => r.status === "completed") && view.runs.length === 2
                ? Effect.void
                : Effect.fail("not yet")
            ),
            // Up to 10 s, whatever the machine's load.
            { times: 500, schedule: Schedule.spaced("20 millis") }
          )
          expect(slow.ordinal).toBe(1)
        }),
      { store: pg.url() }
    )
  })

  it("two processes' writers on one thread: the stale one is refused, and sequences stay gap-free", async () => {
    const dir = tempDir()
    const [first, second] = [storeOn(dir, pg.url()), storeOn(dir, pg.url())]
    try {
      const thread = await withRuntime(dir, (o) => o.createThread({ title: "fence" }), { store: pg.url() })
      const threadId = thread.id
      const update = (title: string) => new ThreadUpdated({ thread: { ...thread, title } })
      // Both saw sequence 1 and append at once: exactly one wins.
      const race = await Promise.all(
        [first, second].map((store, i) =>
          store.runPromise(
            Effect.either(
              Effect.flatMap(EventStore, (s) =>
                s.append({ threadId, events: [update(`writer ${i}`)], expectedSequence: 1 })
              )
            )
          )
        )
      )
      expect(race.filter(Either.isRight)).toHaveLength(1)
      expect(race.filter(Either.isLeft).map((l) => (l as Either.Left<{ _tag: string }, unknown>).left._tag)).toEqual([
        "SequenceConflict"
      ])
      // Without a fence, 20 appends from both at once: one thread sequence each, no gap.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? first : second).runPromise(
            Effect.flatMap(EventStore, (s) => s.append({ threadId, events: [update(`burst ${i}`)] }))
          )
        )
      )
      const events = await first.runPromise(Effect.flatMap(EventStore, (s) => s.readEvents(threadId, 0, 100)))
      expect(events.map((e: StoredEvent) => e.threadSequence)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1))
    } finally {
      await first.dispose()
      await second.dispose()
      removeDir(dir)
    }
  })

  it("tells a follower in another process every event written elsewhere, in order, and a run's end", async () => {
    const dir = tempDir()
    const writer = ManagedRuntime.make(runtimeLayer(dir, { store: pg.url() }))
    const reader = storeOn(dir, pg.url())
    try {
      const o = await writer.runPromise(Orchestrator)
      const thread = await writer.runPromise(o.createThread({ title: "followed" }))
      const seen: Array<StoredEvent> = []
      const following = reader.runPromise(
        Effect.flatMap(EventStore, (s) =>
          s.events(thread.id, 0).pipe(
            Stream.tap((event) => Effect.sync(() => void seen.push(event))),
            Stream.filter((event) => event.event._tag === "RunEnded"),
            Stream.take(3),
            Stream.runDrain,
            Effect.timeout("30 seconds")
          )
        )
      )
      const started = await writer.runPromise(o.startRun({ threadId: thread.id, provider: alpha, message: "one" }))
      const ended = await reader.runPromise(
        Effect.flatMap(EventStore, (s) => s.awaitRunEnd(thread.id, started.id)).pipe(Effect.timeout("30 seconds"))
      )
      expect(ended.status).toBe("completed")
      for (const message of ["two", "three"]) {
        await writer.runPromise(o.startRun({ threadId: thread.id, provider: beta, message, wait: true }))
      }
      await following
      const stored = await reader.runPromise(Effect.flatMap(EventStore, (s) => s.readEvents(thread.id, 0, 1000)))
      // The follower saw the log as it is: every event once, in order, up to the third run's end.
      expect(seen.map((e) => e.threadSequence)).toEqual(stored.slice(0, seen.length).map((e) => e.threadSequence))
      expect(seen.map((e) => e.threadSequence)).toEqual(seen.map((_, i) => i + 1))
    } finally {
      await reader.dispose()
      await writer.dispose()
      removeDir(dir)
    }
  })

  it("tells a follower what a lost notice would have brought, by reading the followed threads again", () =>
    withTwoStores(async ({ writer, reader }, admin, dir) => {
      const thread = await withRuntime(dir, (o) => o.createThread({ title: "cut" }), { store: pg.url() })
      const seen: Array<StoredEvent> = []
      const following = followInto(reader, thread.id, seen)
      await until(() => seen.length === 1)
      await writer.runPromise(EventStore)
      // The reader listens (the writer follows nothing, so it does not); then the
      // listening connection ends, and a commit is made before it listens again: its
      // notice reaches no one.
      await untilListening(admin, 1)
      await admin.query(`SELECT pg_terminate_backend(pid) ${LISTENING}`)
      await retitle(writer, thread, "after the cut")
      await until(() => seen.length === 2)
      expect(seen.map((e) => [e.threadSequence, e.event._tag])).toEqual([
        [1, "ThreadCreated"],
        [2, "ThreadUpdated"]
      ])
      await Effect.runPromise(Fiber.interrupt(following))
    }))

  it("listens for other processes' commits only while it follows a thread", () =>
    withTwoStores(async ({ writer, reader }, admin, dir) => {
      const listening = async () => (await admin.query(`SELECT pid ${LISTENING}`)).rowCount
      const thread = await withRuntime(dir, (o) => o.createThread({ title: "quiet" }), { store: pg.url() })
      await writer.runPromise(EventStore)
      await reader.runPromise(EventStore)
      await retitle(writer, thread, "unheard")
      expect(await listening()).toBe(0)
      const seen: Array<StoredEvent> = []
      const following = followInto(reader, thread.id, seen)
      await until(() => seen.length === 2)
      // The listen is in place before the follower reads the log.
      expect(await listening()).toBe(1)
      await retitle(writer, thread, "heard")
      await until(() => seen.length === 3)
      expect(seen.map((e) => e.threadSequence)).toEqual([1, 2, 3])
      await Effect.runPromise(Fiber.interrupt(following))
    }))

  it("hears the commit notices of other processes, not its own", async () => {
    const dir = tempDir()
    // Two processes' stores, each with its connection to the database.
    const withDb = () =>
      ManagedRuntime.make(EventStore.layer.pipe(Layer.provideMerge(Database.layer({ filename: pg.url() }))))
    const [one, other] = [withDb(), withDb()]
    const admin = new Pg.Client({ connectionString: pg.url() })
    await admin.connect()
    try {
      const thread = await withRuntime(dir, (o) => o.createThread({ title: "notices" }), { store: pg.url() })
      const heard = { one: [] as Array<unknown>, other: [] as Array<unknown> }
      const fibers = (["one", "other"] as const).map((name) =>
        (name === "one" ? one : other).runFork(
          Effect.flatMap(StoreDb, (db) =>
            Effect.scoped(
              Effect.flatMap(db.announced!, (notices) =>
                Stream.runForEach(notices, (c) => Effect.sync(() => heard[name].push(c)))
              )
            )
          )
        )
      )
      await untilListening(admin, 2)
      await retitle(one, thread, "once")
      await until(() => heard.other.length === 1)
      // Its own notice would have come first, on the same server, long before the other's.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(heard).toEqual({ one: [], other: [{ threadId: thread.id, first: 2, last: 2 }] })
      for (const fiber of fibers) await Effect.runPromise(Fiber.interrupt(fiber))
    } finally {
      await admin.end()
      await other.dispose()
      await one.dispose()
      removeDir(dir)
    }
  })

  it("serves one runtime at a time: a second is refused while the first is open", async () => {
    const dir = tempDir()
    try {
      const opened = ManagedRuntime.make(runtimeLayer(dir, { store: pg.url() }))
      await opened.runtime()
      const refused = await Effect.runPromise(
        Effect.either(Layer.launch(Database.locked({ filename: pg.url() })).pipe(Effect.timeout("20 seconds")))
      )
      expect(Either.isLeft(refused) && refused.left._tag).toBe("DatabaseInUse")
      const message = Either.isLeft(refused) ? (refused.left as Error).message : ""
      expect(message).toContain(`process ${process.pid}`)
      expect(message).not.toContain(new URL(pg.url()).password)
      await opened.dispose()
      // Closed: the next one opens.
      const next = ManagedRuntime.make(runtimeLayer(dir, { store: pg.url() }))
      await next.runtime()
      await next.dispose()
    } finally {
      removeDir(dir)
    }
  })

  it("refuses a server older than PostgreSQL 15, saying which it found, before writing anything", async () => {
    // A server that says it is 14.11: `current_setting` shadowed for the database's sessions.
    const url = await freshDatabase(pg.url())
    const name = new URL(url).pathname.slice(1)
    const admin = new Pg.Client({ connectionString: url })
    await admin.connect()
    try {
      await admin.query("CREATE SCHEMA shim")
      await admin.query(
        `CREATE FUNCTION shim.current_setting(text) RETURNS text LANGUAGE sql AS $$
           SELECT CASE $1 WHEN 'server_version_num' THEN '140011' WHEN 'server_version' THEN '14.11'
           ELSE pg_catalog.current_setting($1) END $$`
      )
      await admin.query(`ALTER DATABASE ${name} SET search_path = shim, pg_catalog, public`)
      const refused = await Effect.runPromise(
        Effect.either(Layer.launch(Database.layer({ filename: url })).pipe(Effect.timeout("20 seconds")))
      )
      expect(Either.isLeft(refused) && refused.left._tag).toBe("StorageError")
      const message = Either.isLeft(refused) ? refused.left.message : ""
      expect(message).toContain("runs PostgreSQL 14.11; Skein needs PostgreSQL 15 or later")
      expect(message).not.toContain(new URL(url).password)
      const tables = await admin.query("SELECT tablename FROM pg_tables WHERE schemaname IN ('public', 'shim')")
      expect(tables.rows).toEqual([])
    } finally {
      await admin.end()
      await dropDatabase(url)
    }
  })

  it("has the schema the SQLite migrations arrive at", async () => {
    const sqlite = await Effect.runPromise(
      Effect.scoped(Effect.provide(describeSchema("sqlite"), Database.layer({ filename: ":memory:" })))
    )
    const postgres = await Effect.runPromise(
      Effect.scoped(Effect.provide(describeSchema("postgresql"), Database.layer({ filename: pg.url() })))
    )
    expect(Object.keys(sqlite).length).toBeGreaterThan(10)
    expect(postgres).toEqual(sqlite)
  })
})

/** Tables (but the bookkeeping ones) with their columns, key, unique column sets and index names. */
const describeSchema = (dialect: "sqlite" | "postgresql") =>
  // Through SqlClient, which takes each database's own SQL (PostgreSQL's parameters are $1 …).
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const out: Record<string, unknown> = {}
    const skip = new Set(["effect_sql_migrations", "sqlite_sequence", "skein_store"])
    if (dialect === "sqlite") {
      const tables = yield* sql.unsafe<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      for (const { name } of tables.filter((t) => !skip.has(t.name))) {
        const columns = yield* sql.unsafe<{ name: string; pk: number }>(`PRAGMA table_info(${name})`)
        const indexes = yield* sql.unsafe<{ name: string; unique: number; origin: string }>(
          `PRAGMA index_list(${name})`
        )
        const uniques: Array<string> = []
        for (const index of indexes.filter((i) => i.unique === 1 && i.origin === "u")) {
          const cols = yield* sql.unsafe<{ name: string }>(`PRAGMA index_info(${index.name})`)
          uniques.push(cols.map((c) => c.name).join(","))
        }
        out[name] = {
          columns: columns.map((c) => c.name).sort(),
          key: columns
            .filter((c) => c.pk > 0)
            .sort((a, b) => a.pk - b.pk)
            .map((c) => c.name),
          unique: uniques.sort(),
          indexes: indexes
            .filter((i) => i.origin === "c")
            .map((i) => i.name)
            .sort()
        }
      }
    } else {
      const tables = yield* sql.unsafe<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'"
      )
      for (const { name } of tables.filter((t) => !skip.has(t.name))) {
        const columns = yield* sql.unsafe<{ name: string }>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
          [name]
        )
        const constraints = yield* sql.unsafe<{ type: string; cols: string }>(
          `SELECT c.contype AS type, string_agg(a.attname, ',' ORDER BY k.ord) AS cols
           FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY k(attnum, ord)
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
           WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u') GROUP BY c.oid, c.contype`,
          [name]
        )
        const indexes = yield* sql.unsafe<{ name: string }>(
          `SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
           WHERE x.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
          [name]
        )
        out[name] = {
          // `rowid` is SQLite's own column there.
          columns: columns
            .map((c) => c.name)
            .filter((c) => c !== "rowid")
            .sort(),
          key: constraints.find((c) => c.type === "p")?.cols.split(",") ?? [],
          unique: constraints
            .filter((c) => c.type === "u")
            .map((c) => c.cols)
            .sort(),
          indexes: indexes.map((i) => i.name).sort()
        }
      }
    }
    return out
  })
