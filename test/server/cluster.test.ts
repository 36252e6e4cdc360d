/**
 * `skein daemon --store postgresql://… --cluster`: three daemons, each a runner of one
 * cluster on a real PostgreSQL (test/support/postgres.ts), as a user meets them through
 * the executable. Any daemon serves any thread, and its followers on any daemon see every
 * event in order; the runner that holds a thread is SIGKILLed in the middle of a run:
 * the thread moves to another runner once the lease runs out, the run that was in flight ends `interrupted` (`runner_lost`), every
 * acknowledged run is there once, and the dead runner's agent process is gone. A runner
 * cut off from the database (a proxy the test stops) is left the same way, and once the
 * network is back it writes nothing over what the thread's new runner recorded.
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import type { ProviderName, ThreadId } from "@skein/domain"
import { makeSkeinClusterClient } from "@skein/server"
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { descendants } from "../agents/support.js"
import { usePostgres } from "../support/usePostgres.js"
import { freshDatabase } from "../support/postgres.js"
import { isAlive } from "../support/runtime.js"
import { startTcpProxy, type TcpProxy } from "../support/tcpProxy.js"
import { binPath, childEnv, type DaemonProcess, runSkein, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()
const pg = usePostgres()
const LEASE_MS = 4000

interface RunView {
  readonly id: string
  readonly ordinal: number
  readonly status: string
  readonly failure?: { readonly reason: string; readonly message: string } | null
  readonly items: ReadonlyArray<{ readonly type: string }>
}

/** A daemon of the cluster and how to call it; with `token`, the token it and its callers use. */
const runner = async (store = pg.url(), token?: string) => {
  const home = tempDir("skein-cluster-")
  const shared: Record<string, string> = token === undefined ? {} : { SKEIN_TOKEN: token }
  const daemon = await start(
    ["--port", "0", "--store", store, "--cluster", "--lease-ms", String(LEASE_MS)],
    childEnv(home, shared)
  )
  const call = async <A>(method: string, payload: unknown, timeoutMs = 30_000): Promise<A> => {
    const result = await runSkein(
      ["call", method, JSON.stringify(payload)],
      childEnv(home, { ...shared, SKEIN_URL: daemon.url }),
      timeoutMs
    )
    if (result.code !== 0) throw new Error(`${method} on ${daemon.url} failed: ${result.stderr}`)
    return JSON.parse(result.stdout) as A
  }
  /** `thread.events` of the thread from its start, followed live until `stop`: every event it printed. */
  const follow = (threadId: string) => {
    const child = spawn(process.execPath, [binPath, "call", "thread.events", JSON.stringify({ threadId })], {
      env: childEnv(home, { SKEIN_URL: daemon.url }),
      stdio: ["ignore", "pipe", "ignore"]
    })
    let out = ""
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
    const exited = new Promise((r) => child.once("exit", r))
    return {
      events: () =>
        out
          .split("\n")
          .filter((line) => line.trim() !== "")
          .map(
            (line) => JSON.parse(line) as { readonly threadSequence: number; readonly event: { readonly _tag: string } }
          ),
      stop: async () => {
        child.kill("SIGKILL")
        await exited
      }
    }
  }
  return { daemon, call, follow }
}

