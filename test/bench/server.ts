/**
 * Server figures:
 * - thread.get over WebSocket (typed client, JSON) against the same call in-process
 *   on the Orchestrator: per-call latency and the ratio; beside it the floor, what any
 *   WebSocket path pays at the least (the same frames over a bare socket, JSON both
 *   ways and the client's decode of the view), the same bare socket running the
 *   handler for each request (what any server of this call pays here), and the
 *   smallest call's round trip;
 * - event fan-out: 50 WebSocket subscribers (in a process of their own) follow one
 *   thread while runs commit events; latency from the commit (an in-process follower
 *   called at commit) to each subscriber's receipt, p50 and p99 (goal: p99 < 10 ms),
 *   and the server's share: commit until every frame of it has been handed to the
 *   sockets.
 *
 * The runs start on a fixed schedule (one every `intervalMs`), after warm-up runs, so
 * the figure is the latency at a known load. (No forced collection before the measured
 * runs: a `gc()` there makes V8 re-optimise many functions during them, on the same
 * cores.) Back to back, runs offer more frames than one process of 50 clients can read
 * on a 2-core machine: its backlog, and so the "latency", then grows with the number of
 * runs, which says how fast the clients read, not how fast the server fans out.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import { ProviderName, ThreadView } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { demoRegistryLayer, makeSkeinClient, serveWebSocket } from "@skein/server"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Context, Deferred, Effect, Exit, Layer, Schema } from "effect"
import { WebSocket, WebSocketServer } from "ws"
import { monotonicMs as now, percentile } from "./stats.js"
import type { SubscribersControl, SubscribersMessage, SubscribersStart } from "./subscribers.js"

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
    `server: thread.get (3 runs) in-process ${(inProcess * 1000).toFixed(0)} µs/call, over WebSocket ${(overWs * 1000).toFixed(0)} µs/call, ratio ${(overWs / inProcess).toFixed(1)}x (goal <= 1.5x: ${overWs / inProcess <= 1.5 ? "met" : `missed by ${(overWs / inProcess - 1.5).toFixed(1)}x; the WebSocket path adds ${((overWs - inProcess) * 1000).toFixed(0)} µs`})`
  )
  // What no WebSocket path can do without: the same request and answer frames over a
  // bare `ws` socket in this process, the answer built by JSON.stringify and read by
  // JSON.parse and the view's schema, as the typed client reads it.
  const view = yield* orchestrator.getThread(thread.id)
  const encoded = Schema.encodeSync(ThreadView)(view)
  const bare = yield* Effect.promise(() => bareRoundTrip(() => encoded, calls))
  const floor = inProcess + bare
  console.log(
    `server: the floor under that: a bare ws round trip of the same frames, with JSON both ways and the client's decode, adds ${(bare * 1000).toFixed(0)} µs/call; in-process plus that is ${(floor / inProcess).toFixed(2)}x in-process (the WebSocket path adds ${((overWs - floor) * 1000).toFixed(0)} µs beyond it)`
  )
  // The same bare socket with the handler run for each request, as any server runs it:
  // after the socket's I/O, on caches that I/O has used, not back to back in a loop.
  const getView = orchestrator.getThread(thread.id)
  const withHandler = yield* Effect.promise(() => bareRoundTrip(() => Effect.runPromise(getView), calls))
  console.log(
    `server: the same bare socket running the handler per request: ${(withHandler * 1000).toFixed(0)} µs/call, ${(withHandler / inProcess).toFixed(2)}x in-process (goal 1.5x${withHandler / inProcess <= 1.5 ? "" : `: not within reach of any server here; Skein's path adds ${((overWs - withHandler) * 1000).toFixed(0)} µs beyond this one`})`
  )
  // The smallest call there is (a short list, next to nothing to read or encode), over
  // the same connection and in-process.
  for (let i = 0; i < 200; i++) yield* client.provider.list()
  t = performance.now()
  for (let i = 0; i < calls; i++) yield* orchestrator.listProviders
  const smallestInProcess = (performance.now() - t) / calls
  t = performance.now()
  for (let i = 0; i < calls; i++) yield* client.provider.list()
  const smallestWs = (performance.now() - t) / calls
  console.log(
    `server: the smallest call, provider.list: in-process ${(smallestInProcess * 1000).toFixed(0)} µs/call, over WebSocket ${(smallestWs * 1000).toFixed(0)} µs/call (a round trip adds ${((smallestWs - smallestInProcess) * 1000).toFixed(0)} µs with almost nothing to encode; thread.get at 1.5x would leave it ${(inProcess * 0.5 * 1000).toFixed(0)} µs)`
  )

  // ---- fan-out: the subscribers run in a small process of their own (see
  // subscribers.ts); times are on the monotonic clock both processes share.
  const fanOut = (options: {
    readonly subscribers: number
    readonly runs: number
    readonly warmup: number
    readonly intervalMs: number
  }) =>
    Effect.gen(function* () {
      const { intervalMs, subscribers, warmup } = options
      const runs = warmup + options.runs
      const fan = yield* orchestrator.createThread({ title: `fan-out ${subscribers}` })
      // The reference clock: an in-process follower called synchronously at each commit,
      // before the server's followers (listeners run in the order they followed).
      const committed = new Map<number, number>()
      const reachedEnd = yield* Deferred.make<void>()
      yield* orchestrator.follow(fan.id, 0, (events) => {
        for (const e of events) {
          committed.set(e.threadSequence, now())
          if (e.event._tag === "RunEnded" && e.event.run.ordinal === runs) Deferred.unsafeDone(reachedEnd, Exit.void)
        }
      })
      const child = yield* startSubscribers({ url: server.url, threadId: fan.id, count: subscribers })
      yield* child.await("ready")
      const paced = (from: number, to: number) =>
        Effect.gen(function* () {
          const start = now()
          for (let i = from; i <= to; i++) {
            const due = start + (i - from) * intervalMs - now()
            if (due > 0) yield* Effect.sleep(due)
            yield* orchestrator.startRun({
              threadId: fan.id,
              provider: ProviderName.make(i % 2 === 0 ? "claude" : "codex"),
              message: `run ${i} [[cmd:echo ${i}:0]]`,
              wait: true
            })
          }
        })
      yield* paced(1, warmup)
      const firstLive = committed.size + 1
      // A second in-process follower, called after the server's: when the commit's
      // frames have all been handed to the sockets.
      const written = new Map<number, number>()
      let commits = 0
      yield* orchestrator.follow(fan.id, firstLive - 1, (events) => {
        commits++
        for (const e of events) written.set(e.threadSequence, now())
      })
      const cpuBefore = cpuTimes(child.pid)
      child.mark()
      const started = now()
      yield* paced(warmup + 1, runs)
      yield* Deferred.await(reachedEnd)
      const cpuAfter = cpuTimes(child.pid)
      const elapsed = now() - started
      child.last(Math.max(...committed.keys()))
      const { cpuMs, seen } = yield* child.await("done")
      const latencies: Array<number> = []
      const serverSide: Array<number> = []
      let missing = 0
      for (const [seq, t0] of committed) if (seq >= firstLive) serverSide.push(written.get(seq)! - t0)
      for (const subscriber of seen) {
        const bySeq = new Map(subscriber)
        for (const [seq, t0] of committed) {
          if (seq < firstLive) continue
          const t1 = bySeq.get(seq)
          if (t1 === undefined) missing++
          else latencies.push(t1 - t0)
        }
      }
      const p99 = percentile(latencies, 99)
      const ms = (x: number) => `${x.toFixed(2)} ms`
      const cpu =
        cpuBefore && cpuAfter
          ? `; CPU meanwhile: runtime ${cpuAfter.runtime - cpuBefore.runtime} ms, subscribers ${cpuMs} ms, providers ${cpuAfter.providers - cpuBefore.providers} ms, in ${Math.round(elapsed)} ms on ${Os.availableParallelism()} cores`
          : ""
      const perSecond = (n: number) => Math.round((n / elapsed) * 1000).toLocaleString("en-US")
      console.log(
        `server: fan-out of ${serverSide.length} live events to ${subscribers} WebSocket subscriber(s), ${options.runs} runs started every ${intervalMs} ms (${perSecond(commits)} commits/s, ${perSecond(commits * subscribers)} frames/s), commit to receipt: p50 ${ms(percentile(latencies, 50))}, p99 ${ms(p99)}, max ${ms(Math.max(...latencies))}${subscribers === 50 ? ` (goal p99 < 10 ms: ${p99 < 10 ? "met" : "missed"})` : ""}; commit to all frames written: p50 ${ms(percentile(serverSide, 50))}, p99 ${ms(percentile(serverSide, 99))}; missing ${missing}${cpu}`
      )
    })
  yield* fanOut({ subscribers: 1, runs: 10, warmup: 5, intervalMs: 50 })
  yield* fanOut({ subscribers: 50, runs: 40, warmup: 10, intervalMs: 50 })
})

/**
 * Milliseconds per round trip over a bare `ws` socket on 127.0.0.1, in this process:
 * the server parses a request frame and answers with `answer()` in an Exit frame, the
 * client parses the answer and decodes the value as a thread view.
 */
