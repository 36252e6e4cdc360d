/**
 * The cluster (issue 49), over the `skein` executable and a real PostgreSQL
 * (test/support/postgres.ts):
 * - runs per second across 60 threads, 30 clients each running one run at a time with
 *   `wait` through the daemons in turn, on 1, 2 and 3 runners (each cluster a database
 *   of its own on one server), beside one SQLite daemon alone; and on the 3 runners
 *   again with a cluster client (ClusterClient.ts), which sends each thread's runs to the
 *   daemon holding it. Goal: 3 runners at least 0.8x one runner, with the cluster
 *   client; on two cores, no collapse rather than a speed-up. Through the daemons in
 *   turn, two runs in three pass from one daemon to another, a hop that costs both
 *   daemons' CPU, and the figure is printed beside. All five are up
 *   at once and measured in turn, a short window each, over several rounds in rotating
 *   order, so that a slow spell of the host falls on all of them: each figure is the
 *   median of its rounds, the ratio the median of the rounds' ratios. Each configuration
 *   is first driven the same way for WARMUP_MS, uncounted: a runner of three sees a third
 *   of the runs, so its code would otherwise still be compiling while one runner's is
 *   not, and the rounds would compare start-ups rather than steady states;
 * - failover: a thread's runner SIGKILLed, then the time until another daemon has
 *   accepted the thread's next run, p50 and max over several kills (goal: p50 under
 *   the lease plus 1 s).
 *
 *   npm run build && node --expose-gc test/dist/bench/main.js cluster
 */
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderName, ThreadId } from "@skein/domain"
import { makeSkeinClient, makeSkeinClusterClient } from "@skein/server"
import { Effect, Exit, Scope } from "effect"
import Pg from "pg"
import { descendants } from "../agents/support.js"
import { freshDatabase, startPostgres } from "../support/postgres.js"
import { removeDir, tempDir } from "../support/runtime.js"
import { startDaemon } from "./daemon.js"
import { percentile } from "./stats.js"

const THREADS = 60
const CLIENTS = 30
/** Each configuration's time measured in all, split over the rounds. */
const WINDOW_MS = Number(process.env.SKEIN_BENCH_CLUSTER_WINDOW_MS ?? 15_000)
const ROUNDS = Number(process.env.SKEIN_BENCH_CLUSTER_ROUNDS ?? 5)
/** Each configuration's uncounted load before the rounds. */
const WARMUP_MS = Number(process.env.SKEIN_BENCH_CLUSTER_WARMUP_MS ?? 5_000)
const median = (samples: ReadonlyArray<number>) => percentile(samples, 50)
const KILLS = Number(process.env.SKEIN_BENCH_CLUSTER_KILLS ?? 5)
const LEASE_MS = 5_000
const alpha = "alpha" as ProviderName
/** Shards in the cluster's one group (`@effect/cluster`'s default). */
const SHARDS = 300

type Client = Effect.Effect.Success<ReturnType<typeof makeSkeinClient>>
type Daemon = Awaited<ReturnType<typeof startDaemon>> & {
  readonly client: Client
  readonly scope: Scope.CloseableScope
}

/** The token the daemons of every cluster here share, as a cluster's daemons do. */
const CLUSTER_TOKEN = randomBytes(32).toString("hex")

/** A daemon in a home of its own (with the cluster's token, if one of a cluster), with a typed client connected to it. */
const daemonIn = async (root: string, args: ReadonlyArray<string>): Promise<Daemon> => {
  const home = Fs.mkdtempSync(Path.join(root, "home-"))
  const clustered = args.includes("--cluster")
  const daemon = await startDaemon(home, args, clustered ? { SKEIN_TOKEN: CLUSTER_TOKEN } : {})
  const token = clustered ? CLUSTER_TOKEN : Fs.readFileSync(Path.join(home, "token"), "utf8").trim()
  const scope = Effect.runSync(Scope.make())
  const client = await Effect.runPromise(Scope.extend(makeSkeinClient({ url: daemon.url, token }), scope))
  return { ...daemon, client, scope }
}

const close = async (daemon: Daemon) => {
  await Effect.runPromise(Scope.close(daemon.scope, Exit.void))
  await daemon.stop()
}

/**
 * Waits until the cluster's shards are spread over `runners` runners: every shard's lock
 * (a session advisory lock, one session a runner) held, by that many sessions, so that
 * no thread moves while runs are counted.
 */
