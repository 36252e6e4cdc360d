import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import {
  CheckpointRecorded,
  CommandId,
  ContextHandoffId,
  RunId,
  RunEnded,
  RunStarted,
  ThreadCreated,
  TransferRecorded,
  TurnItemRecorded,
  type StoredEvent,
  type ThreadEvent
} from "@skein/domain"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Effect, Either, Fiber, Option, Stream } from "effect"
import { EventStore } from "../../src/store/EventStore.js"
import * as Sqlite from "../../src/store/Sqlite.js"
import { foldEvents, toThreadView } from "../../src/store/Projection.js"
import {
  itemContents,
  makeCheckpoint,
  makeItem,
  makeRun,
  makeThread,
  makeTransfer,
  sampleLog,
  threadId
} from "./builders.js"
import { dumpTables, storeLayer } from "./support.js"
import { migrations as migrationList } from "../../src/store/Migrations.js"
import { pendingCheckpointQueries, transferListQuery } from "../../src/store/ProjectionReads.js"

const latestMigration = Object.keys(migrationList).sort().at(-1)!

/** The detail of a StorageError (a SequenceConflict here would be a wrong answer). */
const detailOf = (error: { readonly _tag: string; readonly message: string }): string =>
  "detail" in error && typeof error.detail === "string" ? error.detail : `not a StorageError: ${error._tag}`

const withStore = <A, E>(effect: Effect.Effect<A, E, EventStore | SqlClient>) =>
  effect.pipe(Effect.provide(storeLayer()))

const created = (name: string, overrides: Parameters<typeof makeThread>[1] = {}) =>
  new ThreadCreated({ thread: makeThread(threadId(name), overrides) })

/** The schema as it was before migration `before` (`"0005"`: up to 0004). */
const migrateBefore = (before: string) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrationList).filter(([key]) => key < before)))
  })

/** Rows as `dumpTables` gives them, inserted with their rowids where they have one. */
const copyRows = (dump: Record<string, unknown>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    for (const [table, rows] of Object.entries(dump)) {
      for (const { _rowid, ...row } of rows as Array<Record<string, unknown>>) {
        const columns = [...(_rowid === undefined ? [] : ["rowid"]), ...Object.keys(row)]
        const values = [...(_rowid === undefined ? [] : [_rowid]), ...Object.values(row)]
        yield* sql.unsafe(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
          values as Array<string | number | null>
        )
      }
    }
  })

