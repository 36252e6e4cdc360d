/**
 * The append workload of the store benches (store.ts, and the side-by-side bench's append
 * ratio): runs of 100 events per transaction, appended through a checkout's
 * EventStore, and the raw side: better-sqlite3 inserting the same rows, one prepared
 * statement, one transaction per batch, with the store's sync settings (WAL,
 * `synchronous = NORMAL`, see Database.ts).
 */
import { createRequire } from "node:module"
import type { Run, ThreadEvent, ThreadId, TurnItem } from "@skein/domain"
import type { Side } from "./sides.js"

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

type Domain = typeof import("@skein/domain")

export const EVENTS_PER_TXN = 100
export const TRANSACTIONS = 400
export const THREADS = 4

const now = "2026-01-01T00:00:00.000Z"

/** One transaction's worth, built from `domain`'s classes: a run's start, 98 turn items, its end. */
const runEvents = (domain: Domain, threadId: ThreadId, ordinal: number): Array<ThreadEvent> => {
  const { ProviderName, RunEnded, RunId, RunStarted, TurnItemId, TurnItemRecorded } = domain
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

const threadCreated = (domain: Domain, threadId: ThreadId) =>
  new domain.ThreadCreated({
    thread: {
      id: threadId,
      title: "bench",
      workspace: null,
      lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
      createdAt: now,
      updatedAt: now
    }
  })

export interface Workload {
  readonly creations: ReadonlyArray<{ readonly threadId: ThreadId; readonly events: ReadonlyArray<ThreadEvent> }>
  readonly batches: ReadonlyArray<{ readonly threadId: ThreadId; readonly events: ReadonlyArray<ThreadEvent> }>
  readonly total: number
}

/** TRANSACTIONS batches over THREADS threads named after `prefix`, built from `domain`'s classes. */
export const workload = (domain: Domain, prefix: string): Workload => {
  const threads = Array.from({ length: THREADS }, (_, i) => domain.ThreadId.make(`thr_${prefix}${i}`))
  const batches = []
  for (let t = 0; t < TRANSACTIONS; t++) {
    const threadId = threads[t % THREADS]!
    const ordinal = Math.floor(t / THREADS) + 1
    batches.push({ threadId, events: runEvents(domain, threadId, ordinal) })
  }
  const creations = threads.map((threadId) => ({ threadId, events: [threadCreated(domain, threadId)] }))
  return { creations, batches, total: TRANSACTIONS * EVENTS_PER_TXN }
}

/** Events per second. */
export const rate = (events: number, ms: number) => Math.round((events / ms) * 1000)

/** The raw side: better-sqlite3 inserting the same event rows, one prepared statement, one transaction per batch. */
export const openRaw = (file: string, checkpointPages: number) => {
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

/** The same rows the store writes, serialised up front (with `side`'s schemas): the raw side measures SQLite alone. */
export const rawRows = (side: Side, work: Workload) => {
  const encode = side.E.Schema.encodeSync(side.domain.ThreadEvent)
  const next = new Map<string, number>()
  return work.batches.map((batch) =>
    batch.events.map((event) => {
      const sequence = (next.get(batch.threadId) ?? 1) + 1
      next.set(batch.threadId, sequence)
      return [batch.threadId, sequence, event._tag, JSON.stringify(encode(event)), null, now] as const
    })
  )
}

/** A side's store alone (EventStore over a database file), for appending and loading. */
export const openStore = (side: Side, file: string) => {
  const { Effect, Layer, ManagedRuntime } = side.E
  const { Database, EventStore } = side.runtime
  const runtime = ManagedRuntime.make(EventStore.layer.pipe(Layer.provideMerge(Database.layer({ filename: file }))))
  const appendAll = (batches: Workload["batches"]) =>
    runtime.runPromise(
      Effect.flatMap(EventStore, (store) => Effect.forEach(batches, (batch) => store.append(batch), { discard: true }))
    )
  const loadThread = (threadId: ThreadId) =>
    runtime.runPromise(Effect.flatMap(EventStore, (store) => store.loadThread(threadId)))
  return { appendAll, loadThread, dispose: () => runtime.dispose() }
}