const spread = async (url: string, runners: number): Promise<void> => {
  const client = new Pg.Client({ connectionString: url })
  await client.connect()
  try {
    const deadline = Date.now() + 60_000
    for (;;) {
      const { rows } = await client.query<{ readonly n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY pid HAVING count(*) > 1`
      )
      if (rows.length === runners && rows.reduce((sum, row) => sum + row.n, 0) === SHARDS) return
      if (Date.now() > deadline) throw new Error(`the shards did not spread over ${runners} runners within 60 s`)
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  } finally {
    await client.end()
  }
}

/** A configuration under measure: its daemons and its threads, each placed and its agent started. */
interface Setup {
  readonly daemons: ReadonlyArray<Daemon>
  readonly threads: ReadonlyArray<ThreadId>
  /** The client that takes a client's `i`th run: a daemon's, in turn, unless one client routes them all. */
  readonly via: (client: number, i: number) => Client
}

const prepare = async (daemons: ReadonlyArray<Daemon>): Promise<Setup> => {
  const threads: Array<ThreadId> = []
  for (let i = 0; i < THREADS; i++) {
    threads.push((await Effect.runPromise(daemons[i % daemons.length]!.client.thread.create({ title: `t${i}` }))).id)
  }
  // One run on each first: every thread placed and its agent started before any window.
  await Promise.all(
    threads.map((threadId, i) =>
      Effect.runPromise(
        daemons[i % daemons.length]!.client.run.start({ threadId, provider: alpha, message: "warm", wait: true })
      )
    )
  )
  return { daemons, threads, via: (n, i) => daemons[(n + i) % daemons.length]!.client }
}

/** The same daemons and threads through one cluster client, its locations learnt first. */
const routed = async (setup: Setup, scope: Scope.Scope): Promise<Setup> => {
  const urls = setup.daemons.map((daemon) => daemon.url)
  const client = await Effect.runPromise(Scope.extend(makeSkeinClusterClient({ urls, token: CLUSTER_TOKEN }), scope))
  for (const threadId of setup.threads) await Effect.runPromise(client.urlFor(threadId))
  return { ...setup, via: () => client }
}

/** Completed runs per second: CLIENTS clients on the setup's threads, each run through the setup's `via`, over `ms`. */
const throughput = async ({ threads, via }: Setup, ms: number): Promise<number> => {
  let completed = 0
  const end = Date.now() + ms
  const started = Date.now()
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, n) => {
      for (let i = 0; Date.now() < end; i++) {
        // Each client keeps to its own two threads, so that no run waits behind another's.
        const threadId = threads[(n * 2 + (i % 2)) % threads.length]!
        const run = await Effect.runPromise(
          via(n, i).run.start({ threadId, provider: alpha, message: `m${i}`, wait: true })
        )
        if (run.status === "completed") completed++
      }
    })
  )
  return completed / ((Date.now() - started) / 1000)
}

/** Each setup's runs per second in every round, the setups measured in turn in a rotating order. */
const rounds = async (setups: ReadonlyArray<Setup>): Promise<Array<Array<number>>> => {
  for (const setup of setups) await throughput(setup, WARMUP_MS)
  const rates = setups.map((): Array<number> => [])
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < setups.length; k++) {
      const at = (r + k) % setups.length
      rates[at]!.push(await throughput(setups[at]!, WINDOW_MS / ROUNDS))
    }
  }
  return rates
}

/** Kill-to-next-accepted-run times (ms) over KILLS kills of a thread's runner, three runners kept. */
const failover = async (root: string, url: string): Promise<Array<number>> => {
  const args = ["--store", url, "--cluster", "--lease-ms", String(LEASE_MS)]
  const daemons = [await daemonIn(root, args), await daemonIn(root, args), await daemonIn(root, args)]
  const times: Array<number> = []
  try {
    for (let k = 0; k < KILLS; k++) {
      // A workspace of its own: the thread's runner starts an agent process for it, which tells the runner.
      const workspace = Fs.mkdtempSync(Path.join(root, "workspace-"))
      const thread = await Effect.runPromise(daemons[0]!.client.thread.create({ title: `failover ${k}`, workspace }))
      const before = new Map(daemons.map((d) => [d, new Set(descendants(d.pid))]))
      await Effect.runPromise(
        daemons[0]!.client.run.start({ threadId: thread.id, provider: alpha, message: "placed", wait: true })
      )
      const holder = daemons.find((d) => descendants(d.pid).some((pid) => !before.get(d)!.has(pid)))
      if (holder === undefined) throw new Error("no runner runs the thread's agent")
      const other = daemons.find((d) => d !== holder)!
      await Effect.runPromise(Scope.close(holder.scope, Exit.void))
      const killedAt = performance.now()
      await holder.kill()
      await Effect.runPromise(other.client.run.start({ threadId: thread.id, provider: alpha, message: "after" }))
      times.push(performance.now() - killedAt)
      daemons.splice(daemons.indexOf(holder), 1)
      daemons.push(await daemonIn(root, args))
    }
  } finally {
    for (const daemon of daemons) await close(daemon)
  }
  return times
}

export async function run(): Promise<void> {
  const root = Fs.realpathSync(tempDir("skein-bench-cluster-"))
  const daemons: Array<Daemon> = []
  const started = async (args: ReadonlyArray<string>) => {
    const daemon = await daemonIn(root, args)
    daemons.push(daemon)
    return daemon
  }
  try {
    const pg = await startPostgres()
    let rates: Array<Array<number>>
    const clients = Effect.runSync(Scope.make())
    try {
      const setups = [await prepare([await started([])])]
      for (const n of [1, 2, 3]) {
        // A database of its own for each cluster, so that every configuration starts alike.
        const url = await freshDatabase(pg.url)
        const cluster: Array<Daemon> = []
        for (let i = 0; i < n; i++) cluster.push(await started(["--store", url, "--cluster"]))
        await spread(url, n)
        setups.push(await prepare(cluster))
      }
      setups.push(await routed(setups[3]!, clients))
      rates = await rounds(setups)
    } finally {
      await Effect.runPromise(Scope.close(clients, Exit.void))
      for (const daemon of daemons.splice(0)) await close(daemon)
      await pg.stop()
    }
    const failoverPg = await startPostgres()
    const times = await failover(root, failoverPg.url).finally(() => failoverPg.stop())
    const [sqlite, ...perRunners] = rates.map(median) as [number, number, number, number, number]
    const labels = ["1 runner", "2 runners", "3 runners", "3 runners, cluster client"]
    /** Each round's rate of configuration `at` over 1 runner's. */
    const over1 = (at: number) => rates[at]!.map((rate, r) => rate / rates[1]![r]!)
    const ratios = over1(4)
    const ratio = median(ratios)
    const fmt = (x: number) => x.toFixed(1)
    console.log(
      `cluster: ${THREADS} threads, ${CLIENTS} clients, ${ROUNDS} rounds of ${WINDOW_MS / ROUNDS / 1000} s a configuration after ${WARMUP_MS / 1000} s uncounted, medians`
    )
    console.log(`  runs/s, one SQLite daemon alone (baseline):  ${fmt(sqlite)}`)
    for (const [i, rate] of perRunners.entries()) {
      console.log(`  runs/s, ${labels[i]} (one PostgreSQL): ${fmt(rate)} (${(rate / sqlite).toFixed(2)}x SQLite)`)
    }
    for (const [i, label] of ["SQLite", ...labels].entries()) {
      console.log(`  runs/s by round, ${label}: ${rates[i]!.map(fmt).join(" ")}`)
    }
    const inTurn = over1(3)
    console.log(
      `  3 runners / 1 runner by round, through the daemons in turn: ${inTurn.map((x) => x.toFixed(2)).join(" ")}`
    )
    console.log(`  3 runners / 1 runner, through the daemons in turn: ${median(inTurn).toFixed(2)}x`)
    console.log(`  3 runners / 1 runner by round, cluster client: ${ratios.map((x) => x.toFixed(2)).join(" ")}`)
    console.log(
      `  3 runners / 1 runner, cluster client: ${ratio.toFixed(2)}x (goal >= 0.80x: ${ratio >= 0.8 ? "met" : "MISSED"})`
    )
    const p50 = percentile(times, 50)
    console.log(
      `  failover (SIGKILL to the next accepted run, ${times.length} kills, lease ${LEASE_MS} ms): p50 ${p50.toFixed(0)} ms, ` +
        `max ${Math.max(...times).toFixed(0)} ms (goal p50 < ${LEASE_MS + 1000} ms: ${p50 < LEASE_MS + 1000 ? "met" : "MISSED"})`
    )
  } finally {
    removeDir(root)
  }
}
