/**
 * Long-thread figures (issue 15), each beside a baseline measured in the same run:
 * - activating a thread's actor from storage at 10, 1,000 and 10,000 runs (goal: the
 *   10,000-run thread under 20 ms and within 2x of the 10-run one), and the heap an
 *   activated 10,000-run actor holds;
 * - run.start on run 5,001 of a thread against run 10 of another (goal: within 1.2x),
 *   both until the run is accepted and until it has ended;
 * - thread.get on a 5,000-run thread: the whole view, its size, and how often a
 *   run's message appears in it.
 *
 * The threads are built by `seed.ts` (the actor's own pure core, appended through the
 * store), then driven by real scripted runs where a figure needs a provider.
 */
import { providerRegistryLayer } from "@skein/adapters"
import type { ThreadId, ThreadView as ThreadViewType } from "@skein/domain"
import { ProviderName, ProviderRegistry, ThreadCreated, ThreadId as ThreadIdSchema, ThreadView } from "@skein/domain"
import { Database, EventStore, makeRuntimeLayer, Orchestrator, ThreadActors } from "@skein/runtime"
import { Effect, Layer, Schema } from "effect"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { removeDir, tempDir } from "../support/runtime.js"
import { mostlyAlpha, providersOf, seedRuns } from "../support/seed.js"
import { percentile } from "./stats.js"

const at = "2026-01-01T00:00:00.000Z"
const alpha = ProviderName.make("alpha")
const gc = (globalThis as { gc?: () => void }).gc
const heapUsed = () => {
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed
}
const ms = (x: number) => `${x.toFixed(2)} ms`
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
/** "met", or by how much the figure misses its goal. */
const verdict = (value: number, goal: number, unit = "") =>
  value <= goal ? "met" : `missed by ${(value - goal).toFixed(2)}${unit} (${ratio(value, goal)} of the goal)`

const createThread = (threadId: ThreadId, title: string) =>
  Effect.flatMap(EventStore, (store) =>
    store.append({
      threadId,
      expectedSequence: 0,
      events: [
        new ThreadCreated({
          thread: {
            id: threadId,
            title,
            workspace: null,
            lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
            createdAt: at,
            updatedAt: at
          }
        })
      ]
    })
  )

const sizes = [10, 1_000, 10_000] as const
const activationThread = (runs: number) => ThreadIdSchema.make(`thr_activation_${runs}`)
const startThreads = new Map<number, ThreadId>()
const startThread = (first: number): ThreadId => startThreads.get(first)!
const WARM_RUNS = 5
const MEASURED_RUNS = 20

/**
 * Phase 1: the threads. The activation threads switch providers (alpha nine runs in
 * ten, beta the tenth: deltas, chains of them, retired provider threads). The run.start
 * threads are one provider thread long: a real first run, then runs seeded on that same
 * provider thread, so the measured real runs resume a native thread the scripted
 * provider knows and whose file holds as little on both threads (the scripted provider
 * rewrites a native thread's file every turn: its own cost, not Skein's).
 */
const build = (dir: string, dbPath: string) =>
  Effect.gen(function* () {
    yield* Effect.gen(function* () {
      const o = yield* Orchestrator
      for (const first of [10, 5_001]) {
        const thread = yield* o.createThread({ title: `run.start at ${first}` })
        startThreads.set(first, thread.id)
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "the first run", wait: true })
      }
    }).pipe(
      Effect.provide(
        makeRuntimeLayer({ dbPath }).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })), Layer.orDie)
      )
    )
    return yield* Effect.gen(function* () {
      const registry = yield* ProviderRegistry
      const info = providersOf(registry.adapters)
      const pattern = mostlyAlpha(info("alpha"), info("beta"))
      const t = performance.now()
      for (const runs of sizes) {
        yield* createThread(activationThread(runs), `${runs} runs`)
        yield* seedRuns(activationThread(runs), runs, pattern)
      }
      // Measured runs start at ordinal `first`; WARM_RUNS real runs come before them.
      for (const first of [10, 5_001]) yield* seedRuns(startThread(first), first - 2 - WARM_RUNS, () => info("alpha"))
      return performance.now() - t
    }).pipe(
      Effect.provide(
        Layer.mergeAll(EventStore.layer, providerRegistryLayer({ dataDir: dir })).pipe(
          Layer.provide(Database.layer({ filename: dbPath }))
        )
      ),
      Effect.orDie
    )
  })

