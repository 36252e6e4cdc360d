/**
 * Server figures:
 * - thread.get over WebSocket (typed client, JSON) against the same call in-process
 *   on the Orchestrator: per-call latency and the ratio;
 * - event fan-out: 50 WebSocket subscribers follow one thread while runs commit
 *   events; latency from the commit (an in-process follower called at commit) to
 *   each WebSocket subscriber's receipt, p50 and p99 (goal: p99 < 10 ms).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { ProviderName, ThreadId } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { demoRegistryLayer, makeSkeinClient, serveWebSocket } from "@skein/server"
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads"
import WebSocket from "ws"
import { Context, Deferred, Effect, Exit, Layer } from "effect"
import { nowMs as now, percentile } from "./stats.js"

const bench = Effect.gen(function* () {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-server-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  const runtime = yield* Layer.build(
    makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
  )
  const orchestrator = Context.get(runtime, Orchestrator)
  const server = yield* serveWebSocket({ port: 0 }).pipe(Effect.provide(runtime))
  const client = yield* makeSkeinClient({ url: server.url })

  // ---- thread.get: WebSocket vs in-process
  const thread = yield* orchestrator.createThread({ title: "bench" })
  for (let i = 0; i < 3; i++) {
    yield* orchestrator.startRun({
      threadId: thread.id,
      provider: ProviderName.make("codex"),
      message: `warm ${i}`,
      wait: true
    })
  }
  const calls = 2000
  for (let i = 0; i < 200; i++) yield* client.thread.get({ threadId: thread.id })
  let t = performance.now()
  for (let i = 0; i < calls; i++) yield* orchestrator.getThread(thread.id)
  const inProcess = (performance.now() - t) / calls
  t = performance.now()
  for (let i = 0; i < calls; i++) yield* client.thread.get({ threadId: thread.id })
  const overWs = (performance.now() - t) / calls
  console.log(
    `server: thread.get (3 runs) in-process ${(inProcess * 1000).toFixed(0)} µs/call, over WebSocket ${(overWs * 1000).toFixed(0)} µs/call, ratio ${(overWs / inProcess).toFixed(1)}x`
  )

  // ---- fan-out: subscribers in a worker thread (their decoding does not compete with
  // the server's event loop); times on the shared clock (timeOrigin + now).
  const fanOut = (count: number) =>
    Effect.gen(function* () {
      const fan = yield* orchestrator.createThread({ title: `fan-out ${count}` })
      const runs = 6
      const lastEnd = (e: { event: { _tag: string; run?: { ordinal: number } } }) =>
        e.event._tag === "RunEnded" && e.event.run?.ordinal === runs
      const baseline = new Map<number, number>()
      // The reference clock: an in-process follower called synchronously at each commit.
      const reachedEnd = yield* Deferred.make<void>()
      yield* orchestrator.follow(fan.id, 0, (events) => {
        for (const e of events) {
          baseline.set(e.threadSequence, now())
          if (lastEnd(e)) Deferred.unsafeDone(reachedEnd, Exit.void)
        }
      })
      const worker = new Worker(new URL(import.meta.url), {
        workerData: { role: "subscribers", url: server.url, threadId: fan.id, count, runs }
      })
      yield* Effect.addFinalizer(() => Effect.promise(() => worker.terminate()))
      const messages: Array<WorkerMessage> = []
      let notify: () => void = () => {}
      worker.on("message", (m: WorkerMessage) => {
        messages.push(m)
        notify()
      })
      const waitFor = (tag: WorkerMessage["tag"]) =>
        Effect.async<WorkerMessage>((resume) => {
          const check = () => {
            const m = messages.find((x) => x.tag === tag)
            if (m) resume(Effect.succeed(m))
          }
          notify = check
          check()
        }).pipe(Effect.timeout("60 seconds"))
      yield* waitFor("ready")
      const firstLive = baseline.size + 1
      for (let i = 1; i <= runs; i++) {
        yield* orchestrator.startRun({
          threadId: fan.id,
          provider: ProviderName.make(i % 2 === 0 ? "claude" : "codex"),
          message: `run ${i} [[cmd:echo ${i}:0]]`,
          wait: true
        })
      }
      yield* Deferred.await(reachedEnd)
      const done = (yield* waitFor("done")) as Extract<WorkerMessage, { tag: "done" }>
      const latencies: Array<number> = []
      let missing = 0
      for (const seen of done.seen) {
        const bySeq = new Map(seen)
        for (const [seq, t0] of baseline) {
          if (seq < firstLive) continue
          const t1 = bySeq.get(seq)
          if (t1 === undefined) missing++
          else latencies.push(t1 - t0)
        }
      }
      latencies.sort((a, b) => a - b)
      const p50 = percentile(latencies, 50)
      const p99 = percentile(latencies, 99)
      console.log(
        `server: fan-out of ${baseline.size - firstLive + 1} live events to ${count} WebSocket subscriber(s): p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${latencies.at(-1)?.toFixed(2)} ms${count === 50 ? ` (goal p99 < 10 ms: ${p99 < 10 ? "met" : "missed"})` : ""}; missing ${missing}`
      )
    })
  yield* fanOut(1)
  yield* fanOut(50)
})

type WorkerMessage =
  { readonly tag: "ready" } | { readonly tag: "done"; readonly seen: ReadonlyArray<ReadonlyArray<[number, number]>> }

/**
 * The worker side: `count` raw WebSocket clients follow the thread and note when each
 * event's frame arrives. They read only the sequence numbers (and, like the typed
 * client, send no chunk acknowledgements, which the server does not wait for), so the figure is the server's fan-out, not the cost of
 * 50 clients decoding full events on one shared thread.
 */
