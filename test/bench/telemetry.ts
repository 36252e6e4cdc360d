/**
 * What tracing costs a run's dispatch: `run.start` until the scripted provider process
 * reports it received the turn (as the redesign guard measures it), on two runtimes in
 * this process, one with telemetry off (the default) and one with it on (the
 * OpenTelemetry SDK, a batch span processor and a periodic metric reader, both
 * exporting to nothing), in alternating blocks; p50 and p99 each and the ratio.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader
} from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base"
import { providerRegistryLayer } from "@skein/adapters"
import { type ProviderName, ProviderRegistry } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator, Telemetry } from "@skein/runtime"
import { Context, Effect, Exit, Layer, Runtime, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { removeDir, tempDir } from "../support/runtime.js"
import { loadSide, watchTurns } from "./sides.js"
import { nowMs, percentile } from "./stats.js"

const WARM = 1000
const SAMPLES = 600
const BLOCK = 25
const alpha = "alpha" as ProviderName

/** Spans go nowhere: what is measured is making and ending them, and the batch's hand-off. */
const nowhere: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() }

const tracing = Layer.mergeAll(
  Layer.discard(
    NodeSdk.layer(() => ({
      resource: { serviceName: "skein-bench" },
      spanProcessor: new BatchSpanProcessor(nowhere),
      metricReader: new PeriodicExportingMetricReader({
        exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
        exportIntervalMillis: 60_000
      })
    }))
  ),
  Telemetry.enableTelemetry()
)

/** One runtime (telemetry on or off, built under it) and its dispatch sample. */
const openSide = async (dir: string, on: boolean) => {
  const side = await loadSide(on ? "on" : "off", null)
  Fs.mkdirSync(dir, { recursive: true })
  const received = new Map<string, number>()
  const watch = watchTurns(side, (input, events) => {
    for (const event of events) {
      if (event._tag === "TurnStarted" && event.receivedAt !== undefined) received.set(input.runId, event.receivedAt)
    }
  })
  const registry = Layer.effect(
    ProviderRegistry,
    Effect.map(ProviderRegistry, (r) => ({ ...r, adapters: r.adapters.map(watch) }))
  ).pipe(Layer.provide(providerRegistryLayer({ dataDir: dir })))
  const layer = makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db"), passivateAfterMs: 600_000 }).pipe(
    Layer.provide(registry),
    Layer.orDie
  )
  const scope = Effect.runSync(Scope.make())
  const build = Effect.gen(function* () {
    const context = yield* Layer.build(layer)
    return { o: Context.get(context, Orchestrator), runtime: yield* Effect.runtime<never>() }
  })
  const { o, runtime } = await Effect.runPromise(
    Scope.extend(
      on ? Effect.flatMap(Layer.toRuntime(tracing), (traced) => Effect.provide(build, traced)) : build,
      scope
    )
  )
  const sample = Effect.gen(function* () {
    const thread = yield* o.createThread({})
    yield* o.startRun({ threadId: thread.id, provider: alpha, message: "first", wait: true })
    const t0 = nowMs()
    const measured = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "bench", wait: true })
    const at = received.get(measured.id)
    received.clear()
    return at === undefined ? Number.NaN : at - t0
  })
  const run = (n: number) => Runtime.runPromise(runtime)(Effect.forEach(Array.from({ length: n }), () => sample))
  return { run, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

export const run = async (): Promise<void> => {
  const dir = Fs.realpathSync(tempDir("skein-bench-telemetry-"))
  const sides = [await openSide(Path.join(dir, "off"), false), await openSide(Path.join(dir, "on"), true)] as const
  try {
    for (const side of sides) await side.run(WARM)
    const times: [Array<number>, Array<number>] = [[], []]
    for (let b = 0; b * BLOCK < SAMPLES; b++) {
      const order = b % 2 === 0 ? [0, 1] : [1, 0]
      for (const i of order) times[i]!.push(...(await sides[i]!.run(BLOCK)).filter((t) => !Number.isNaN(t)))
    }
    const ms = (x: number) => `${x.toFixed(3)} ms`
    const [off, on] = times
    console.log(
      `dispatch with tracing off (the default): p50 ${ms(percentile(off, 50))} p99 ${ms(percentile(off, 99))}; ` +
        `with OpenTelemetry on (batch processor, nowhere to export): p50 ${ms(percentile(on, 50))} p99 ${ms(percentile(on, 99))}; ` +
        `ratio p50 ${(percentile(on, 50) / percentile(off, 50)).toFixed(2)}x (${off.length} and ${on.length} samples, blocks of ${BLOCK})`
    )
  } finally {
    for (const side of sides) await side.close()
    removeDir(dir)
  }
}
