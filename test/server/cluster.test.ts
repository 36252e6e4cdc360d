/**
 * `skein daemon --store postgresql://… --cluster`: three daemons, each a runner of one
 * cluster on a real PostgreSQL (test/support/postgres.ts), as a user meets them through
 * the executable. Any daemon serves any thread; the runner that holds a thread is
 * SIGKILLed in the middle of a run: the thread moves to another runner once the lease
 * runs out, the run that was in flight ends `interrupted` (`runner_lost`), every
 * acknowledged run is there once, and the dead runner's agent process is gone.
 */
import { describe, expect, it } from "vitest"
import { descendants } from "../agents/support.js"
import { usePostgres } from "../support/usePostgres.js"
import { isAlive } from "../support/runtime.js"
import { childEnv, type DaemonProcess, runSkein, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()
const pg = usePostgres()
const LEASE_MS = 4000

interface RunView {
  readonly id: string
  readonly ordinal: number
  readonly status: string
  readonly failure?: { readonly reason: string; readonly message: string } | null
}

/** A daemon of the cluster and how to call it. */
const runner = async () => {
  const home = tempDir("skein-cluster-")
  const daemon = await start(
    ["--port", "0", "--store", pg.url(), "--cluster", "--lease-ms", String(LEASE_MS)],
    childEnv(home)
  )
  const call = async <A>(method: string, payload: unknown, timeoutMs = 30_000): Promise<A> => {
    const result = await runSkein(
      ["call", method, JSON.stringify(payload)],
      childEnv(home, { SKEIN_URL: daemon.url }),
      timeoutMs
    )
    if (result.code !== 0) throw new Error(`${method} on ${daemon.url} failed: ${result.stderr}`)
    return JSON.parse(result.stdout) as A
  }
  return { daemon, call }
}

/** Whether the daemon runs an agent (the scripted provider's process): it holds a thread with a session. */
const runsAnAgent = (daemon: DaemonProcess) => descendants(daemon.child.pid!).length > 0

describe("a cluster of daemons", () => {
  it("serves a thread from any daemon, and moves it when its runner is SIGKILLed mid-run", async () => {
    const runners = [await runner(), await runner(), await runner()]
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
    const long = await other.call<RunView>("run.start", {
      threadId: thread.id,
      provider: "alpha",
      message: "[[sleep:60000]] long"
    })
    for (let i = 0; i < 100; i++) {
      const view = await other.call<{ runs: Array<RunView> }>("thread.get", { threadId: thread.id })
      if (view.runs.find((r) => r.id === long.id)?.status === "running") break
      await new Promise((r) => setTimeout(r, 100))
    }

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

    const after = await other.call<{ runs: Array<RunView> }>("thread.get", { threadId: thread.id })
    expect(after.runs.map((r) => [r.ordinal, r.status])).toEqual([
      [1, "completed"],
      [2, "interrupted"],
      [3, "completed"]
    ])
    expect(after.runs[1]!.failure?.reason).toBe("runner_lost")
    // The dead runner's agent went with it.
    for (let i = 0; i < 50 && agents.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100))
    expect(agents.filter(isAlive)).toEqual([])
  }, 120_000)
})
