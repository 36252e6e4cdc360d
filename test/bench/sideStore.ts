/**
 * The append ratio side by side: events per second through each side's EventStore.append
 * over raw better-sqlite3 inserting the same rows (storeWorkload.ts, as store.ts measures
 * it), one raw database shared by both sides as their common yardstick. The three take
 * turns in rounds, in an order that rotates, so that the host's load falls on each alike.
 */
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import type { Figure } from "./sideTable.js"
import type { Side } from "./sides.js"
import { openRaw, openStore, rate, rawRows, workload } from "./storeWorkload.js"

/** Rounds; each appends TRANSACTIONS / ROUNDS batches on each of the three. */
const ROUNDS = 8

export const appendRatio = async (sides: readonly [Side, Side], dir: string): Promise<Figure> => {
  const stores = sides.map((side) => openStore(side, Path.join(dir, `store-${side.label}.db`)))
  const raw = openRaw(Path.join(dir, "raw.db"), 1000)
  try {
    const works = sides.map((side) => workload(side.domain, "b"))
    // Warm-up (JIT, statement caches) on threads of their own.
    for (const [i, side] of sides.entries()) {
      const warm = workload(side.domain, "w")
      await stores[i]!.appendAll(warm.creations)
      await stores[i]!.appendAll(warm.batches.slice(0, 40))
      await stores[i]!.appendAll(works[i]!.creations)
    }
    const rows = rawRows(sides[1], works[1]!)
    const total = works[0]!.batches.length
    const perRound = Math.ceil(total / ROUNDS)
    const ms = [0, 0, 0]
    const turns: ReadonlyArray<(from: number, to: number) => Promise<void>> = [
      async (from, to) => {
        for (const batch of rows.slice(from, to)) raw.insertMany(batch)
      },
      (from, to) => stores[0]!.appendAll(works[0]!.batches.slice(from, to)),
      (from, to) => stores[1]!.appendAll(works[1]!.batches.slice(from, to))
    ]
    for (let round = 0; round < ROUNDS; round++) {
      const [from, to] = [round * perRound, Math.min(total, (round + 1) * perRound)]
      for (let k = 0; k < turns.length; k++) {
        const which = (round + k) % turns.length
        const started = performance.now()
        await turns[which]!(from, to)
        ms[which]! += performance.now() - started
      }
    }
    const events = works[0]!.total
    const rawRate = rate(events, ms[0]!)
    const ratioOf = (i: 1 | 2) => rate(events, ms[i]!) / rawRate
    return {
      name: "append ratio (EventStore.append / raw SQLite)",
      before: ratioOf(1),
      after: ratioOf(2),
      higherIsBetter: true,
      unit: "ratio",
      detail:
        `append: ${events.toLocaleString("en-US")} events a side in ${total} transactions, ${ROUNDS} rounds; events/s: ` +
        `raw ${rawRate.toLocaleString("en-US")}, before ${rate(events, ms[1]!).toLocaleString("en-US")}, ` +
        `after ${rate(events, ms[2]!).toLocaleString("en-US")}`
    }
  } finally {
    raw.db.close()
    for (const store of stores) await store.dispose()
  }
}
