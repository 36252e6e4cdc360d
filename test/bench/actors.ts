/**
 * Actor runtime figures: dispatch overhead (run.start until the provider process
 * receives the turn; back to back in the first runs after start and once V8's compiler
 * has settled, and after a pause as between a user's messages),
 * what the run path allocates per run (V8's sampling heap
 * profiler, counting objects already collected), mailbox round trips through a
 * ThreadActor against a bare Queue + fiber and against an @effect/cluster Entity on
 * the in-memory TestRunner, all in the same run, and resident memory of idle threads.
 */
import { Entity, TestRunner } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Session } from "node:inspector/promises"
import { providerRegistryLayer } from "@skein/adapters"
import type { ProviderAdapter, ProviderName, RunId, ThreadId } from "@skein/domain"
import { ProviderRegistry } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator, ThreadActors } from "@skein/runtime"
import { Deferred, Effect, Fiber, Layer, Queue, Schema } from "effect"
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
      runTurn: (input, onEvents) =>
        handle.runTurn(input, (events) => {
          for (const event of events) {
            if (event._tag === "TurnStarted" && event.receivedAt !== undefined)
              onReceived(input.runId, event.receivedAt)
          }
          return onEvents(events)
        })
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
/**
 * The pause before each run.start of the paused dispatch figure: as between quick
 * messages, shorter than the WAL checkpointer's idle wait (1 s), so what it shows is the
 * run path on cold caches.
 */
const PAUSE_MS = 30
/**
 * Warm-up samples (two runs each) before the dispatch p99 is measured: V8 keeps
 * compiling the run path over the first thousands of runs (`--trace-opt` shows it), and
 * only a few compilations remain after 3,000.
 */
const WARM_STEPS = 1500

interface SamplingNode {
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingNode>
}
const totalBytes = (node: SamplingNode): number => node.children.reduce((n, c) => n + totalBytes(c), node.selfSize)

/**
 * Bytes this process allocates while `effect` runs, from V8's sampling heap profiler
 * with objects already collected by minor and major GCs counted (so: allocated, not
 * retained). An estimate: one sample per 4 KiB on average.
 */
const allocatedDuring = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const session = new Session()
    session.connect()
    yield* Effect.promise(() =>
      session.post("HeapProfiler.startSampling", {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true
      })
    )
    yield* effect
    const { profile } = (yield* Effect.promise(() => session.post("HeapProfiler.stopSampling"))) as {
      readonly profile: { readonly head: SamplingNode }
    }
    session.disconnect()
    return totalBytes(profile.head)
  })