/** Returns once the thread's run that `which` picks is running, as `via` sees it. */
const untilRunning = async (
  via: Awaited<ReturnType<typeof runner>>,
  threadId: string,
  which: (run: RunView) => boolean
) => {
  for (let i = 0; i < 100; i++) {
    const view = await via.call<{ runs: Array<RunView> }>("thread.get", { threadId })
    if (view.runs.find(which)?.status === "running") return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error("the long run never started")
}

/** Starts a run that sleeps a minute at its provider, through `via`; returns once it is running. */
const startLongRun = async (via: Awaited<ReturnType<typeof runner>>, threadId: string) => {
  const long = await via.call<RunView>("run.start", { threadId, provider: "alpha", message: "[[sleep:60000]] long" })
  await untilRunning(via, threadId, (run) => run.id === long.id)
}

/** The thread after the move: its first run, the one in flight ended `runner_lost`, the one after. */
const expectMoved = async (via: Awaited<ReturnType<typeof runner>>, threadId: string) => {
  const after = await via.call<{ runs: Array<RunView> }>("thread.get", { threadId })
  expect(after.runs.map((r) => [r.ordinal, r.status, r.failure?.reason ?? null])).toEqual([
    [1, "completed", null],
    [2, "interrupted", "runner_lost"],
    [3, "completed", null]
  ])
}

/**
 * Waits for the shards to settle after the last runner joined: the others see it at their
 * next read of the runners (each second at this lease) and let go of its shards, which it
 * takes at its next try (each second). A thread placed before then may move once, and a
 * test would take the runner that served its first run for the one that holds it.
 */
const settled = () => new Promise((r) => setTimeout(r, 3000))

/** Whether the daemon runs an agent (the scripted provider's process): it holds a thread with a session. */
const runsAnAgent = (daemon: DaemonProcess) => descendants(daemon.child.pid!).length > 0

describe("a cluster of daemons", () => {
  it("serves a thread from any daemon, and moves it when its runner is SIGKILLed mid-run", async () => {
    const runners = [await runner(), await runner(), await runner()]
    await settled()
    const [a, b, c] = runners
    const thread = await a!.call<{ id: string }>("thread.create", { title: "clustered" })
    const first = await b!.call<RunView>("run.start", {
      threadId: thread.id,
      provider: "alpha",
      message: "hello",
      wait: true
    })
    expect(first.status).toBe("completed")
    const seen = await c!.call<{ runs: Array<RunView> }>("thread.get", { threadId: thread.id })
    expect(seen.runs.map((r) => r.status)).toEqual(["completed"])

    // The runner that holds the thread is the one running its agent.
    const holders = runners.filter((r) => runsAnAgent(r.daemon))
    expect(holders).toHaveLength(1)
    const holder = holders[0]!
    const agents = descendants(holder.daemon.child.pid!)
    const other = runners.find((r) => r !== holder)!
    // A follower on the daemon that neither holds the thread nor asks for its runs.
    const follower = runners.find((r) => r !== holder && r !== other)!.follow(thread.id)
    await startLongRun(other, thread.id)

    holder.daemon.kill()
    const killedAt = Date.now()
    await holder.daemon.exited
    // The next run, from a live daemon, is accepted once the thread has moved.
    const next = await other.call<RunView>(
      "run.start",
      { threadId: thread.id, provider: "alpha", message: "after", wait: true },
      LEASE_MS + 30_000
    )
    const failover = Date.now() - killedAt
    console.log(`failover: ${failover} ms (lease ${LEASE_MS} ms)`)
    expect(next.status).toBe("completed")
    expect(failover).toBeLessThan(LEASE_MS + 20_000)

    await expectMoved(other, thread.id)
    // The follower saw every event, in order, through the move, up to the last run's end.
    const ends = () => follower.events().filter((e) => e.event._tag === "RunEnded").length
    for (let i = 0; i < 50 && ends() < 3; i++) await new Promise((r) => setTimeout(r, 100))
    await follower.stop()
    const followed = follower.events()
    expect(followed.map((e) => e.threadSequence)).toEqual(followed.map((_, i) => i + 1))
    expect(followed.filter((e) => e.event._tag === "RunEnded")).toHaveLength(3)
    // The dead runner's agent went with it.
    for (let i = 0; i < 50 && agents.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100))
    expect(agents.filter(isAlive)).toEqual([])
  }, 120_000)

  it("answers a run waited for through a daemon that does not hold its thread, also when its runner dies", async () => {
    const runners = [await runner(), await runner(), await runner()]
    await settled()
    const thread = await runners[0]!.call<{ id: string }>("thread.create", { title: "awaited elsewhere" })
    const start = (via: Awaited<ReturnType<typeof runner>>, message: string) =>
      via.call<RunView>("run.start", { threadId: thread.id, provider: "alpha", message, wait: true }, LEASE_MS + 30_000)
    await start(runners[0]!, "placed")
    const holder = runners.find((r) => runsAnAgent(r.daemon))!
    const other = runners.find((r) => r !== holder)!

    // Answered whole, as the thread's runner recorded it.
    const waited = await start(other, "hello")
    expect(waited.status).toBe("completed")
    expect(waited.items.map((item) => item.type)).toContain("assistant_message")
    const recorded = await holder.call<{ runs: Array<RunView> }>("thread.get", { threadId: thread.id })
    expect(waited).toEqual(recorded.runs.find((r) => r.id === waited.id))

    // Its runner dies mid-run: the waiter hears the run as the thread's next runner ended it.
    const pending = start(other, "[[sleep:60000]] long")
    await untilRunning(other, thread.id, (run) => run.ordinal === 3)
    holder.daemon.kill()
    const lost = await pending
    expect([lost.ordinal, lost.status, lost.failure?.reason]).toEqual([3, "interrupted", "runner_lost"])
  }, 120_000)

  it("tells from any daemon where a thread lives, and the cluster client sends the thread's runs there", async () => {
    const token = randomBytes(32).toString("hex")
    const runners = [await runner(pg.url(), token), await runner(pg.url(), token), await runner(pg.url(), token)]
    await settled()
    const thread = await runners[0]!.call<{ id: string }>("thread.create", { title: "located" })
    await runners[1]!.call<RunView>("run.start", { threadId: thread.id, provider: "alpha", message: "hi", wait: true })
    const holder = runners.find((r) => runsAnAgent(r.daemon))!
    for (const via of runners) {
      expect(await via.call("thread.locate", { threadId: thread.id })).toEqual({ url: holder.daemon.url })
    }
    await expect(runners[0]!.call("thread.locate", { threadId: "thr_nowhere" })).rejects.toThrow(/ThreadNotFound/)

    const scope = Effect.runSync(Scope.make())
    try {
      const urls = runners.map((r) => r.daemon.url)
      const client = await Effect.runPromise(Scope.extend(makeSkeinClusterClient({ urls, token }), scope))
      expect(await Effect.runPromise(client.urlFor(thread.id as ThreadId))).toBe(holder.daemon.url)
      // The daemons that do not hold the thread are gone: its runs, sent to its runner, go on.
      for (const r of runners) if (r !== holder) r.daemon.kill()
      for (const r of runners) if (r !== holder) await r.daemon.exited
      for (let i = 0; i < 3; i++) {
        const run = await Effect.runPromise(
          client.run.start({
            threadId: thread.id as ThreadId,
            provider: "alpha" as ProviderName,
            message: `m${i}`,
            wait: true
          })
        )
        expect(run.status).toBe("completed")
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 120_000)

  it("a waited run.start through the daemon a dead runner's thread moved to ends the lost run first", async () => {
    // Two runners: the one left is where the thread goes. Asked once the thread is there,
    // the daemon starts it as the cluster would, not from the log as the dead runner left it.
    const runners = [await runner(), await runner()]
    await settled()
    const thread = await runners[0]!.call<{ id: string }>("thread.create", { title: "moves here" })
    await runners[1]!.call<RunView>("run.start", { threadId: thread.id, provider: "alpha", message: "hi", wait: true })
    const holder = runners.find((r) => runsAnAgent(r.daemon))!
    const survivor = runners.find((r) => r !== holder)!
    await startLongRun(survivor, thread.id)
    holder.daemon.kill()
    await holder.daemon.exited
    await new Promise((r) => setTimeout(r, LEASE_MS + 3000))
    const next = await survivor.call<RunView>(
      "run.start",
      { threadId: thread.id, provider: "alpha", message: "here", wait: true },
      LEASE_MS + 30_000
    )
    expect([next.ordinal, next.status]).toEqual([3, "completed"])
    await expectMoved(survivor, thread.id)
  }, 120_000)

  it("a runner that joins takes its share: each run in flight that moves is ended where it ran", async () => {
    const first = await runner()
    await settled()
    const threads: Array<string> = []
    for (let i = 0; i < 8; i++) {
      const thread = await first.call<{ id: string }>("thread.create", { title: `before the join ${i}` })
      await first.call<RunView>("run.start", { threadId: thread.id, provider: "alpha", message: "hi", wait: true })
      await startLongRun(first, thread.id)
      threads.push(thread.id)
    }
    const joined = await runner()
    await settled()
    // About half the threads move to the runner that joined. The run each had in flight is
    // stopped and recorded by the runner it ran on before the thread goes (its message says
    // the thread moved, not that its runner stopped); the next runs where the thread went.
    // The runs of the threads that stay go on.
    const outcomes: Array<string> = []
    for (const threadId of threads) {
      const next = await joined
        .call<RunView>("run.start", { threadId, provider: "alpha", message: "after the join", wait: true })
        .catch((error: Error) => {
          if (!error.message.includes("RunAlreadyActive")) throw error
          return undefined
        })
      const { runs } = await joined.call<{ runs: Array<RunView> }>("thread.get", { threadId })
      const seen = runs.map((r) => [r.ordinal, r.status, r.failure?.reason ?? null])
      if (next === undefined) {
        expect(seen).toEqual([
          [1, "completed", null],
          [2, "running", null]
        ])
        outcomes.push("stayed")
      } else {
        expect(seen).toEqual([
          [1, "completed", null],
          [2, "interrupted", "runner_lost"],
          [3, "completed", null]
        ])
        expect(runs[1]!.failure!.message).toContain("the thread moved to another Skein process")
        outcomes.push("moved")
      }
    }
    console.log(`after a runner joined: ${outcomes.join(", ")}`)
    // With 8 threads, none moving is a chance of 1 in 256.
    expect(outcomes).toContain("moved")
  }, 120_000)

  it("moves a thread whose runner is cut off from the database, as if it had died", async () => {
    // Each runner reaches the database through a proxy of its own, so any of them can be cut off.
    const proxies: Array<TcpProxy> = []
    const throughProxy = async () => {
      const url = new URL(pg.url())
      const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) })
      proxies.push(proxy)
      url.port = String(proxy.port)
      return { proxy, url: url.toString() }
    }
    try {
      const runners = []
      for (let i = 0; i < 3; i++) {
        const { proxy, url } = await throughProxy()
        runners.push({ ...(await runner(url)), proxy })
      }
      await settled()
      const thread = await runners[0]!.call<{ id: string }>("thread.create", { title: "cut off" })
      await runners[1]!.call<RunView>("run.start", {
        threadId: thread.id,
        provider: "alpha",
        message: "hi",
        wait: true
      })
      const holder = runners.find((r) => runsAnAgent(r.daemon))!
      const other = runners.find((r) => r !== holder)!
      await startLongRun(other, thread.id)
      holder.proxy.cut()
      const cutAt = Date.now()
      // Until the lease runs out the cut-off runner still holds the thread, and answers from
      // memory that its run is active (it can write nothing): the client tries again.
      let next: RunView | undefined
      while (next === undefined && Date.now() - cutAt < LEASE_MS + 30_000) {
        next = await other
          .call<RunView>(
            "run.start",
            { threadId: thread.id, provider: "alpha", message: "after the cut", wait: true },
            LEASE_MS + 30_000
          )
          .catch(async (error: Error) => {
            if (!error.message.includes("RunAlreadyActive")) throw error
            await new Promise((r) => setTimeout(r, 500))
            return undefined
          })
      }
      if (next === undefined) throw new Error("the thread never moved")
      console.log(`moved after a cut: ${Date.now() - cutAt} ms (lease ${LEASE_MS} ms)`)
      expect(next.status).toBe("completed")
      await expectMoved(other, thread.id)
      // The network comes back: whatever the cut-off runner still held of the thread writes
      // nothing over what the thread's new runner recorded (the expected-sequence fence).
      holder.proxy.heal()
      await new Promise((r) => setTimeout(r, LEASE_MS + 2000))
      const healed = await other.call<{ runs: Array<RunView> }>("thread.get", { threadId: thread.id })
      expect(healed.runs.map((r) => [r.ordinal, r.status, r.failure?.reason ?? null])).toEqual([
        [1, "completed", null],
        [2, "interrupted", "runner_lost"],
        [3, "completed", null]
      ])
      const fourth = await holder.call<RunView>("run.start", {
        threadId: thread.id,
        provider: "alpha",
        message: "through the healed runner",
        wait: true
      })
      expect([fourth.ordinal, fourth.status]).toEqual([4, "completed"])
    } finally {
      for (const proxy of proxies) await proxy.close()
    }
  }, 120_000)

  it("takes a subagent spawned through another daemon, and its result reaches the parent's next run", async () => {
    const [a, b, c] = [await runner(), await runner(), await runner()]
    const parent = await a.call<{ id: string }>("thread.create", { title: "parent" })
    await b.call<RunView>("run.start", { threadId: parent.id, provider: "alpha", message: "plan", wait: true })
    const spawned = await c.call<{ thread: { id: string }; run: RunView }>("subagent.spawn", {
      parentThreadId: parent.id,
      provider: "beta",
      prompt: "look into it"
    })
    for (let i = 0; i < 100; i++) {
      const child = await b.call<{ runs: Array<RunView> }>("thread.get", { threadId: spawned.thread.id })
      if (child.runs[0]?.status === "completed") break
      await new Promise((r) => setTimeout(r, 100))
    }
    const next = await a.call<RunView>("run.start", {
      threadId: parent.id,
      provider: "alpha",
      message: "go on",
      wait: true
    })
    expect(next.status).toBe("completed")
    const view = await c.call<{ transfers: Array<{ type: string; status: string; sourceThreadId: string }> }>(
      "thread.get",
      { threadId: parent.id }
    )
    expect(
      view.transfers
        .filter((t) => t.type === "subagent_result" && t.sourceThreadId === spawned.thread.id)
        .map((t) => t.status)
    ).toEqual(["consumed"])
  }, 60_000)

  it("starts three runners at once on an empty database: one migrates, all serve", async () => {
    const url = await freshDatabase(pg.url())
    const runners = await Promise.all([runner(url), runner(url), runner(url)])
    for (const [i, r] of runners.entries()) {
      const thread = await r.call<{ id: string }>("thread.create", { title: `at once ${i}` })
      const run = await runners[(i + 1) % 3]!.call<RunView>("run.start", {
        threadId: thread.id,
        provider: "alpha",
        message: "hi",
        wait: true
      })
      expect(run.status).toBe("completed")
    }
  }, 60_000)
})
