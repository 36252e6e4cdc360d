/**
 * Property: for random valid logs over a few threads, appended in random batches and
 * interleavings, the projection tables read back exactly what the pure fold computes,
 * and rebuilding them from the log reproduces the tables row for row.
 */
import { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { ThreadId, type ContextTransfer, type RunWindow, type ThreadEvent, type ThreadView } from "@skein/domain"
import { Effect, Option } from "effect"
import fc from "fast-check"
import { EventStore } from "../../src/store/EventStore.js"
import { applyEvent, foldEvents, toThreadView } from "../../src/store/Projection.js"
import { emptyThreadState, trimThread, type ThreadState } from "../../src/store/ThreadState.js"
import { windowOf } from "../../src/store/ThreadViews.js"
import { batches, buildLog, makeThread, opArbitrary } from "./builders.js"
import { dumpTables, storeLayer } from "./support.js"

const scenario = fc.record({
  threads: fc.array(fc.array(opArbitrary, { maxLength: 40 }), { minLength: 1, maxLength: 3 }),
  sizes: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 5 }),
  order: fc.array(fc.nat({ max: 100 }), { maxLength: 60 })
})

type Scenario = typeof scenario extends fc.Arbitrary<infer A> ? A : never

const logsOf = (s: Scenario) => {
  const ids = s.threads.map((_, i) => ThreadId.make(`thr_p${i}`))
  return ids.map((id, i) => ({
    id,
    log: buildLog(
      id,
      s.threads[i]!,
      ids.filter((other) => other !== id)
    )
  }))
}

/** The append calls: each thread's log cut into batches, threads interleaved as `order` says. */
const appendPlan = (s: Scenario, logs: ReturnType<typeof logsOf>) => {
  const queues = logs.map(({ id, log }) => ({ id, pending: batches(log, s.sizes) }))
  const plan: Array<{ threadId: ThreadId; events: ReadonlyArray<ThreadEvent> }> = []
  let k = 0
  for (;;) {
    const open = queues.filter((q) => q.pending.length > 0)
    if (open.length === 0) return plan
    const q = open[(s.order[k++] ?? k) % open.length]!
    plan.push({ threadId: q.id, events: q.pending.shift()! })
  }
}

/** A page as its definition says: the whole view restricted to a window of runs (see ThreadViews). */
const pageOf = (whole: ThreadView, fold: ThreadState, window: RunWindow, items: boolean): ThreadView => {
  const { from, to } = windowOf(window, fold.runCount)
  const inPage = (ordinal: number) => ordinal >= from && ordinal <= to
  const runs = whole.runs.filter((r) => inPage(r.ordinal))
  const ids = new Set<string>(runs.map((r) => r.id))
  const servedBy = new Set(runs.map((r) => r.providerThreadId))
  return {
    ...whole,
    runs: items ? runs : runs.map((r) => ({ ...r, items: [] })),
    providerThreads: whole.providerThreads
      .filter((pt) => pt.status !== "stale" || servedBy.has(pt.id))
      .map((pt) => ({
        ...pt,
        coverage: { ...pt.coverage, nativeRunOrdinals: pt.coverage.nativeRunOrdinals.filter(inPage) },
        nativeTurns: pt.nativeTurns.filter((t) => inPage(t.runOrdinal))
      })),
    transfers: whole.transfers.filter(
      (t) => !fold.transfers.has(t.id) || t.consumedByRunId === null || ids.has(t.consumedByRunId)
    ),
    handoffs: whole.handoffs.filter((h) => h.targetRunId !== null && ids.has(h.targetRunId)),
    checkpoints: whole.checkpoints.filter((c) => inPage(c.runOrdinal)),
    page: { runCount: fold.runCount, from, to, items, sequence: fold.lastThreadSequence }
  }
}

