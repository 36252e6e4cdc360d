/**
 * Event store throughput: events appended per second through EventStore.append (100
 * events per transaction, projections included, file database in a temp dir) against raw
 * better-sqlite3 inserting the same rows (same payload JSON, one transaction per 100,
 * one prepared statement) in the same run. The raw side has the store's sync settings
 * (WAL, `synchronous = NORMAL`, see Database.ts) and SQLite's own checkpoint at its
 * default 1,000 pages, inside its commits, as a plain better-sqlite3 user has it. The
 * store checkpoints off its main thread and moves SQLite's own to 10,000 pages
 * (WalCheckpointer.ts); the ratio against a raw side set that way too, which then never
 * checkpoints during the run, is printed beside it.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import {
  ProviderName,
  RunEnded,
  RunId,
  RunStarted,
  ThreadCreated,
  ThreadEvent,
  ThreadId,
  TurnItemId,
  TurnItemRecorded,
  type Run,
  type TurnItem
} from "@skein/domain"
import { Database, EventStore } from "@skein/runtime"
import { Effect, Layer, ManagedRuntime, Schema } from "effect"

/** The few better-sqlite3 calls used here (the package ships no types). */
interface RawStatement {
  run(...params: ReadonlyArray<unknown>): unknown
}
interface RawDatabase {
  pragma(text: string): unknown
  exec(text: string): unknown
  prepare(text: string): RawStatement
  transaction<A extends ReadonlyArray<unknown>>(fn: (...args: A) => void): (...args: A) => void
  close(): void
}
type RawDatabaseConstructor = new (filename: string) => RawDatabase

const EVENTS_PER_TXN = 100
const TRANSACTIONS = 400
const THREADS = 4

const now = "2026-01-01T00:00:00.000Z"

/** One transaction's worth: a run's start, 98 turn items, its end. */
const runEvents = (threadId: ThreadId, ordinal: number): Array<ThreadEvent> => {
  const run: Run = {
    id: RunId.make(`run_${threadId}_${ordinal}`),
    threadId,
    ordinal,
    provider: ProviderName.make("alpha"),
    model: null,
    message: `Please fix the failing test number ${ordinal} in src/module.ts`,
    status: "running",
    providerThreadId: null,
    contextHandoffId: null,
    contextResolution: "none",
    failure: null,
    commandId: null,
    createdAt: now,
    startedAt: now,
    completedAt: null
  }
  const events: Array<ThreadEvent> = [new RunStarted({ run })]
  for (let seq = 0; seq < EVENTS_PER_TXN - 2; seq++) {
    const header = { id: TurnItemId.make(`itm_${run.id}_${seq}`), threadId, runId: run.id, seq, createdAt: now }
    const item: TurnItem =
      seq % 3 === 0
        ? { ...header, type: "assistant_message", text: `Step ${seq}: I looked at the code and found the issue.` }
        : seq % 3 === 1
          ? {
              ...header,
              type: "command_execution",
              command: "npm test -- module",
              exitCode: seq % 2,
              output: "1 passed"
            }
          : { ...header, type: "file_change", path: `src/file${seq}.ts`, kind: "modify", summary: "+3 -1" }
    events.push(new TurnItemRecorded({ item }))
  }
  events.push(new RunEnded({ run: { ...run, status: "completed", completedAt: now } }))
  return events
}

const threadCreated = (threadId: ThreadId) =>
  new ThreadCreated({
    thread: {
      id: threadId,
      title: "bench",
      workspace: null,
      lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
      createdAt: now,
      updatedAt: now
    }
  })

interface Workload {
  readonly batches: ReadonlyArray<{ readonly threadId: ThreadId; readonly events: ReadonlyArray<ThreadEvent> }>
  readonly total: number
}

const workload = (prefix: string): Workload => {
  const threads = Array.from({ length: THREADS }, (_, i) => ThreadId.make(`thr_${prefix}${i}`))
  const batches = []
  for (let t = 0; t < TRANSACTIONS; t++) {
    const threadId = threads[t % THREADS]!
    const ordinal = Math.floor(t / THREADS) + 1
    batches.push({ threadId, events: runEvents(threadId, ordinal) })
  }
  return { batches, total: TRANSACTIONS * EVENTS_PER_TXN }
}

const rate = (events: number, ms: number) => Math.round((events / ms) * 1000)

const ROUNDS = 4