const bareRoundTrip = async (answer: () => unknown, calls: number): Promise<number> => {
  const decode = Schema.decodeUnknownSync(ThreadView)
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 })
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()))
  wss.on("connection", (socket) =>
    socket.on("message", (data) => {
      const request = JSON.parse(String(data)) as { readonly id: string }
      void Promise.resolve(answer()).then((value) =>
        socket.send(JSON.stringify({ _tag: "Exit", requestId: request.id, exit: { _tag: "Success", value } }))
      )
    })
  )
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`)
  await new Promise<void>((resolve, reject) => {
    client.once("open", () => resolve())
    client.once("error", reject)
  })
  let answered: () => void = () => {}
  client.on("message", (data) => {
    decode((JSON.parse(String(data)) as { readonly exit: { readonly value: unknown } }).exit.value)
    answered()
  })
  let id = 0
  const call = () =>
    new Promise<void>((resolve) => {
      answered = resolve
      client.send(JSON.stringify({ _tag: "Request", id: String(id++), tag: "thread.get", payload: {}, headers: [] }))
    })
  for (let i = 0; i < 200; i++) await call()
  const t = performance.now()
  for (let i = 0; i < calls; i++) await call()
  const perCall = (performance.now() - t) / calls
  client.close()
  await new Promise<void>((resolve) => wss.close(() => resolve()))
  return perCall
}

/** A subscribers process (subscribers.ts), ended with the scope. */
const startSubscribers = (start: SubscribersStart) =>
  Effect.gen(function* () {
    const child = fork(fileURLToPath(new URL("./subscribers.js", import.meta.url)), [], {
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.exitCode === null && child.kill()))
    const messages: Array<SubscribersMessage> = []
    const waiting = new Set<() => void>()
    child.on("message", (m: SubscribersMessage) => {
      messages.push(m)
      for (const check of waiting) check()
    })
    child.send(start)
    const await_ = <T extends SubscribersMessage["tag"]>(tag: T) =>
      Effect.async<Extract<SubscribersMessage, { tag: T }>>((resume) => {
        const check = () => {
          const m = messages.find((x) => x.tag === tag)
          if (m === undefined) return
          waiting.delete(check)
          resume(Effect.succeed(m as Extract<SubscribersMessage, { tag: T }>))
        }
        waiting.add(check)
        check()
        return Effect.sync(() => waiting.delete(check))
      }).pipe(Effect.timeout("60 seconds"), Effect.orDie)
    const control = (message: SubscribersControl) => void child.send(message)
    return {
      await: await_,
      pid: child.pid,
      mark: () => control({ tag: "mark" }),
      last: (threadSequence: number) => control({ tag: "last", threadSequence })
    }
  })

/**
 * CPU time (user + system, ms) of this process and of its child processes other than
 * `exceptPid` (the providers), from /proc: Linux only, null elsewhere. With the
 * subscribers' own figure it shows how busy the cores were during the measurement.
 */
const cpuTimes = (exceptPid: number | undefined) => {
  const read = (pid: string) => {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // utime + stime, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
    return { ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * 10 }
  }
  try {
    let providers = 0
    for (const entry of Fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry) || Number(entry) === exceptPid) continue
      try {
        const { ms, ppid } = read(entry)
        if (ppid === process.pid) providers += ms
      } catch {
        // The process ended meanwhile.
      }
    }
    return { runtime: read(String(process.pid)).ms, providers }
  } catch {
    return null
  }
}

export async function run(): Promise<void> {
  await Effect.runPromise(Effect.scoped(bench).pipe(Effect.timeout("120 seconds")))
}
