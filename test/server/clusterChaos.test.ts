/**
 * The chaos a cluster is for: runners SIGKILLed every few seconds while clients issue
 * runs, forks and subagent spawns through every daemon. Three `skein daemon --cluster`
 * runners on a real PostgreSQL; 60 threads to begin with; 30 clients for a minute, each on the typed client, each
 * command with a commandId and, when its daemon dies under it, retried with the same id
 * on another; every few seconds the runner holding the most agents is SIGKILLed and a
 * new one started. Afterwards: every acknowledged run is in its thread exactly once,
 * each thread's ordinals run 1..n without a gap, and no agent process of a dead runner
 * is left. The same workload against one daemon alone, on SQLite, with no kill, keeps
 * the same invariants.
 */
import type { CommandId, ProviderName, ThreadId } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { descendants } from "../agents/support.js"
import { usePostgres } from "../support/usePostgres.js"
import { isAlive } from "../support/runtime.js"
import { childEnv, type DaemonProcess, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()
const pg = usePostgres()

const THREADS = 60
const CLIENTS = 30
const LEASE_MS = 3000
const alpha = "alpha" as ProviderName

interface Daemon {
  readonly process: DaemonProcess
  readonly token: string
}

/** Calls `method`-like `use` on a daemon's typed client (connected for the call), within `timeoutMs`. */
const onDaemon = <A>(
  daemon: Daemon,
  use: (client: Effect.Effect.Success<ReturnType<typeof makeSkeinClient>>) => Effect.Effect<A, unknown>,
  timeoutMs = 20_000
): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(makeSkeinClient({ url: daemon.process.url, token: daemon.token }), use).pipe(
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => new Error("timed out") })
      )
    )
  )

interface Acknowledged {
  readonly threadId: string
  readonly runId: string
}

/**
 * The workload: clients issuing commands on random threads through random live daemons
 * until `until()` says stop; each command retried with its commandId on another daemon
 * when its daemon fails under it. What a daemon acknowledged is returned.
 */
const workload = async (live: () => ReadonlyArray<Daemon>, until: () => boolean) => {
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(Math.random() * items.length)]!
  const threads: Array<string> = []
  for (let i = 0; i < THREADS; i++) {
    const thread = await onDaemon(pick(live()), (c) =>
      c.thread.create({ title: `chaos ${i}`, commandId: `cmd_create_${i}_${Date.now()}` as CommandId })
    )
    threads.push(thread.id)
  }
  const acknowledged: Array<Acknowledged> = []
  let commands = 0
  let retried = 0
  /** Sends until a daemon answers (the same commandId each time), or gives up after a few tries. */
  const send = async <A>(
    call: (client: Parameters<Parameters<typeof onDaemon<A>>[1]>[0]) => Effect.Effect<A, unknown>
  ) => {
    for (let attempt = 0; attempt < 6; attempt++) {
      try {
        return await onDaemon(pick(live()), call, LEASE_MS + 20_000)
      } catch {
        retried++
        await new Promise((r) => setTimeout(r, 200))
      }
    }
    return undefined
  }
  const client = async (n: number) => {
    while (!until()) {
      const i = commands++
      const threadId = pick(threads) as ThreadId
      const commandId = `cmd_${n}_${i}` as CommandId
      const kind = i % 10
      if (kind === 0) {
        const fork = await send((c) =>
          c.thread.fork({ sourceThreadId: threadId, sourcePoint: "latest_stable", commandId })
        )
        if (fork !== undefined) threads.push(fork.thread.id)
      } else if (kind === 1) {
        const spawned = await send((c) =>
          c.subagent.spawn({ parentThreadId: threadId, provider: alpha, prompt: `help ${i}`, commandId })
        )
        if (spawned !== undefined) {
          threads.push(spawned.thread.id)
          acknowledged.push({ threadId: spawned.thread.id, runId: spawned.run.id })
        }
      } else {
        const run = await send((c) =>
          c.run.start({ threadId, provider: alpha, message: `m ${i}`, wait: true, whenBusy: "queue", commandId })
        )
        if (run !== undefined) acknowledged.push({ threadId, runId: run.id })
      }
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)))
  return { threads, acknowledged, commands, retried }
}

/** Every acknowledged run once in its thread; each thread's ordinals 1..n. */
const check = async (daemon: Daemon, threads: ReadonlyArray<string>, acknowledged: ReadonlyArray<Acknowledged>) => {
  const runsOf = new Map<string, ReadonlyArray<{ readonly id: string; readonly ordinal: number }>>()
  for (const threadId of threads) {
    const view = await onDaemon(daemon, (c) => c.thread.get({ threadId: threadId as ThreadId }))
    runsOf.set(threadId, view.runs)
    expect(
      view.runs.map((r) => r.ordinal),
      threadId
    ).toEqual(view.runs.map((_, i) => i + 1))
  }
  for (const { threadId, runId } of acknowledged) {
    expect(
      runsOf.get(threadId)!.filter((r) => r.id === runId),
      runId
    ).toHaveLength(1)
  }
}

describe("a cluster under chaos", () => {
  it("keeps every acknowledged run once, and gap-free ordinals, while runners are SIGKILLed", async () => {
    const startRunner = async (): Promise<Daemon> => {
      const home = tempDir("skein-chaos-")
      const process = await start(
        ["--port", "0", "--store", pg.url(), "--cluster", "--lease-ms", String(LEASE_MS)],
        childEnv(home)
      )
      return { process, token: tokenIn(home) }
    }
    const runners = [await startRunner(), await startRunner(), await startRunner()]
    const orphans: Array<number> = []
    let killing = true
    let kills = 0
    const chaos = (async () => {
      while (killing) {
        await new Promise((r) => setTimeout(r, 5000))
        if (!killing) break
        // The runner with the most agents: the one holding the most threads at work.
        const victim = [...runners].sort(
          (x, y) => descendants(y.process.child.pid!).length - descendants(x.process.child.pid!).length
        )[0]!
        orphans.push(...descendants(victim.process.child.pid!))
        runners.splice(runners.indexOf(victim), 1)
        victim.process.kill()
        await victim.process.exited
        kills++
        runners.push(await startRunner())
      }
    })()
    const deadline = Date.now() + 60_000
    const done = workload(
      () => runners,
      () => Date.now() > deadline
    )
    const { threads, acknowledged, commands, retried } = await done
    killing = false
    await chaos
    console.log(
      `chaos: ${kills} runners killed, ${commands} commands (${retried} retries), ${acknowledged.length} runs acknowledged on ${threads.length} threads`
    )
    expect(kills).toBeGreaterThanOrEqual(5)
    expect(acknowledged.length).toBeGreaterThan(100)
    await check(runners[0]!, threads, acknowledged)
    for (let i = 0; i < 50 && orphans.some(isAlive); i++) await new Promise((r) => setTimeout(r, 100))
    expect(orphans.filter(isAlive)).toEqual([])
  }, 240_000)

  it("keeps the same with one daemon alone, on SQLite", async () => {
    const home = tempDir("skein-chaos-single-")
    const daemon: Daemon = { process: await start(["--port", "0"], childEnv(home)), token: tokenIn(home) }
    const deadline = Date.now() + 10_000
    const { threads, acknowledged } = await workload(
      () => [daemon],
      () => Date.now() > deadline
    )
    expect(acknowledged.length).toBeGreaterThan(100)
    await check(daemon, threads, acknowledged)
  }, 120_000)
})
