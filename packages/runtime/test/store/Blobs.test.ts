import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import {
  RunEnded,
  RunStarted,
  ThreadCreated,
  ThreadEvent as ThreadEventSchema,
  TurnItemRecorded,
  type ThreadEvent
} from "@skein/domain"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Option, Schema } from "effect"
import { BLOB_MIN_CHARS, expand, externalize } from "../../src/store/Blobs.js"
import { STORE_FORMAT_VERSION } from "../../src/store/Database.js"
import { EventStore } from "../../src/store/EventStore.js"
import { migrations } from "../../src/store/Migrations.js"
import { foldEvents } from "../../src/store/Projection.js"
import * as Sqlite from "../../src/store/Sqlite.js"
import { makeItem, makeRun, makeThread, threadId } from "./builders.js"
import { storeLayer } from "./support.js"

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const long = (seed: string) => seed.padEnd(BLOB_MIN_CHARS + 100, seed)

/** Text that spells a reference without being one: a NUL, or a backslash and `u0000`. */
const lookalikes = [`\u0000blob:${sha256("x")}`, `\\u0000blob:${sha256("x")}`, `say "\u0000blob:${sha256("x")}" twice`]

describe("Blobs", () => {
  it("leaves JSON without long strings as it is, and takes each long string out once", () => {
    const small = { a: "short", b: [1, 2] }
    const json = JSON.stringify(small)
    expect(externalize(small, json)).toEqual({ json, blobs: [] })

    const text = long("m")
    const value = { message: text, items: [{ text }, { text: "short" }] }
    const stored = externalize(value, JSON.stringify(value))
    const reference = `\\u0000blob:${sha256(text)}`
    expect(stored.json).toBe(`{"message":"${reference}","items":[{"text":"${reference}"},{"text":"short"}]}`)
    expect(stored.blobs).toEqual([
      { hash: sha256(text), text },
      { hash: sha256(text), text }
    ])
    const blobs = new Map(stored.blobs.map((b) => [b.hash, b.text]))
    expect(expand(stored.json, (hash) => blobs.get(hash))).toBe(JSON.stringify(value))
  })

  it("stores text that looks like a reference by reference, so that it reads back as written", () => {
    const value = { texts: lookalikes, edge: "e".repeat(BLOB_MIN_CHARS - 1) }
    const json = JSON.stringify(value)
    const stored = externalize(value, json)
    // The two with a NUL are taken out; the backslash one and the string one short of the limit stay.
    expect(stored.blobs.map((b) => b.text)).toEqual([lookalikes[0], lookalikes[2]])
    expect(stored.json).toContain(JSON.stringify(lookalikes[1]))
    expect(stored.json).toContain(JSON.stringify(value.edge))
    const blobs = new Map(stored.blobs.map((b) => [b.hash, b.text]))
    expect(expand(stored.json, (hash) => blobs.get(hash))).toBe(json)
    expect(() => expand(stored.json, () => undefined)).toThrow(
      `the stored string ${sha256(lookalikes[0]!)} is missing from table blobs`
    )
  })
})

