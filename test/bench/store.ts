/**
 * Event store throughput: events appended per second through EventStore.append (100
 * events per transaction, projections included, file database in a temp dir) against raw
 * better-sqlite3 inserting the same rows (same payload JSON, one transaction per 100,
 * one prepared statement) in the same run (storeWorkload.ts). The raw side has SQLite's
 * own checkpoint at its default 1,000 pages, inside its commits, as a plain
 * better-sqlite3 user has it. The store checkpoints off its main thread and moves
 * SQLite's own to 10,000 pages (WalCheckpointer.ts); the ratio against a raw side set
 * that way too, which then never checkpoints during the run, is printed beside it.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { loadSide } from "./sides.js"
import { EVENTS_PER_TXN, openRaw, openStore, rate, rawRows, THREADS, TRANSACTIONS, workload } from "./storeWorkload.js"

const ROUNDS = 4

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "skein-bench-store-"))
  const side = await loadSide("this checkout", null)
  const store = openStore(side, join(dir, "store.db"))
  const raw = openRaw(join(dir, "raw.db"), 1000)
  const rawUnchecked = openRaw(join(dir, "raw-10000.db"), 10_000)
  try {
    // Warm-up (JIT, statement caches) on separate threads.
    const warm = workload(side.domain, "w")
    await store.appendAll(warm.creations)
    await store.appendAll(warm.batches.slice(0, 40))
    const work = workload(side.domain, "b")
    const rows = rawRows(side, work)
    await store.appendAll(work.creations)
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
      await store.appendAll(work.batches.slice(from, to))
      storeMs += performance.now() - started
    }
    const loadStarted = performance.now()
    await store.loadThread(work.batches[0]!.threadId)
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
    await store.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}
