/**
 * Traces and metrics. Through the runtime with OpenTelemetry's in-memory exporters: the
 * span tree of a provider switch, a fork, a merge-back and a subagent (runs as
 * `invoke_agent` spans under their actor message, each turn under its run, the links
 * from a run to the run its context came from), the metrics, and what never goes into a
 * span (message text without the opt-in, hidden reasoning). End to end: a daemon with
 * the standard variables exports to a loopback OTLP/HTTP receiver, over http/json and
 * http/protobuf; a protocol it cannot speak is refused at start.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader
} from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { afterAll, describe, expect, it } from "@effect/vitest"
import type { ProviderName, RunView } from "@skein/domain"
import { Orchestrator, Telemetry } from "@skein/runtime"
import { makeSkeinClient } from "@skein/server"
import { Effect, Layer, Schedule } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { removeDir, runtimeLayer, tempDir } from "../support/runtime.js"
import {
  binPath,
  childEnv,
  requestFrame,
  runProcess,
  runSkein,
  tempDir as homeDir,
  tokenIn,
  trackDaemons
} from "./support.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName
const dirs: Array<string> = []
afterAll(() => dirs.forEach(removeDir))

const attrs = (span: ReadableSpan) => span.attributes as Record<string, unknown>
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

describe("telemetry through the runtime (in-memory exporters)", () => {
  it("a switch, a fork, a merge-back and a subagent as a span tree with links; metrics; no text, no reasoning", async () => {
    const spans = new InMemorySpanExporter()
    const metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 60_000 })
    const telemetry = Layer.mergeAll(
      Layer.discard(
        NodeSdk.layer(() => ({
          resource: { serviceName: "skein-test" },
          spanProcessor: new SimpleSpanProcessor(spans),
          metricReader: reader
        }))
      ),
      Telemetry.enableTelemetry()
    )
    const dir = tempDir("skein-telemetry-")
    dirs.push(dir)
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const traced = yield* Layer.toRuntime(telemetry)
          return yield* Effect.provide(
            Effect.gen(function* () {
              const runtime = yield* Layer.build(runtimeLayer(dir))
              const o = yield* Effect.provide(Orchestrator, runtime)
              const thread = yield* o.createThread({ title: "traced" })
              const run = (
                threadId: typeof thread.id,
                provider: ProviderName,
                message: string
              ): Effect.Effect<RunView, unknown> => o.startRun({ threadId, provider, message, wait: true })
              const first = yield* run(thread.id, alpha, "the word is PLUM [[reason:hidden]]")
              const switched = yield* run(thread.id, beta, "which word?")
              const { thread: fork } = yield* o.forkThread({
                sourceThreadId: thread.id,
                sourcePoint: { runId: first.id }
              })
              const onFork = yield* run(fork.id, alpha, "on the fork")
              yield* o.mergeBack({ forkThreadId: fork.id })
              const merged = yield* run(thread.id, alpha, "after the merge")
              const parent = yield* run(thread.id, alpha, "ask a helper [[subagent:beta:find the KEY]]")
              const view = yield* o.getThread(thread.id)
              const child = view.children.find((c) => c.lineage.relationshipToParent === "subagent")!.id
              // The child runs on its own: until its run has ended.
              yield* o.getThread(child).pipe(
                Effect.filterOrFail((v) => v.runs.at(-1)?.status === "completed"),
                Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 })
              )
              return { thread: thread.id, fork: fork.id, first, switched, onFork, merged, parent, child }
            }),
            traced
          )
        }).pipe(
          // Read before the scope closes: shutting the SDK down empties the in-memory exporters.
          Effect.tap(() => Effect.promise(() => reader.forceFlush())),
          Effect.map((ids) => ({ ids, finished: [...spans.getFinishedSpans()], exported: [...metrics.getMetrics()] }))
        )
      )
    )
    const { ids, finished } = result
    const runSpan = (runId: string) => finished.find((s) => attrs(s)["skein.run.id"] === runId)!
    const byId = new Map(finished.map((s) => [s.spanContext().spanId, s]))

    // Each run an invoke_agent span, under the actor's StartRun, its turn under it.
    for (const [ran, provider] of [
      [ids.first, "alpha"],
      [ids.switched, "beta"],
      [ids.merged, "alpha"]
    ] as const) {
      const span = runSpan(ran.id)
      expect(span.name).toBe(`invoke_agent ${provider}`)
      expect(attrs(span)).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": ids.thread,
        "gen_ai.agent.name": provider,
        "gen_ai.provider.name": "scripted",
        "skein.run.status": "completed"
      })
      expect(byId.get(parentOf(span)!)?.name).toBe("actor StartRun")
      const turns = finished.filter((s) => s.name === "provider.turn" && parentOf(s) === span.spanContext().spanId)
      expect(turns).toHaveLength(1)
    }
    // The switch wrote a handoff, named on its start's span and counted.
    const switchStart = byId.get(parentOf(runSpan(ids.switched.id))!)!
    expect(String(attrs(switchStart)["skein.handoff.strategies"])).not.toBe("")
    expect(finished.some((s) => s.name === "context.resolve")).toBe(true)

    const linkTo = (span: ReadableSpan) => span.links.map((l) => l.context.spanId)
    // The fork's run links to its source's latest run; the merge to the fork's run; the child to its parent's run.
    expect(linkTo(runSpan(ids.onFork.id))).toContain(runSpan(ids.switched.id).spanContext().spanId)
    expect(linkTo(runSpan(ids.merged.id))).toContain(runSpan(ids.onFork.id).spanContext().spanId)
    const childRun = finished.find(
      (s) => s.name.startsWith("invoke_agent") && attrs(s)["gen_ai.conversation.id"] === ids.child
    )!
    expect(childRun.name).toBe("invoke_agent beta")
    expect(linkTo(childRun)).toContain(runSpan(ids.parent.id).spanContext().spanId)

    // Neither message text (no opt-in) nor hidden reasoning anywhere in a span.
    const everything = JSON.stringify(finished.map((s) => [s.name, s.attributes, s.events]))
    expect(everything).not.toContain("PLUM")
    expect(everything).not.toContain("neddih")

    const exported = result.exported.flatMap((m) => m.scopeMetrics.flatMap((s) => s.metrics))
    const runs = exported.find((m) => m.descriptor.name === "skein.runs")!
    const points = runs.dataPoints as Array<{ attributes: Record<string, unknown>; value: number }>
    expect(points.find((p) => p.attributes.provider === "alpha" && p.attributes.status === "completed")?.value).toBe(4)
    expect(exported.map((m) => m.descriptor.name)).toEqual(
      expect.arrayContaining(["skein.runs", "skein.handoffs", "skein.turn.duration", "skein.threads.active"])
    )
  })
})

/** A loopback OTLP/HTTP receiver: every request's path, content type and body. */
const receiver = async () => {
  const received: Array<{ path: string; type: string; body: Buffer }> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ path: req.url ?? "", type: String(req.headers["content-type"]), body: Buffer.concat(chunks) })
      res.writeHead(200, { "content-type": String(req.headers["content-type"] ?? "application/json") })
      res.end(String(req.headers["content-type"]).includes("json") ? "{}" : "")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const until = async (check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  return check()
}

