/**
 * Actor runtime figures: dispatch overhead (run.start until the provider process
 * receives the turn), mailbox round trips through a ThreadActor against a bare
 * Queue + fiber measured in the same run, and resident memory of idle threads.
 */
import { providerRegistryLayer } from "@skein/adapters"
import type { ProviderAdapter, ProviderName, RunId, ThreadId } from "@skein/domain"
import { ProviderRegistry } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator, ThreadActors } from "@skein/runtime"
import { Deferred, Effect, Fiber, Layer, Queue, Stream } from "effect"
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { performance } from "node:perf_hooks"
import { removeDir, tempDir } from "../support/runtime.js"
import { nowMs, percentile } from "./stats.js"

const fmt = (n: number, digits = 2) => n.toFixed(digits)

/** Wraps an adapter to observe when its process reports having received each turn. */
const observed = (adapter: ProviderAdapter, onReceived: (runId: RunId, at: number) => void): ProviderAdapter => ({
  ...adapter,
  openSession: (options) =>
    Effect.map(adapter.openSession(options), (handle) => ({
      ...handle,
      runTurn: (input) =>
        handle
          .runTurn(input)
          .pipe(
            Stream.tap((event) =>
              event._tag === "TurnStarted" && event.receivedAt !== undefined
                ? Effect.sync(() => onReceived(input.runId, event.receivedAt!))
                : Effect.void
            )
          )
    }))
})

const runtime = (dir: string, onReceived: (runId: RunId, at: number) => void) =>
  makeRuntimeLayer({ dbPath: join(dir, "bench.db"), passivateAfterMs: 600_000 }).pipe(
    Layer.provide(
      Layer.effect(
        ProviderRegistry,
        Effect.map(ProviderRegistry, (registry) => ({
          adapters: registry.adapters.map((a) => observed(a, onReceived))
        }))
      ).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })))
    ),
    Layer.orDie
  )

const alpha = "alpha" as ProviderName

const dispatch = (dir: string) => {
  const received = new Map<RunId, number>()
  return Effect.gen(function* () {
    const o = yield* Orchestrator
    const measure = (threadId: ThreadId) =>
      Effect.gen(function* () {
        const t0 = nowMs()
        const run = yield* o.startRun({ threadId, provider: alpha, message: "bench", wait: true })
        const at = received.get(run.id)
        return at === undefined ? Number.NaN : at - t0
      })
    // Warm up the provider session.
    const warm = yield* o.createThread({})
    for (let i = 0; i < 20; i++) yield* measure(warm.id)

    const small: Array<number> = []
    for (let i = 0; i < 200; i++) {
      const thread = yield* o.createThread({})
      yield* o.startRun({ threadId: thread.id, provider: alpha, message: "first", wait: true })
      small.push(yield* measure(thread.id))
    }
    const big = yield* o.createThread({})
    for (let i = 0; i < 1000; i++)
      yield* o.startRun({ threadId: big.id, provider: alpha, message: `r${i}`, wait: true })
    const large: Array<number> = []
    for (let i = 0; i < 200; i++) large.push(yield* measure(big.id))
    const ok = (xs: Array<number>) => xs.filter((x) => !Number.isNaN(x))
    const [s, l] = [ok(small), ok(large)]
    console.log(
      `dispatch run.start -> provider received turn, thread of 1 run:     p50 ${fmt(percentile(s, 50))} ms  p99 ${fmt(percentile(s, 99))} ms  (n=${s.length}; goal p50 < 2, p99 < 10)`
    )
    console.log(
      `dispatch run.start -> provider received turn, thread of 1,000 runs: p50 ${fmt(percentile(l, 50))} ms  p99 ${fmt(percentile(l, 99))} ms  (n=${l.length})`
    )
    console.log(
      `dispatch ratio 1,000-run / 1-run thread: p50 ${fmt(percentile(l, 50) / percentile(s, 50))}x  (goal <= 1.5x)`
    )

    // Mailbox round trips through a real ThreadActor against a bare Queue + fiber.
    const N = 50_000
    const actors = yield* ThreadActors
    const actorRate = yield* actors.use(big.id, (actor) =>
      Effect.gen(function* () {
        const t = performance.now()
        for (let i = 0; i < N; i++) yield* actor.ask("Status", undefined)
        return N / ((performance.now() - t) / 1000)
      })
    )
    const bareRate = yield* Effect.scoped(
      Effect.gen(function* () {
        const queue = yield* Queue.unbounded<Deferred.Deferred<number>>()
        const fiber = yield* Effect.forkScoped(
          Queue.take(queue).pipe(
            Effect.flatMap((d) => Deferred.succeed(d, 1)),
            Effect.forever
          )
        )
        const t = performance.now()
        for (let i = 0; i < N; i++) {
          const d = yield* Deferred.make<number>()
          yield* Queue.offer(queue, d)
          yield* Deferred.await(d)
        }
        const rate = N / ((performance.now() - t) / 1000)
        yield* Fiber.interrupt(fiber)
        return rate
      })
    )
    console.log(
      `mailbox round trips/s: ThreadActor ${fmt(actorRate, 0)}, bare Queue+fiber ${fmt(bareRate, 0)}, ratio ${fmt(actorRate / bareRate)} (goal >= 0.5)`
    )
  }).pipe(Effect.provide(runtime(dir, (runId, at) => received.set(runId, at))))
}

export async function run(): Promise<void> {
  console.log("## actor runtime")
  const dir = tempDir("skein-bench-actors-")
  try {
    await Effect.runPromise(dispatch(dir))
  } finally {
    removeDir(dir)
  }
  // Memory in a fresh process, so the baseline is not the garbage of the figures above.
  const child = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(new URL("./memory.js", import.meta.url))], {
    encoding: "utf8",
    timeout: 300_000
  })
  process.stdout.write(child.stdout)
  if (child.status !== 0) console.log(`memory bench failed: ${child.stderr.slice(-2000)}`)
}