describe("EventStore", () => {
  it.effect("append assigns per-thread sequences and loadThread/threadView read back the fold", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const a = threadId("a")
        const b = threadId("b")
        const logA = sampleLog(a)
        const logB = sampleLog(b, a) // its incoming transfer comes from a
        const first = yield* store.append({ threadId: a, events: logA.slice(0, 3) })
        yield* store.append({ threadId: b, events: logB })
        const rest = yield* store.append({ threadId: a, events: logA.slice(3) })
        expect([...first, ...rest].map((e) => e.threadSequence)).toEqual(logA.map((_, i) => i + 1))
        expect(yield* store.readEvents(a, 0, 100)).toEqual([...first, ...rest])
        expect(yield* store.readEvents(a, 2, 3)).toEqual(first.slice(2).concat(rest.slice(0, 2)))
        expect(rest[0]!.sequence).toBeGreaterThan(first[2]!.sequence + logB.length - 1)

        const stateA = Option.getOrThrow(yield* store.loadCompleteThread(a))
        expect(stateA).toEqual(foldEvents(logA))
        expect(stateA.lastThreadSequence).toBe(logA.length)

        const viewA = Option.getOrThrow(yield* store.threadView(a))
        const outgoing = logB.flatMap((e) => (e._tag === "TransferRecorded" ? [e.transfer] : []))
        expect(viewA).toEqual(toThreadView(foldEvents(logA)!, outgoing))
        expect(viewA.transfers.map((t) => t.id).sort()).toEqual(
          [...foldEvents(logA)!.transfers.keys(), ...outgoing.map((t) => t.id)].sort()
        )
        expect(viewA.runs[0]!.items.map((i) => i.seq)).toEqual(itemContents(1).map((_, i) => i))

        expect(yield* store.loadThread(threadId("nope"))).toEqual(Option.none())
        expect(yield* store.threadView(threadId("nope"))).toEqual(Option.none())
      })
    )
  )

  it.effect("listThreads filters by parent and root; getHandoff finds a handoff by id", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const root = threadId("root")
        const lineage = (parent: string) => ({
          lineage: { parentThreadId: threadId(parent), relationshipToParent: "fork" as const, rootThreadId: root }
        })
        yield* store.append({ threadId: root, events: sampleLog(root) })
        yield* store.append({ threadId: threadId("f1"), events: [created("f1", lineage("root"))] })
        yield* store.append({ threadId: threadId("f2"), events: [created("f2", lineage("f1"))] })
        yield* store.append({ threadId: threadId("other"), events: [created("other")] })
        const ids = (threads: ReadonlyArray<{ readonly id: string }>) => threads.map((t) => t.id).sort()
        expect(ids(yield* store.listThreads({}))).toEqual(["thr_f1", "thr_f2", "thr_other", "thr_root"])
        expect(ids(yield* store.listThreads({ rootThreadId: root }))).toEqual(["thr_f1", "thr_f2", "thr_root"])
        expect(ids(yield* store.listThreads({ parentThreadId: threadId("f1") }))).toEqual(["thr_f2"])
        expect(ids(yield* store.listThreads({ parentThreadId: root, rootThreadId: root }))).toEqual(["thr_f1"])

        const handoff = foldEvents(sampleLog(root))!.handoffs.values().next().value!.full!
        expect(yield* store.getHandoff(handoff.id)).toEqual(Option.some(handoff))
        expect(yield* store.getHandoff(ContextHandoffId.make("hof_missing"))).toEqual(Option.none())
      })
    )
  )

  it.effect("activeRuns lists queued and running runs of every thread", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const a = threadId("a")
        const b = threadId("b")
        const queued = makeRun(b, 1, { status: "queued", startedAt: null })
        yield* store.append({ threadId: a, events: sampleLog(a) }) // its run ends completed
        yield* store.append({ threadId: b, events: [created("b"), new RunStarted({ run: queued })] })
        const running = makeRun(a, 2)
        yield* store.append({ threadId: a, events: [new RunStarted({ run: running })] })
        expect(yield* store.activeRuns).toEqual([running, queued])
      })
    )
  )

  it.effect("pendingCheckpoints lists the git checkpoints not taken yet, through their partial index", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        const a = threadId("a")
        const b = threadId("b")
        /** A thread whose first run's checkpoint is ready and whose second run's is pending. */
        const withPending = (thread: typeof a) =>
          Effect.gen(function* () {
            yield* store.append({ threadId: thread, events: sampleLog(thread) })
            const run = makeRun(thread, 2, { status: "completed" })
            const pending = makeCheckpoint(run, { status: "pending", gitRef: null, treeSha: null, diffSummary: [] })
            yield* store.append({
              threadId: thread,
              events: [new RunStarted({ run }), new CheckpointRecorded({ checkpoint: pending })]
            })
            return pending
          })
        const pendingA = yield* withPending(a)
        const pendingB = yield* withPending(b)
        expect(yield* store.pendingCheckpoints(a)).toEqual([pendingA])
        expect(yield* store.pendingCheckpoints(null)).toEqual([pendingA, pendingB])
        // Taken: no longer pending.
        const ready = { ...pendingA, status: "ready" as const, gitRef: "refs/skein/a/2", treeSha: "b".repeat(40) }
        yield* store.append({ threadId: a, events: [new CheckpointRecorded({ checkpoint: ready })] })
        expect(yield* store.pendingCheckpoints(a)).toEqual([])
        expect(yield* store.pendingCheckpoints(null)).toEqual([pendingB])
        // However many checkpoints a thread has, the lookups read only the pending ones.
        for (const [query, params] of [
          [pendingCheckpointQueries.ofThread, [a]],
          [pendingCheckpointQueries.ofAll, []]
        ] as const) {
          const plan = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, [...params])
          expect(plan.map((row) => row.detail).join(" ")).toMatch(/USING INDEX checkpoints_pending/)
        }
        // The transfers still waiting, across threads, by their index too (transfer.list).
        const [query, params] = transferListQuery({ status: "pending" })
        const plan = yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, [...params])
        expect(plan.map((row) => row.detail).join(" ")).toMatch(/USING INDEX transfers_by_status/)
      })
    )
  )

  it.effect("concurrent appends to one thread never interleave or reuse a sequence", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("busy")
        const run = makeRun(t, 1)
        yield* store.append({ threadId: t, events: [created("busy"), new RunStarted({ run })] })
        const fibers = 20
        const appends = 20
        const perAppend = 3
        const results = yield* Effect.forEach(
          Array.from({ length: fibers }, (_, f) => f),
          (f) =>
            Effect.forEach(
              Array.from({ length: appends }, (_, a) => a),
              (a) =>
                Effect.zipRight(
                  Effect.yieldNow(),
                  store.append({
                    threadId: t,
                    events: Array.from(
                      { length: perAppend },
                      (_, k) =>
                        new TurnItemRecorded({
                          item: makeItem(run, f * 10_000 + a * 10 + k, itemContents(k)[1]!, `itm_${f}_${a}_${k}`)
                        })
                    )
                  })
                )
            ),
          { concurrency: "unbounded" }
        )
        const total = 2 + fibers * appends * perAppend
        const log = yield* store.readEvents(t, 0, total + 10)
        expect(log.map((e) => e.threadSequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
        expect(new Set(log.map((e) => e.sequence)).size).toBe(total)
        const byItem = new Map(
          log.flatMap((e) =>
            e.event._tag === "TurnItemRecorded" ? [[e.event.item.id, e.threadSequence] as const] : []
          )
        )
        for (const stored of results.flat()) {
          const seqs = stored.map((e) => e.threadSequence)
          expect(seqs).toEqual([seqs[0]!, seqs[0]! + 1, seqs[0]! + 2])
          // The log holds each append's events contiguously, in the order given.
          const items = stored.map((e) => (e.event as TurnItemRecorded).item.id)
          expect(items.map((id) => byItem.get(id))).toEqual(seqs)
        }
        const state = Option.getOrThrow(yield* store.loadCompleteThread(t))
        expect(state.items.get(run.id)!.length).toBe(fibers * appends * perAppend)
        expect(state).toEqual(foldEvents(log.map((e) => e.event)))
      })
    )
  )

  it.effect("an append larger than one statement answers each event with the sequence the log holds", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const [a, b] = [threadId("long"), threadId("other")]
        const run = makeRun(a, 1)
        yield* store.append({ threadId: a, events: [created("long"), new RunStarted({ run })] })
        yield* store.append({ threadId: b, events: [created("other")] })
        // More rows than one INSERT takes (maxRowsPerStatement, 200): three statements.
        const items = Array.from(
          { length: 450 },
          (_, k) => new TurnItemRecorded({ item: makeItem(run, k, itemContents(k)[1]!, `itm_long_${k}`) })
        )
        const stored = yield* store.append({ threadId: a, events: items })
        const log = yield* store.readEvents(a, 2, 1000)
        expect(stored.map((e) => [e.sequence, e.threadSequence])).toEqual(
          log.map((e) => [e.sequence, e.threadSequence])
        )
        expect(stored[0]!.sequence).toBe(4)
        expect(stored.map((e) => e.event)).toEqual(log.map((e) => e.event))
      })
    )
  )

  it.effect("a failing append leaves no event, projection row or receipt behind", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const a = threadId("a")
        const b = threadId("b")
        yield* store.append({ threadId: a, events: sampleLog(a) })
        yield* store.append({ threadId: b, events: [created("b")] })
        const before = yield* dumpTables()
        const stateBefore = yield* store.loadThread(b)
        const runB = makeRun(b, 1)
        const clash = makeRun(b, 2, { id: makeRun(a, 1).id }) // run ids are unique across threads
        const commandId = CommandId.make("cmd_fail")
        const failure = yield* Effect.flip(
          store.append({
            threadId: b,
            commandId,
            events: [
              new RunStarted({ run: runB }),
              new TurnItemRecorded({ item: makeItem(runB, 0, itemContents(0)[0]!) }),
              new TransferRecorded({ transfer: makeTransfer(a, b, "x") }),
              new RunStarted({ run: clash })
            ],
            receipt: { commandId, method: "run.start", payloadHash: "h", result: { ok: true } }
          })
        )
        expect(failure._tag).toBe("StorageError")
        expect(detailOf(failure)).toContain("thread thr_b")
        expect(detailOf(failure)).toMatch(/UNIQUE constraint failed: runs\.id/)
        expect(yield* dumpTables()).toEqual(before)
        expect(yield* store.loadThread(b)).toEqual(stateBefore)
        expect(yield* store.receipt(commandId)).toEqual(Option.none())
        // The store is still usable, and sequences carry on without a gap.
        const next = yield* store.append({ threadId: b, events: [new RunStarted({ run: runB })] })
        expect(next[0]!.threadSequence).toBe(2)
      })
    )
  )

  it.effect("a duplicate receipt fails the whole append", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("r")
        const commandId = CommandId.make("cmd_once")
        const receipt = { commandId, method: "thread.create", payloadHash: "h1", result: { n: 1 } }
        yield* store.append({ threadId: t, events: [created("r")], receipt })
        const before = yield* dumpTables()
        const error = yield* Effect.flip(
          store.append({ threadId: t, events: [new RunStarted({ run: makeRun(t, 1) })], receipt })
        )
        expect(detailOf(error)).toMatch(/UNIQUE constraint failed: receipts\.command_id/)
        expect(yield* dumpTables()).toEqual(before)
      })
    )
  )

  it.effect("refuses a stale writer: an append that expects another last sequence writes nothing", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("fenced")
        yield* store.append({ threadId: t, events: [created("fenced")], expectedSequence: 0 })
        // A second writer that also read the empty log is refused.
        const late = yield* Effect.flip(store.append({ threadId: t, events: [created("fenced")], expectedSequence: 0 }))
        expect(late).toMatchObject({ _tag: "SequenceConflict", threadId: t, expected: 0, actual: 1 })
        const before = yield* dumpTables()
        // Two writers that both saw event 1 start "run 1": only the first one lands.
        yield* store.append({ threadId: t, events: [new RunStarted({ run: makeRun(t, 1) })], expectedSequence: 1 })
        const rival = yield* Effect.flip(
          store.append({
            threadId: t,
            events: [new RunStarted({ run: { ...makeRun(t, 1), id: RunId.make("run_rival") } })],
            expectedSequence: 1,
            receipt: { commandId: CommandId.make("cmd_rival"), method: "run.start", payloadHash: "h", result: null }
          })
        )
        expect(rival._tag).toBe("SequenceConflict")
        expect(yield* store.receipt(CommandId.make("cmd_rival"))).toEqual(Option.none())
        const events = yield* store.readEvents(t, 0, 10)
        expect(events.map((e) => [e.threadSequence, e.event._tag])).toEqual([
          [1, "ThreadCreated"],
          [2, "RunStarted"]
        ])
        expect((yield* dumpTables(["runs"])).runs).toHaveLength(1)
        expect(before).not.toEqual(yield* dumpTables())
      })
    )
  )

  it.effect("refuses a first event other than ThreadCreated, and thread events for another thread", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("t")
        const e1 = yield* Effect.flip(store.append({ threadId: t, events: [new RunStarted({ run: makeRun(t, 1) })] }))
        expect(detailOf(e1)).toMatch(/first event must be ThreadCreated \(got RunStarted\)/)
        const e2 = yield* Effect.flip(store.append({ threadId: t, events: [created("other")] }))
        expect(detailOf(e2)).toMatch(/cannot go into the log of thread thr_t/)
        expect(yield* store.readEvents(t, 0, 10)).toEqual([])
        expect(yield* dumpTables(["threads", "runs", "events"])).toEqual({ threads: [], runs: [], events: [] })
      })
    )
  )

  it.effect("receipts: the stored result comes back with its method and payload hash", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("rc")
        const commandId = CommandId.make("cmd_1")
        const result = { thread: makeThread(t), list: [1, "two", null], nested: { ok: true } }
        const stored = yield* store.append({
          threadId: t,
          events: [created("rc")],
          receipt: { commandId, method: "thread.create", payloadHash: "sha256:abc", result }
        })
        expect(stored[0]!.commandId).toBe(commandId)
        expect(yield* store.receipt(commandId)).toEqual(
          Option.some({ method: "thread.create", payloadHash: "sha256:abc", result })
        )
        expect(yield* store.receipt(CommandId.make("cmd_other"))).toEqual(Option.none())
        // A receipt alone (a command that changed nothing) is stored too.
        const quiet = CommandId.make("cmd_quiet")
        yield* store.append({
          threadId: t,
          events: [],
          receipt: { commandId: quiet, method: "run.interrupt", payloadHash: "h", result: null }
        })
        expect(yield* store.receipt(quiet)).toEqual(
          Option.some({ method: "run.interrupt", payloadHash: "h", result: null })
        )
      })
    )
  )

  it.live("events() replays then follows live appends with no gap or duplicate", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const t = threadId("live")
        const other = threadId("other")
        const run = makeRun(t, 1)
        const item = (n: number) =>
          new TurnItemRecorded({ item: makeItem(run, n, itemContents(n)[1]!, `itm_live_${n}`) }) as ThreadEvent
        yield* store.append({ threadId: t, events: [created("live"), new RunStarted({ run })] })
        yield* store.append({ threadId: other, events: [created("other")] })
        // Enough history for several replay pages.
        for (let n = 0; n < 1200; n += 100) {
          yield* store.append({ threadId: t, events: Array.from({ length: 100 }, (_, k) => item(n + k)) })
        }
        const total = 2 + 1200 + 600
        const follow = (after: number) =>
          store.events(t, after).pipe(
            Stream.takeUntil((e) => e.threadSequence >= total),
            Stream.runCollect,
            Effect.map(Chunk.toReadonlyArray),
            Effect.timeout("20 seconds"),
            Effect.fork
          )
        const fromStart = yield* follow(0)
        const fromMiddle = yield* follow(700)
        // Appends race the replays: batches of varying size, interleaved with another thread.
        for (let n = 1200, k = 1; n < 1800; k = (k % 7) + 1) {
          const size = Math.min(k, 1800 - n)
          yield* store.append({ threadId: t, events: Array.from({ length: size }, (_, j) => item(n + j)) })
          yield* store.append({ threadId: other, events: [new RunStarted({ run: makeRun(other, n + 1) })] })
          n += size
          if (k % 3 === 0) yield* Effect.sleep("1 millis")
        }
        const all: ReadonlyArray<StoredEvent> = yield* Fiber.join(fromStart)
        const tail: ReadonlyArray<StoredEvent> = yield* Fiber.join(fromMiddle)
        expect(all.map((e) => e.threadSequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
        expect(tail.map((e) => e.threadSequence)).toEqual(Array.from({ length: total - 700 }, (_, i) => i + 701))
        expect(all.every((e) => e.threadId === t)).toBe(true)
        const fromLog = yield* store.readEvents(t, 0, total)
        expect(all).toEqual(fromLog)
      })
    )
  )

  it.effect("corrupt rows surface as StorageError naming the row", () =>
    withStore(
      Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        const t = threadId("c")
        yield* store.append({ threadId: t, events: sampleLog(t) })
        yield* sql.unsafe("UPDATE events SET payload = ? WHERE thread_id = ? AND thread_sequence = 2", [
          '{"_tag":"RunStarted","run":{}}',
          t
        ])
        const readError = yield* Effect.flip(store.readEvents(t, 0, 100))
        expect(readError._tag).toBe("StorageError")
        expect(readError.detail).toContain("event 2 of thread thr_c is not a valid thread event")
        const rebuildError = yield* Effect.flip(store.rebuildProjections)
        expect(rebuildError.detail).toContain("thread thr_c")
        // The failed rebuild rolled back: the projections are still there.
        expect(Option.isSome(yield* store.loadThread(t))).toBe(true)
        yield* sql.unsafe("UPDATE runs SET data = 'not json' WHERE thread_id = ?", [t])
        const loadError = yield* Effect.flip(store.loadCompleteThread(t))
        expect(loadError.detail).toMatch(/thread thr_c: run row 1 holds invalid JSON/)
        const compactError = yield* Effect.flip(store.loadThread(t))
        expect(compactError.detail).toMatch(/thread thr_c: newest run holds invalid JSON/)
      })
    )
  )
})