/** The raw side: better-sqlite3 inserting the same event rows, one prepared statement, one transaction per batch. */
const openRaw = (file: string, checkpointPages: number) => {
  const require = createRequire(import.meta.url)
  const Sqlite = require("better-sqlite3") as RawDatabaseConstructor
  const db = new Sqlite(file)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = NORMAL")
  db.pragma(`wal_autocheckpoint = ${checkpointPages}`)
  db.exec(`CREATE TABLE events (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, thread_sequence INTEGER NOT NULL,
    type TEXT NOT NULL, payload TEXT NOT NULL, command_id TEXT, created_at TEXT NOT NULL,
    UNIQUE (thread_id, thread_sequence))`)
  const insert = db.prepare(
    "INSERT INTO events (thread_id, thread_sequence, type, payload, command_id, created_at) VALUES (?, ?, ?, ?, ?, ?)"
  )
  const insertMany = db.transaction((batch: ReadonlyArray<ReadonlyArray<unknown>>) => {
    for (const row of batch) insert.run(...row)
  })
  return { db, insertMany }
}

/** The same rows the store writes, serialised up front: the raw side measures SQLite alone. */
const rawRows = (work: Workload) => {
  const encode = Schema.encodeSync(ThreadEvent)
  const next = new Map<string, number>()
  return work.batches.map((batch) =>
    batch.events.map((event) => {
      const sequence = (next.get(batch.threadId) ?? 1) + 1
      next.set(batch.threadId, sequence)
      return [batch.threadId, sequence, event._tag, JSON.stringify(encode(event)), null, now] as const
    })
  )
}

const storeLayer = (file: string) => EventStore.layer.pipe(Layer.provideMerge(Database.layer({ filename: file })))

const appendAll = (batches: Workload["batches"]) =>
  Effect.flatMap(EventStore, (store) => Effect.forEach(batches, (batch) => store.append(batch), { discard: true }))

const createThreads = (work: Workload) =>
  Effect.flatMap(EventStore, (store) =>
    Effect.forEach(
      [...new Set(work.batches.map((b) => b.threadId))],
      (threadId) => store.append({ threadId, events: [threadCreated(threadId)] }),
      { discard: true }
    )
  )

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "skein-bench-store-"))
  const runtime = ManagedRuntime.make(storeLayer(join(dir, "store.db")))
  const raw = openRaw(join(dir, "raw.db"), 1000)
  const rawUnchecked = openRaw(join(dir, "raw-10000.db"), 10_000)
  try {
    // Warm-up (JIT, statement caches) on separate threads.
    const warm = workload("w")
    await runtime.runPromise(Effect.zipRight(createThreads(warm), appendAll(warm.batches.slice(0, 40))))
    const work = workload("b")
    const rows = rawRows(work)
    await runtime.runPromise(createThreads(work))
    // Alternate the two sides in rounds, so that load from elsewhere on the machine hits both alike.
    let storeMs = 0
    let rawMs = 0
    let uncheckedMs = 0
    const perRound = Math.ceil(TRANSACTIONS / ROUNDS)
    for (let round = 0; round < ROUNDS; round++) {
      const from = round * perRound
      const to = Math.min(TRANSACTIONS, from + perRound)
      let started = performance.now()
      for (const batch of rows.slice(from, to)) raw.insertMany(batch)
      rawMs += performance.now() - started
      started = performance.now()
      for (const batch of rows.slice(from, to)) rawUnchecked.insertMany(batch)
      uncheckedMs += performance.now() - started
      started = performance.now()
      await runtime.runPromise(appendAll(work.batches.slice(from, to)))
      storeMs += performance.now() - started
    }
    const loadStarted = performance.now()
    await runtime.runPromise(Effect.flatMap(EventStore, (store) => store.loadThread(work.batches[0]!.threadId)))
    const loadMs = performance.now() - loadStarted
    const storeRate = rate(work.total, storeMs)
    const rawRate = rate(work.total, rawMs)
    console.log(
      `store: ${work.total} events in ${TRANSACTIONS} transactions of ${EVENTS_PER_TXN} (RunStarted, TurnItemRecorded x${EVENTS_PER_TXN - 2}, RunEnded), file DB, WAL`
    )
    console.log(`  EventStore.append (log + projections): ${storeRate.toLocaleString("en-US")} events/s`)
    console.log(`  raw better-sqlite3 (log rows only):    ${rawRate.toLocaleString("en-US")} events/s`)
    const ratio = storeRate / rawRate
    console.log(
      `  ratio store/raw: ${ratio.toFixed(2)} (goal >= 0.4: ${ratio >= 0.4 ? "met" : `missed by ${(0.4 - ratio).toFixed(2)}`}); ` +
        `against raw with SQLite's checkpoint at 10,000 pages (none during the run, ` +
        `${rate(work.total, uncheckedMs).toLocaleString("en-US")} events/s): ${(storeRate / rate(work.total, uncheckedMs)).toFixed(2)}`
    )
    console.log(
      `  loadThread of a ${TRANSACTIONS / THREADS}-run thread (${(work.total / THREADS).toLocaleString("en-US")} events): ${loadMs.toFixed(1)} ms`
    )
  } finally {
    raw.db.close()
    rawUnchecked.db.close()
    await runtime.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}