describe("telemetry end to end (a daemon, a loopback OTLP receiver)", () => {
  const start = trackDaemons()

  for (const protocol of ["http/json", "http/protobuf"] as const) {
    it(`${protocol}: the daemon's spans and metrics reach the endpoint the variables name`, async () => {
      const otlp = await receiver()
      const home = homeDir("skein-otel-")
      dirs.push(home)
      try {
        const daemon = await start(
          ["--port", "0", ...(protocol === "http/json" ? ["--log-format", "json"] : [])],
          childEnv(home, {
            OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
            OTEL_SERVICE_NAME: "skein-e2e",
            OTEL_BSP_SCHEDULE_DELAY: "100",
            OTEL_METRIC_EXPORT_INTERVAL: "300",
            // Message text only where the user opts in (here, over JSON).
            ...(protocol === "http/json" ? { SKEIN_OTEL_CAPTURE_CONTENT: "true" } : {})
          })
        )
        await Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const client = yield* makeSkeinClient({ url: daemon.url, token: tokenIn(home) })
              const thread = yield* client.thread.create({})
              const ran = yield* client.run.start({
                threadId: thread.id,
                provider: alpha,
                message: "hello",
                wait: true
              })
              expect(ran.status).toBe("completed")
            })
          )
        )
        const has = (path: string, text: string) =>
          otlp.received.some((r) => r.path === path && r.body.includes(Buffer.from(text)))
        expect(
          await until(() => has("/v1/traces", "invoke_agent alpha") && has("/v1/traces", "rpc run.start"), 10_000)
        ).toBe(true)
        expect(await until(() => has("/v1/metrics", "skein.runs"), 10_000)).toBe(true)
        const traces = otlp.received.find((r) => r.path === "/v1/traces")!
        expect(traces.type).toContain(protocol === "http/json" ? "application/json" : "application/x-protobuf")
        expect(traces.body.includes(Buffer.from("skein-e2e"))).toBe(true)
        if (protocol === "http/json") {
          const body = JSON.parse(traces.body.toString()) as { resourceSpans: Array<unknown> }
          expect(body.resourceSpans.length).toBeGreaterThan(0)
        }
        // The run's message: in the run's span with the opt-in, nowhere without it.
        const withText = otlp.received.some((r) => r.body.includes(Buffer.from("gen_ai.input.messages")))
        expect(withText).toBe(protocol === "http/json")
        daemon.child.kill("SIGTERM")
        expect((await daemon.exited).code).toBe(0)
      } finally {
        await otlp.close()
      }
    })
  }

  it("skein stdio (an embedded runtime) exports too, and flushes before it exits", async () => {
    const otlp = await receiver()
    const home = homeDir("skein-otel-")
    dirs.push(home)
    try {
      const ran = await runProcess(
        process.execPath,
        [binPath, "stdio"],
        childEnv(home, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }),
        { stdin: `${requestFrame("1", "thread.create", { title: "over stdio" })}\n` }
      )
      expect(ran.code).toBe(0)
      // Spans are batched: the last ones go out as the process closes its telemetry.
      expect(otlp.received.some((r) => r.path === "/v1/traces" && r.body.includes("rpc thread.create"))).toBe(true)
    } finally {
      await otlp.close()
    }
  })

  it("a protocol the daemon cannot speak, or a log format it does not write, is refused at start", async () => {
    const home = homeDir("skein-otel-")
    dirs.push(home)
    const refused = await runSkein(
      ["daemon", "--port", "0"],
      childEnv(home, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })
    )
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("http/protobuf or http/json")
    const format = await runSkein(["daemon", "--port", "0", "--log-format", "yaml"], childEnv(home))
    expect(format.code).not.toBe(0)
    expect(format.stderr + format.stdout).toContain("logfmt, json")
  })
})