describe("Database", () => {
  it.effect("a file database is created in a new directory, migrated once, and keeps its data across reopenings", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-store-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "nested", "deeper", "skein.db")
      const t = threadId("persist")
      const log = sampleLog(t)
      yield* Effect.flatMap(EventStore, (store) => store.append({ threadId: t, events: log })).pipe(
        Effect.provide(storeLayer(file))
      )
      const [state, journal, migrations] = yield* Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        return [
          yield* store.loadCompleteThread(t),
          yield* sql.unsafe<{ journal_mode: string }>("PRAGMA journal_mode"),
          yield* sql.unsafe<{ n: number }>("SELECT COUNT(*) AS n FROM effect_sql_migrations")
        ] as const
      }).pipe(Effect.provide(storeLayer(file)))
      expect(Option.getOrThrow(state)).toEqual(foldEvents(log))
      expect(journal[0]!.journal_mode).toBe("wal")
      expect(migrations[0]!.n).toBe(Object.keys(migrationList).length)
    }).pipe(Effect.scoped)
  )

  it.effect("migration 0005 keys a run's items by (thread, run, item): every row and rowid kept, one index fewer", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-store-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const t = threadId("migrated")
      const run2 = makeRun(t, 2)
      const log: Array<ThreadEvent> = [
        ...sampleLog(t),
        new RunStarted({ run: run2 }),
        new TurnItemRecorded({ item: makeItem(run2, 0, { type: "assistant_message", text: "run 2" }) }),
        // An update of run 1's item after run 2's: its row keeps its place.
        new TurnItemRecorded({ item: makeItem(makeRun(t, 1), 1, { type: "assistant_message", text: "edited" }) })
      ]
      // The rows today's store writes…
      const expected = yield* Effect.flatMap(EventStore, (store) => store.append({ threadId: t, events: log })).pipe(
        Effect.zipRight(dumpTables()),
        Effect.provide(storeLayer(join(dir, "today.db")))
      )
      // …copied into a database at migration 0004, then opened by this Skein.
      const old = join(dir, "old.db")
      yield* Effect.gen(function* () {
        yield* migrateBefore("0005")
        yield* copyRows(expected)
      }).pipe(Effect.provide(Sqlite.layer(old)))
      yield* Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        expect(yield* dumpTables()).toEqual(expected)
        const indexes = yield* sql.unsafe<{ name: string; unique: number }>("PRAGMA index_list(turn_items)")
        const keyed = yield* Effect.forEach(indexes, (index) =>
          Effect.map(sql.unsafe<{ name: string }>(`PRAGMA index_info(${index.name})`), (columns) => ({
            unique: index.unique,
            columns: columns.map((c) => c.name)
          }))
        )
        expect(keyed).toHaveLength(2)
        expect(keyed).toContainEqual({ unique: 1, columns: ["thread_id", "run_id", "id"] })
        expect(keyed).toContainEqual({ unique: 0, columns: ["thread_id", "run_id"] }) // approvals only
        // An item recorded again is updated in place, found by its run and without it.
        const item = makeItem(run2, 0, { type: "assistant_message", text: "run 2, again" })
        yield* store.append({ threadId: t, events: [new TurnItemRecorded({ item })] })
        const rows = yield* sql.unsafe<{ n: number }>("SELECT COUNT(*) AS n FROM turn_items WHERE id = ?", [item.id])
        expect(rows[0]!.n).toBe(1)
        expect(yield* store.lookup.turnItem(t, item.id, run2.id)).toEqual(Option.some(item))
        expect(yield* store.lookup.turnItem(t, item.id)).toEqual(Option.some(item))
        expect(yield* store.lookup.turnItem(t, item.id, makeRun(t, 1).id)).toEqual(Option.none())
        const state = Option.getOrThrow(yield* store.loadCompleteThread(t))
        expect(state).toEqual(foldEvents([...log, new TurnItemRecorded({ item })]))
      }).pipe(Effect.provide(storeLayer(old)))
    }).pipe(Effect.scoped)
  )

  it.effect("migration 0006 writes fewer pages per run: every row and sequence kept, lookups and appends go on", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-store-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const t = threadId("migrated6")
      const other = threadId("other6")
      const run2 = makeRun(t, 2)
      const log: Array<ThreadEvent> = [
        ...sampleLog(t),
        new RunStarted({ run: run2 }),
        new TurnItemRecorded({ item: makeItem(run2, 0, { type: "assistant_message", text: "run 2" }) })
      ]
      // The rows today's store writes (two threads, so that sequences interleave)…
      const expected = yield* Effect.gen(function* () {
        const store = yield* EventStore
        yield* store.append({ threadId: t, events: log.slice(0, 4) })
        yield* store.append({ threadId: other, events: sampleLog(other) })
        yield* store.append({ threadId: t, events: log.slice(4) })
        return yield* dumpTables()
      }).pipe(Effect.provide(storeLayer(join(dir, "today.db"))))
      // …copied into a database at migration 0005, then opened by this Skein.
      const old = join(dir, "old.db")
      yield* Effect.gen(function* () {
        yield* migrateBefore("0006")
        const sql = yield* SqlClient
        yield* copyRows(expected)
        // At 0005 the runs and the served runs were rowid tables, and the log counted in sqlite_sequence.
        const counter = yield* sql.unsafe<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
        expect(counter).toEqual([{ seq: (expected.events as Array<unknown>).length }])
      }).pipe(Effect.provide(Sqlite.layer(old)))
      yield* Effect.gen(function* () {
        const store = yield* EventStore
        const sql = yield* SqlClient
        expect(yield* dumpTables()).toEqual(expected)
        const tables = yield* sql.unsafe<{ name: string; wr: number }>(
          "SELECT name, wr FROM pragma_table_list WHERE name IN ('events', 'runs', 'provider_thread_runs') ORDER BY name"
        )
        expect(tables).toEqual([
          { name: "events", wr: 0 },
          { name: "provider_thread_runs", wr: 1 },
          { name: "runs", wr: 1 }
        ])
        const schema = yield* sql.unsafe<{ name: string }>(
          "SELECT name FROM sqlite_schema WHERE name IN ('sqlite_sequence', 'checkpoints_run', 'runs_active', 'runs_rolled_back', 'provider_thread_runs_handoffs') ORDER BY name"
        )
        // sqlite_sequence, SQLite's own, stays (empty): it is never dropped once made.
        expect(schema.map((r) => r.name)).toEqual([
          "provider_thread_runs_handoffs",
          "runs_active",
          "runs_rolled_back",
          "sqlite_sequence"
        ])
        expect(yield* sql.unsafe("SELECT * FROM sqlite_sequence")).toEqual([])
        // The log goes on from the largest sequence, with no gap, and the lookups find their rows.
        const [next] = yield* store.append({
          threadId: t,
          events: [new RunEnded({ run: { ...run2, status: "completed", completedAt: run2.startedAt } })]
        })
        expect(next!.sequence).toBe((expected.events as Array<unknown>).length + 1)
        expect(next!.threadSequence).toBe(log.length + 1)
        expect(Option.map(yield* store.lookup.run(t, run2.id), (r) => r.status)).toEqual(Option.some("completed"))
        const checkpoint = sampleLog(t).flatMap((e) => (e._tag === "CheckpointRecorded" ? [e.checkpoint] : []))[0]!
        expect(yield* store.lookup.checkpointOfRun(t, checkpoint.runId)).toEqual(Option.some(checkpoint))
        expect(yield* store.lookup.checkpointOfRun(other, checkpoint.runId)).toEqual(Option.none())
        const state = Option.getOrThrow(yield* store.loadCompleteThread(t))
        expect(state).toEqual(foldEvents([...log, next!.event]))
      }).pipe(Effect.provide(storeLayer(old)))
    }).pipe(Effect.scoped)
  )

  it.effect("a database a newer Skein wrote is refused before anything is written, saying which version wrote it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-store-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const open = (file: string) => Effect.either(Effect.provide(EventStore, storeLayer(file)))
      const tamper = (file: string, statement: string) =>
        Effect.flatMap(SqlClient, (sql) => sql.unsafe(statement)).pipe(Effect.provide(storeLayer(file)))

      const newerSchema = join(dir, "schema.db")
      yield* tamper(
        newerSchema,
        "INSERT INTO effect_sql_migrations (migration_id, name) VALUES (9999, 'from_the_future')"
      )
      const schemaRefusal = yield* open(newerSchema)
      expect(Either.isLeft(schemaRefusal) && schemaRefusal.left.message).toMatch(
        new RegExp(
          `written by a newer version of Skein \\(its schema is at migration 9999_from_the_future; this Skein knows up to ${latestMigration}\\)`
        )
      )

      const newerFormat = join(dir, "format.db")
      yield* tamper(newerFormat, "PRAGMA user_version = 7")
      const formatRefusal = yield* open(newerFormat)
      expect(Either.isLeft(formatRefusal) && formatRefusal.left).toMatchObject({ _tag: "StorageError", startup: true })
      expect(Either.isLeft(formatRefusal) && formatRefusal.left.message).toContain("its store format is 7")
      // A refused file is left as it was: still format 7, still no migration beyond.
      const sqlite = yield* Effect.flatMap(SqlClient, (sql) =>
        sql.unsafe<{ user_version: number }>("PRAGMA user_version")
      ).pipe(Effect.provide(Sqlite.layer(newerFormat)))
      expect(sqlite[0]!.user_version).toBe(7)
    }).pipe(Effect.scoped)
  )

  it.effect("an event this Skein cannot decode is a typed error to every reader, never a silent wait", () =>
    Effect.gen(function* () {
      const store = yield* EventStore
      const sql = yield* SqlClient
      const t = threadId("future")
      yield* store.append({ threadId: t, events: sampleLog(t) })
      yield* sql.unsafe(
        "INSERT INTO events (thread_id, thread_sequence, type, payload, created_at) VALUES (?, 99, 'FutureEvent', ?, 'now')",
        [t, '{"_tag":"FutureEvent","what":"unknown"}']
      )
      const viaStream = yield* Effect.flip(Stream.runCollect(store.events(t, 0)).pipe(Effect.timeout("5 seconds")))
      expect(viaStream).toMatchObject({ _tag: "StorageError" })
      const viaFollow = yield* Effect.flip(
        Effect.scoped(store.follow(t, 0, () => {})).pipe(Effect.timeout("5 seconds"))
      )
      expect(viaFollow).toMatchObject({ _tag: "StorageError" })
      expect(viaFollow._tag === "StorageError" && viaFollow.detail).toContain("event 99 of thread thr_future")
    }).pipe(Effect.provide(storeLayer()))
  )

  it.effect("an unusable path fails with a StorageError naming it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "skein-store-test-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      writeFileSync(join(dir, "a-file"), "")
      const file = join(dir, "a-file", "x.db") // its "directory" is a file
      const result = yield* Effect.either(Effect.provide(EventStore, storeLayer(file)))
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("StorageError")
        expect(result.left.detail).toContain(file)
      }
    }).pipe(Effect.scoped)
  )
})
