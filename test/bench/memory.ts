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
const rss = () => {
  gc?.()
  gc?.()
  return process.memoryUsage().rss
}
const mb = (n: number) => (n / 1024 / 1024).toFixed(1)

const dir = tempDir("skein-bench-memory-")
try {
  await Effect.runPromise(
    Effect.gen(function* () {
      const o = yield* Orchestrator
      const actors = yield* ThreadActors
      // Warm the code paths once so that the baseline includes loaded code, not data.
      const warm = yield* o.createThread({ title: "warm" })
      yield* actors.use(warm.id, (a) => a.ask("Status", undefined))
      const base = rss()
      const ids: Array<ThreadId> = []
      for (let i = 0; i < 10_000; i++) ids.push((yield* o.createThread({ title: `idle ${i}` })).id)
      const created = rss()
      yield* Effect.forEach(ids, (id) => actors.use(id, (a) => a.ask("Status", undefined)), {
        concurrency: 50,
        discard: true
      })
      const live = rss()
      console.log(
        `memory, 10,000 created idle threads: +${mb(created - base)} MB RSS above baseline (goal < 100 MB); with all 10,000 thread actors activated and not yet passivated: +${mb(live - base)} MB${gc ? "" : " [run with --expose-gc for steadier figures]"}`
      )
    }).pipe(Effect.provide(runtimeLayer(dir, { passivateAfterMs: 600_000 })))
  )
} finally {
  removeDir(dir)
}