/** Round trips per second to an @effect/cluster Entity on the in-memory TestRunner. */
const clusterEntityRate = (n: number) => {
  const Ping = Rpc.make("Ping", { payload: { n: Schema.Number }, success: Schema.Number })
  const Echo = Entity.make("Echo", [Ping])
  const EchoLive = Echo.toLayer(Effect.succeed({ Ping: ({ payload }) => Effect.succeed(payload.n) }))
  return Effect.gen(function* () {
    const client = (yield* Echo.client)("echo-1")
    for (let i = 0; i < 1000; i++) yield* client.Ping({ n: i })
    const t = performance.now()
    for (let i = 0; i < n; i++) yield* client.Ping({ n: i })
    return n / ((performance.now() - t) / 1000)
  }).pipe(Effect.provide(EchoLive.pipe(Layer.provideMerge(TestRunner.layer))), Effect.scoped)
}

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
    /** One sample on a thread of one run: a new thread, its first run, then the one measured. */
    const onFreshThread = Effect.gen(function* () {
      const thread = yield* o.createThread({})
      yield* o.startRun({ threadId: thread.id, provider: alpha, message: "first", wait: true })
      return yield* measure(thread.id)
    })
    // Warm up the provider session.
    const warm = yield* o.createThread({})
    for (let i = 0; i < 20; i++) yield* measure(warm.id)
    // Just after start: V8 still compiles the run path, a function at a time as each gets
    // hot (some only after thousands of runs). Its compile jobs hold a core for 1-10 ms
    // at a time on V8's background threads, and the provider process, woken onto that
    // core, waits for it (perf sched); so the p99 is measured once that has settled, and
    // the first runs are printed beside it.
    const early: Array<number> = []
    for (let i = 0; i < 200; i++) early.push(yield* onFreshThread)
    for (let i = 0; i < WARM_STEPS; i++) yield* onFreshThread

    const small: Array<number> = []
    for (let i = 0; i < 200; i++) small.push(yield* onFreshThread)
    const big = yield* o.createThread({})
    for (let i = 0; i < 1000; i++)
      yield* o.startRun({ threadId: big.id, provider: alpha, message: `r${i}`, wait: true })
    const large: Array<number> = []
    for (let i = 0; i < 200; i++) large.push(yield* measure(big.id))
    // As between a user's messages: each run.start after a pause (the CPU and the WAL idle meanwhile).
    const paused: Array<number> = []
    for (let i = 0; i < 100; i++) {
      yield* Effect.sleep(`${PAUSE_MS} millis`)
      paused.push(yield* measure(big.id))
    }
    const ok = (xs: Array<number>) => xs.filter((x) => !Number.isNaN(x))
    const [e, s, l] = [ok(early), ok(small), ok(large)]
    const verdict = (value: number, goal: number) => (value < goal ? "met" : `missed by ${fmt(value - goal)} ms`)
    const line = (label: string, xs: Array<number>) => {
      const [p50, p99] = [percentile(xs, 50), percentile(xs, 99)]
      console.log(
        `dispatch run.start -> provider received turn, ${label}: p50 ${fmt(p50)} ms (goal < 0.5: ${verdict(p50, 0.5)})  ` +
          `p99 ${fmt(p99)} ms (goal < 2: ${verdict(p99, 2)})  (n=${xs.length})`
      )
    }
    console.log(
      `dispatch run.start -> provider received turn, thread of 1 run, the first 200 such runs after start: ` +
        `p50 ${fmt(percentile(e, 50))} ms, p99 ${fmt(percentile(e, 99))} ms (n=${e.length}; no goal: the JIT is still compiling)`
    )
    line(`thread of 1 run, after ${(WARM_STEPS * 2).toLocaleString("en-US")} more runs`, s)
    line("thread of 1,000 runs", l)
    console.log(
      `dispatch ratio 1,000-run / 1-run thread: p50 ${fmt(percentile(l, 50) / percentile(s, 50))}x  (goal <= 1.5x)`
    )
    const p = ok(paused)
    console.log(
      `dispatch after a ${PAUSE_MS} ms pause before each run.start (as a user's messages come): ` +
        `p50 ${fmt(percentile(p, 50))} ms, p99 ${fmt(percentile(p, 99))} ms (n=${p.length}; no goal: ` +
        `after a pause the same work runs several times slower)`
    )

    // What one run allocates in this process, from run.start to its end.
    const allocRuns = 100
    const allocThread = yield* o.createThread({})
    const allocated = yield* allocatedDuring(
      Effect.forEach(
        Array.from({ length: allocRuns }),
        (_, i) => o.startRun({ threadId: allocThread.id, provider: alpha, message: `a${i}`, wait: true }),
        { discard: true }
      )
    )
    console.log(
      `run path allocations: ${fmt(allocated / allocRuns / 1024, 0)} KB per run (sampled over ${allocRuns} runs)`
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
    const clusterRate = yield* clusterEntityRate(20_000)
    console.log(
      `mailbox round trips/s: ThreadActor ${fmt(actorRate, 0)}, bare Queue+fiber ${fmt(bareRate, 0)}, ratio ${fmt(actorRate / bareRate)} (goal >= 0.5); ` +
        `@effect/cluster Entity on the in-memory TestRunner ${fmt(clusterRate, 0)}, ratio ${fmt(clusterRate / bareRate)}`
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