const check = (s: Scenario) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const sql = yield* SqlClient
    const logs = logsOf(s)
    for (const call of appendPlan(s, logs)) yield* store.append(call)

    const folds = new Map(logs.map(({ id, log }) => [id, foldEvents(log)!] as const))
    for (const { id, log } of logs) {
      const fold = folds.get(id)!
      expect(Option.getOrThrow(yield* store.loadCompleteThread(id))).toEqual(fold)
      // The compact read holds exactly what the compact form keeps of the fold, in its order.
      const compact = structuredClone(fold)
      trimThread(compact)
      const loaded = Option.getOrThrow(yield* store.loadThread(id))
      expect(loaded).toEqual(compact)
      for (const key of ["runs", "items", "providerThreads", "transfers", "handoffs"] as const) {
        expect([...loaded[key].keys()]).toEqual([...compact[key].keys()])
      }
      // The log itself decodes to the same events.
      const stored = yield* store.readEvents(id, 0, log.length + 1)
      expect(stored.map((e) => e.event)).toEqual(log)
      const outgoing: Array<ContextTransfer> = []
      for (const [other, state] of folds) {
        if (other === id) continue
        for (const t of state.transfers.values()) if (t.sourceThreadId === id) outgoing.push(t)
      }
      const whole = Option.getOrThrow(yield* store.threadView(id))
      expect(whole).toEqual(toThreadView(fold, outgoing))
      // Pages hold what the whole view holds, restricted to their runs.
      for (const [k, limit] of [1, 2, 3, 7, 1_000].entries()) {
        const window =
          k === 4
            ? { after: 0, limit }
            : k % 2 === 0
              ? { after: (s.sizes[k] ?? 0) % (fold.runCount + 1), limit }
              : { limit }
        const page = Option.getOrThrow(yield* store.threadView(id, { runs: window, items: k !== 1 }))
        expect(page).toEqual(pageOf(whole, fold, window, k !== 1))
      }
      const pages = []
      for (let after = 0; after < fold.runCount; after += 3) {
        pages.push(...Option.getOrThrow(yield* store.threadView(id, { runs: { after, limit: 3 } })).runs)
      }
      expect(pages).toEqual(whole.runs)
    }

    // Every column a lookup uses says what its row's data says: the upserts leave the
    // columns an entity never changes (ProjectionTables' `fixed`) as first written.
    const disagreeing = yield* sql.unsafe<{ readonly row: string }>(
      `SELECT 'run ' || ordinal AS row FROM runs
         WHERE id IS NOT data ->> '$.id' OR provider IS NOT data ->> '$.provider' OR status IS NOT data ->> '$.status'
       UNION ALL SELECT 'thread ' || id FROM threads
         WHERE parent_thread_id IS NOT data ->> '$.lineage.parentThreadId'
           OR root_thread_id IS NOT data ->> '$.lineage.rootThreadId' OR created_at IS NOT data ->> '$.createdAt'
       UNION ALL SELECT 'checkpoint ' || id FROM checkpoints
         WHERE run_id IS NOT data ->> '$.runId' OR run_ordinal IS NOT data ->> '$.runOrdinal' OR status IS NOT data ->> '$.status'
       UNION ALL SELECT 'transfer ' || id FROM transfers
         WHERE type IS NOT data ->> '$.type' OR status IS NOT data ->> '$.status'
           OR source_thread_id IS NOT data ->> '$.sourceThreadId' OR target_thread_id IS NOT data ->> '$.targetThreadId'
           OR created_at IS NOT data ->> '$.createdAt'`
    )
    expect(disagreeing).toEqual([])

    const before = yield* dumpTables()
    yield* store.rebuildProjections
    expect(yield* dumpTables()).toEqual(before)
    // A rebuild really rebuilds: damage the projections, rebuild, get the same tables.
    yield* sql.unsafe("DELETE FROM turn_items WHERE rowid % 2 = 0")
    yield* sql.unsafe("UPDATE runs SET status = 'failed', data = '{}'")
    yield* sql.unsafe("DELETE FROM threads")
    yield* store.rebuildProjections
    expect(yield* dumpTables()).toEqual(before)
  })

describe("projection", () => {
  it("loadThread equals foldEvents and rebuildProjections reproduces the tables", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, (s) => Effect.runPromise(check(s).pipe(Effect.provide(storeLayer())))),
      { numRuns: 60 }
    )
  }, 120_000)

  it("applyEvent upserts: a re-recorded entity replaces the old one in place", () => {
    const log = buildLog(ThreadId.make("thr_u"), [
      { kind: "startRun", pick: 0, text: "a" },
      { kind: "item", pick: 0, text: "" },
      { kind: "item", pick: 0, text: "" },
      { kind: "updateItem", pick: 0, text: "" },
      { kind: "endRun", pick: 0, text: "" },
      { kind: "threadUpdated", pick: 0, text: "renamed" }
    ])
    const state = foldEvents(log)!
    expect(state.runCount).toBe(1)
    expect(state.runs.get(1)!.status).toBe("completed")
    expect(state.items.get(state.runs.get(1)!.id)!.map((i) => i.seq)).toEqual([0, 1])
    expect(state.thread.title).toBe("renamed")
    expect(state.lastThreadSequence).toBe(log.length)
  })

  it("foldEvents needs ThreadCreated first", () => {
    const log = buildLog(ThreadId.make("thr_v"), [{ kind: "startRun", pick: 0, text: "" }])
    expect(foldEvents([])).toBeUndefined()
    expect(foldEvents(log.slice(1))).toBeUndefined()
    expect(foldEvents(log)!.runCount).toBe(1)
  })

  it("items stay ordered by seq whatever order they are recorded in", () => {
    const t = ThreadId.make("thr_w")
    const log = buildLog(t, [
      { kind: "startRun", pick: 0, text: "" },
      { kind: "item", pick: 0, text: "" },
      { kind: "item", pick: 0, text: "" },
      { kind: "item", pick: 0, text: "" }
    ])
    const [createdEvent, started, ...items] = log
    let state = emptyThreadState(makeThread(t))
    for (const e of [createdEvent!, started!, items[2]!, items[0]!, items[1]!]) state = applyEvent(state, e)
    if (started?._tag !== "RunStarted") throw new Error("expected RunStarted")
    expect(state.items.get(started.run.id)!.map((i) => i.seq)).toEqual([0, 1, 2])
  })
})