describe("the store keeps a long message once", () => {
  const t = threadId("blobs")
  const run = makeRun(t, 1, { message: long("1 MiB of words ") })
  const log: Array<ThreadEvent> = [
    new ThreadCreated({ thread: makeThread(t) }),
    new RunStarted({ run }),
    new TurnItemRecorded({ item: makeItem(run, 0, { type: "user_message", text: run.message }) }),
    new TurnItemRecorded({ item: makeItem(run, 1, { type: "assistant_message", text: lookalikes[0]! }) }),
    new RunEnded({ run: { ...run, status: "completed", completedAt: run.startedAt } })
  ]

  /** Rows of every table that hold `text` whole. */
  const holders = (text: string) =>
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql.unsafe<{ readonly name: string; readonly n: number }>(
          `SELECT 'events' AS name, COUNT(*) AS n FROM events WHERE instr(payload, ?) > 0
           UNION ALL SELECT 'runs', COUNT(*) FROM runs WHERE instr(data, ?) > 0
           UNION ALL SELECT 'turn_items', COUNT(*) FROM turn_items WHERE instr(data, ?) > 0
           UNION ALL SELECT 'blobs', COUNT(*) FROM blobs WHERE text = ?`,
          [text, text, text, text]
        ),
        (rows) => rows.filter((r) => r.n > 0)
      )
    )

  it.effect("in one row of blobs; the log, the projections and a rebuild read it back whole", () =>
    Effect.gen(function* () {
      const store = yield* EventStore
      yield* store.append({ threadId: t, events: log })
      // SqlClient returns rows as stored (StoreDb, which the store reads through, expands them).
      expect(yield* holders(run.message)).toEqual([{ name: "blobs", n: 1 }])
      // A row that refers to blobs begins with a tab, still JSON to SQLite; the others as before.
      const sql = yield* SqlClient
      expect(yield* sql.unsafe(`SELECT type, unicode(payload) AS first FROM events ORDER BY thread_sequence`)).toEqual([
        { type: "ThreadCreated", first: 123 },
        { type: "RunStarted", first: 9 },
        { type: "TurnItemRecorded", first: 9 },
        { type: "TurnItemRecorded", first: 9 },
        { type: "RunEnded", first: 9 }
      ])
      expect(
        yield* sql.unsafe(`SELECT unicode(data) AS first, json_extract(data, '$.status') AS status FROM runs`)
      ).toEqual([{ first: 9, status: "completed" }])
      expect(yield* sql.unsafe(`SELECT unicode(data) AS first FROM threads`)).toEqual([{ first: 123 }])
      const stored = yield* store.readEvents(t, 0, 100)
      expect(stored.map((s) => s.event)).toEqual(log)
      expect(Option.getOrThrow(yield* store.loadCompleteThread(t))).toEqual(foldEvents(log))
      yield* store.rebuildProjections
      expect(Option.getOrThrow(yield* store.loadCompleteThread(t))).toEqual(foldEvents(log))
      expect(yield* holders(run.message)).toEqual([{ name: "blobs", n: 1 }])
    }).pipe(Effect.provide(storeLayer()))
  )

  it.effect("a database from before blobs opens: its rows read as they were, new ones refer to blobs", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-blobs-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "old.db")
      // The schema and format of the Skein before: the long message inline in every row.
      yield* Effect.gen(function* () {
        yield* Migrator.make({})({
          loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([key]) => key < "0008")))
        })
        const sql = yield* SqlClient
        yield* sql.unsafe("PRAGMA user_version = 2")
        const payload = (event: ThreadEvent) => JSON.stringify(Schema.encodeSync(ThreadEventSchema)(event))
        for (const [i, event] of log.slice(0, 3).entries()) {
          yield* sql.unsafe(
            "INSERT INTO events (thread_id, thread_sequence, type, payload, command_id, created_at) VALUES (?, ?, ?, ?, NULL, 'then')",
            [t, i + 1, event._tag, payload(event)]
          )
        }
      }).pipe(Effect.provide(Sqlite.layer(file)), Effect.scoped)
      yield* Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        expect((yield* store.readEvents(t, 0, 100)).map((s) => s.event)).toEqual(log.slice(0, 3))
        yield* store.rebuildProjections
        yield* store.append({ threadId: t, events: log.slice(3) })
        expect(Option.getOrThrow(yield* store.loadCompleteThread(t))).toEqual(foldEvents(log))
        // The old events keep it inline; the rebuilt projection and the new RunEnded refer to blobs.
        expect(yield* holders(run.message)).toEqual([
          { name: "events", n: 2 },
          { name: "blobs", n: 1 }
        ])
        expect(yield* sql.unsafe("PRAGMA user_version")).toEqual([{ user_version: STORE_FORMAT_VERSION }])
      }).pipe(Effect.provide(storeLayer(file)))
    }).pipe(Effect.scoped)
  )
})
