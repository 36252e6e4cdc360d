/**
 * Resident memory of idle threads, run as its own process by the actors bench
 * (`node --expose-gc`): 10,000 created threads, then the same threads with their
 * actors activated and not yet passivated.
 */
import { Orchestrator, ThreadActors } from "@skein/runtime"
import type { ThreadId } from "@skein/domain"
import { Effect } from "effect"
import { removeDir, runtimeLayer, tempDir } from "../support/runtime.js"

const gc = (globalThis as { gc?: () => void }).gc
const measure = () => {
  gc?.()
  gc?.()
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}
const mb = (n: number) => (n / 1024 / 1024).toFixed(1)
const kb = (n: number) => (n / 1024).toFixed(1)

const dir = tempDir("skein-bench-memory-")
try {
  await Effect.runPromise(
    Effect.gen(function* () {
      const o = yield* Orchestrator
      const actors = yield* ThreadActors
      // Warm the code paths once so that the baseline includes loaded code, not data.
      const warm = yield* o.createThread({ title: "warm" })
      yield* actors.use(warm.id, (a) => a.ask("Status", undefined))
      const base = measure()
      const ids: Array<ThreadId> = []
      for (let i = 0; i < 10_000; i++) ids.push((yield* o.createThread({ title: `idle ${i}` })).id)
      const created = measure()
      yield* Effect.forEach(ids, (id) => actors.use(id, (a) => a.ask("Status", undefined)), {
        concurrency: 50,
        discard: true
      })
      // Let the activations' short-lived fibers and timers settle before measuring.
      yield* Effect.sleep("100 millis")
      const live = measure()
      console.log(
        `memory, 10,000 created idle threads: +${mb(created.rss - base.rss)} MB RSS above baseline (goal < 100 MB); with all 10,000 thread actors activated and not yet passivated: +${mb(live.rss - base.rss)} MB${gc ? "" : " [run with --expose-gc for steadier figures]"}`
      )
      const heapPer = (live.heapUsed - created.heapUsed) / ids.length
      const rssPer = (live.rss - created.rss) / ids.length
      console.log(
        `memory per activated idle thread actor: ${kb(heapPer)} KB of JS heap (goal < 8 KB: ${heapPer < 8192 ? "met" : `missed by ${kb(heapPer - 8192)} KB`}), ${kb(rssPer)} KB of RSS (allocator and heap slack included)`
      )
    }).pipe(Effect.provide(runtimeLayer(dir, { passivateAfterMs: 600_000 })))
  )
} finally {
  removeDir(dir)
}
