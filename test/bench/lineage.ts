/**
 * Lineage figures: `thread.fork` latency on a thread of 1 run and on one of 10,000
 * runs (a fork records a thread and a pending transfer from a few indexed reads, so
 * the two should cost the same), with a bare `thread.create` measured in the same run
 * as the baseline; and what a run's end writes on run 10 and on run 10,000 of one
 * thread on one provider thread (coverage lives in rows keyed by run, so the same).
 */
import { providerRegistryLayer } from "@skein/adapters"
import type { Checkpoint, Run, ThreadEvent } from "@skein/domain"
import {
  CheckpointId,
  CheckpointRecorded,
  RunEnded,
  RunId,
  RunStarted,
  ThreadCreated,
  ThreadId,
  ProviderName
} from "@skein/domain"
import { Database, EventStore, makeRuntimeLayer, Orchestrator, storedEventJson } from "@skein/runtime"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { removeDir, tempDir } from "../support/runtime.js"
import { percentile } from "./stats.js"

const at = "2026-01-01T00:00:00.000Z"

/** A completed run with its checkpoint: what makes a stable point. */
const runEvents = (threadId: ThreadId, ordinal: number): Array<ThreadEvent> => {
  const run: Run = {
    id: RunId.make(`run_${threadId}_${ordinal}`),
    threadId,
    ordinal,
    provider: ProviderName.make("alpha"),
    model: null,
    message: `message ${ordinal}`,
    status: "completed",
    providerThreadId: null,
    contextHandoffId: null,
    contextResolution: "none",
    failure: null,
    commandId: null,
    createdAt: at,
    startedAt: at,
    completedAt: at
  }
  const checkpoint: Checkpoint = {
    id: CheckpointId.make(`chk_${threadId}_${ordinal}`),
    threadId,
    runId: run.id,
    runOrdinal: ordinal,
    kind: "logical",
    gitRef: null,
    treeSha: null,
    diffSummary: [],
    status: "ready",
    createdAt: at
  }
  return [
    new RunStarted({ run: { ...run, status: "running", completedAt: null } }),
    new RunEnded({ run }),
    new CheckpointRecorded({ checkpoint })
  ]
}

const seedThread = (threadId: ThreadId, runs: number) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    yield* store.append({
      threadId,
      events: [
        new ThreadCreated({
          thread: {
            id: threadId,
            title: `${runs} runs`,
            workspace: null,
            lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
            createdAt: at,
            updatedAt: at
          }
        })
      ]
    })
    for (let first = 1; first <= runs; first += 500) {
      const events: Array<ThreadEvent> = []
      for (let o = first; o < first + 500 && o <= runs; o++) events.push(...runEvents(threadId, o))
      yield* store.append({ threadId, events })
    }
  })

/** Bytes of the commit that ends each listed run (its events' stored JSON), on real scripted runs. */
const runEndWrites = (o: Orchestrator["Type"], runs: number, at: ReadonlyArray<number>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const thread = yield* o.createThread({ title: "long" })
      const sizes = new Map<number, number>()
      const accepted: Array<number> = []
      yield* o.follow(thread.id, 1, (events) => {
        const ended = events.find((e) => e.event._tag === "RunEnded")
        if (ended === undefined || ended.event._tag !== "RunEnded") return
        if (!at.includes(ended.event.run.ordinal)) return
        sizes.set(
          ended.event.run.ordinal,
          events.reduce((n, e) => n + Buffer.byteLength(storedEventJson(e)), 0)
        )
      })
      for (let i = 1; i <= runs; i++) {
        const t = performance.now()
        yield* o.startRun({ threadId: thread.id, provider: ProviderName.make("alpha"), message: "same", wait: true })
        accepted.push(performance.now() - t)
      }
      return { sizes, times: accepted }
    })
  )

export async function run(): Promise<void> {
  console.log("## lineage")
  const dir = tempDir("skein-bench-lineage-")
  const small = ThreadId.make("thr_small")
  const large = ThreadId.make("thr_large")
  try {
    const dbPath = join(dir, "bench.db")
    await Effect.runPromise(
      Effect.all([seedThread(small, 1), seedThread(large, 10_000)]).pipe(
        Effect.provide(EventStore.layer.pipe(Layer.provide(Database.layer({ filename: dbPath })))),
        Effect.orDie
      )
    )
    await Effect.runPromise(
      Effect.gen(function* () {
        const o = yield* Orchestrator
        const N = 300
        const time = (op: Effect.Effect<unknown, unknown>) =>
          Effect.gen(function* () {
            const samples: Array<number> = []
            for (let i = 0; i < N; i++) {
              const t = performance.now()
              yield* op
              samples.push(performance.now() - t)
            }
            return samples
          })
        // Warm up every path once.
        yield* time(o.createThread({}))
        yield* time(o.forkThread({ sourceThreadId: small, sourcePoint: "latest_stable" }))
        const create = yield* time(o.createThread({}))
        const one = yield* time(o.forkThread({ sourceThreadId: small, sourcePoint: "latest_stable" }))
        const many = yield* time(o.forkThread({ sourceThreadId: large, sourcePoint: "latest_stable" }))
        const fmt = (xs: Array<number>) =>
          `p50 ${percentile(xs, 50).toFixed(3)} ms, p99 ${percentile(xs, 99).toFixed(3)} ms`
        console.log(`thread.create (baseline): ${fmt(create)}`)
        console.log(`thread.fork, source of 1 run:       ${fmt(one)} (goal p50 < 2 ms)`)
        console.log(`thread.fork, source of 10,000 runs: ${fmt(many)}`)
        const ratio = percentile(many, 50) / percentile(one, 50)
        console.log(
          `thread.fork 10,000-run / 1-run: ${ratio.toFixed(2)}x (goal <= 1.2x); fork / create: ${(percentile(one, 50) / percentile(create, 50)).toFixed(2)}x`
        )
        const t = performance.now()
        const { sizes, times } = yield* runEndWrites(o, 10_000, [10, 1_000, 10_000])
        // run.start with wait, on real scripted runs of one thread: per-run cost against the thread's length.
        const mean = (from: number, to: number) => {
          const xs = times.slice(from - 1, to)
          return xs.reduce((a, b) => a + b, 0) / xs.length
        }
        const early = mean(1, 1_000)
        const at5k = mean(5_001, 5_100)
        const at10k = mean(9_901, 10_000)
        console.log(
          `run.start (wait) on real runs of one thread: runs 1-1,000 ${early.toFixed(2)} ms on average, runs 5,001-5,100 ${at5k.toFixed(2)} ms (${(at5k / early).toFixed(2)}x), runs 9,901-10,000 ${at10k.toFixed(2)} ms (${(at10k / early).toFixed(2)}x) (goal <= 1.2x)`
        )
        const bytes = (n: number) => sizes.get(n) ?? Number.NaN
        console.log(
          `run end write (the commit that ends the run): run 10 ${bytes(10)} B, run 1,000 ${bytes(1_000)} B, run 10,000 ${bytes(10_000)} B; ratio 10,000/10 ${(bytes(10_000) / bytes(10)).toFixed(3)} (goal: the same) [10,000 scripted runs in ${((performance.now() - t) / 1000).toFixed(0)} s]`
        )
      }).pipe(
        Effect.provide(
          makeRuntimeLayer({ dbPath }).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })), Layer.orDie)
        )
      )
    )
  } finally {
    removeDir(dir)
  }
}