/** Phase 2: activation, with actors that passivate as soon as nobody holds them. */
const activation = (dir: string, dbPath: string) =>
  Effect.gen(function* () {
    const actors = yield* ThreadActors
    const activate = (threadId: ThreadId) => actors.use(threadId, (actor) => actor.ask("Status", undefined))
    // Interleaved, so that drift on a shared machine hits every size alike; the first
    // rounds warm the JIT and the page cache.
    const samples = new Map<number, Array<number>>(sizes.map((n) => [n, []]))
    for (let round = 0; round < 120; round++) {
      for (const runs of sizes) {
        const t = performance.now()
        yield* activate(activationThread(runs))
        if (round >= 20) samples.get(runs)!.push(performance.now() - t)
      }
    }
    const timings = new Map([...samples].map(([n, xs]) => [n, percentile(xs, 50)]))
    const small = timings.get(10)!
    const large = timings.get(10_000)!
    console.log(
      `activation (a thread actor from storage, median): 10 runs ${ms(small)}, 1,000 runs ${ms(timings.get(1_000)!)}, 10,000 runs ${ms(large)}`
    )
    console.log(
      `activation 10,000-run thread: ${ms(large)} (goal < 20 ms: ${verdict(large, 20, " ms")}); 10,000 / 10 runs: ${ratio(large, small)} (goal <= 2x: ${verdict(large / small, 2, "x")})`
    )
    // What an activated thread's actor holds while idle (measured inside its use, against after).
    const held = (runs: number) =>
      Effect.gen(function* () {
        let inside = 0
        yield* actors.use(activationThread(runs), (actor) =>
          Effect.zipRight(
            actor.ask("Status", undefined),
            Effect.sync(() => void (inside = heapUsed()))
          )
        )
        yield* Effect.sleep("20 millis")
        return inside - heapUsed()
      })
    yield* held(10)
    const heldSmall = yield* held(10)
    const heldLarge = yield* held(10_000)
    console.log(
      `heap held by an activated idle actor: 10,000-run thread ${(heldLarge / 1024).toFixed(0)} KB, 10-run thread ${(heldSmall / 1024).toFixed(0)} KB${gc ? "" : " [run with --expose-gc]"}`
    )
  }).pipe(
    Effect.provide(
      makeRuntimeLayer({ dbPath, passivateAfterMs: 0 }).pipe(
        Layer.provide(providerRegistryLayer({ dataDir: dir })),
        Layer.orDie
      )
    )
  )

/** Phase 3: real runs at the end of a long thread and of a short one; the long thread's view. */
const runs = (dir: string, dbPath: string) =>
  Effect.gen(function* () {
    const o = yield* Orchestrator
    const actors = yield* ThreadActors
    const drive = (threadId: ThreadId) =>
      Effect.gen(function* () {
        for (let i = 0; i < WARM_RUNS; i++)
          yield* o.startRun({ threadId, provider: alpha, message: "warm", wait: true })
        const accept: Array<number> = []
        const whole: Array<number> = []
        for (let i = 0; i < MEASURED_RUNS; i++) {
          let t = performance.now()
          yield* o.startRun({ threadId, provider: alpha, message: `measured ${i}`, wait: false })
          accept.push(performance.now() - t)
          // Let it end before the next one (and time a whole run with wait).
          while ((yield* actors.use(threadId, (actor) => actor.ask("Status", undefined))).activeRunId !== null) {
            yield* Effect.sleep("2 millis")
          }
          t = performance.now()
          yield* o.startRun({ threadId, provider: alpha, message: `measured whole ${i}`, wait: true })
          whole.push(performance.now() - t)
        }
        return { accept: percentile(accept, 50), whole: percentile(whole, 50) }
      })
    const short = yield* drive(startThread(10))
    const long = yield* drive(startThread(5_001))
    console.log(
      `run.start until accepted (median of ${MEASURED_RUNS}): from run 5,001 ${ms(long.accept)} vs from run 10 ${ms(short.accept)}: ${ratio(long.accept, short.accept)} (goal <= 1.2x: ${verdict(long.accept / short.accept, 1.2, "x")})`
    )
    console.log(
      `run.start until the run ended (wait): from run 5,001 ${ms(long.whole)} vs from run 10 ${ms(short.whole)}: ${ratio(long.whole, short.whole)} (goal <= 1.2x: ${verdict(long.whole / short.whole, 1.2, "x")})`
    )
    const threadId = startThread(5_001)
    const encode = Schema.encodeSync(ThreadView)
    const viewOf = (view: ThreadViewType) => JSON.stringify(encode(view))
    const first = yield* o.getThread(threadId)
    const samples: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const t = performance.now()
      yield* o.getThread(threadId)
      samples.push(performance.now() - t)
    }
    const json = viewOf(first)
    const pageSamples: Array<number> = []
    let pageJson = ""
    for (let i = 0; i < 20; i++) {
      const t = performance.now()
      const page = yield* o.getThread(threadId, { runs: { limit: 50 } })
      pageSamples.push(performance.now() - t)
      pageJson = viewOf(page)
    }
    const firstPage = yield* o.getThread(threadId, { runs: { after: 0, limit: 50 } })
    console.log(
      `thread.get, whole view of a ${first.runs.length.toLocaleString("en-US")}-run thread: ${(json.length / 1024 / 1024).toFixed(2)} MB in ${ms(percentile(samples, 50))}; a page of its newest 50 runs with items: ${(pageJson.length / 1024).toFixed(0)} KB in ${ms(percentile(pageSamples, 50))} (its first 50: ${(viewOf(firstPage).length / 1024).toFixed(0)} KB)`
    )
    // A 1 MiB message (the most run.start takes): how many times the view carries it.
    const big = `big-${"0123456789abcdef".repeat(65_535)}0123456789ab`
    yield* o.startRun({ threadId: startThread(10), provider: alpha, message: big, wait: true })
    const withBig = viewOf(yield* o.getThread(startThread(10)))
    console.log(
      `thread.get after a 1 MiB message: the message appears ${withBig.split(big).length - 1} time(s) in the view (goal: once)`
    )
  }).pipe(
    Effect.provide(
      makeRuntimeLayer({ dbPath }).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })), Layer.orDie)
    )
  )

export async function run(): Promise<void> {
  console.log("## threads")
  const dir = tempDir("skein-bench-threads-")
  const dbPath = join(dir, "bench.db")
  try {
    const built = await Effect.runPromise(build(dir, dbPath))
    console.log(`(threads built by the planner in ${(built / 1000).toFixed(1)} s)`)
    await Effect.runPromise(activation(dir, dbPath))
    await Effect.runPromise(runs(dir, dbPath))
  } finally {
    removeDir(dir)
  }
}