const subscribers = (data: { url: string; threadId: string; count: number; runs: number }) =>
  Effect.gen(function* () {
    const started = yield* Effect.forEach(
      Array.from({ length: data.count }, (_, i) => i),
      () =>
        Effect.async<{ readonly seen: Array<[number, number]>; readonly done: Promise<void> }>((resume) => {
          const socket = new WebSocket(data.url)
          const seen: Array<[number, number]> = []
          let resolveDone: () => void = () => {}
          const done = new Promise<void>((r) => (resolveDone = r))
          let ready = false
          socket.on("open", () =>
            socket.send(
              JSON.stringify({
                _tag: "Request",
                id: "1",
                tag: "thread.events",
                payload: { threadId: data.threadId },
                headers: []
              })
            )
          )
          socket.on("message", (raw) => {
            const at = now()
            const parsed = JSON.parse(String(raw)) as unknown
            for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
              const m = message as {
                _tag: string
                requestId?: string
                values?: ReadonlyArray<{ threadSequence: number; event: { _tag: string; run?: { ordinal: number } } }>
              }
              if (m._tag === "Ping") socket.send(JSON.stringify({ _tag: "Pong" }))
              if (m._tag !== "Chunk" || !m.values) continue
              for (const e of m.values) {
                seen.push([e.threadSequence, at])
                if (e.event._tag === "RunEnded" && e.event.run?.ordinal === data.runs) {
                  resolveDone()
                  socket.close()
                }
              }
              if (!ready) {
                ready = true
                resume(Effect.succeed({ seen, done }))
              }
            }
          })
        }),
      { concurrency: 10 }
    )
    parentPort!.postMessage({ tag: "ready" } satisfies WorkerMessage)
    yield* Effect.promise(() => Promise.all(started.map((s) => s.done)))
    parentPort!.postMessage({ tag: "done", seen: started.map((s) => s.seen) } satisfies WorkerMessage)
  })

if (!isMainThread && (workerData as { role?: string } | null)?.role === "subscribers") {
  void Effect.runPromise(Effect.scoped(subscribers(workerData)).pipe(Effect.timeout("90 seconds")))
}

export async function run(): Promise<void> {
  await Effect.runPromise(Effect.scoped(bench).pipe(Effect.timeout("120 seconds")))
}
