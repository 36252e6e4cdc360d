/**
 * A change to the run path judged against the code before it, in one process (no goal;
 * see docs/ARCHITECTURE.md, "Cost per turn"). The agents bench's figure moves by a
 * millisecond or more from run to run with the host, more than most changes to the run
 * path are worth; two runtimes side by side, turns alternating between them, see the
 * same host at the same moment.
 *
 * Two runtimes in this process: this checkout's, and a baseline checkout's, built
 * (`scripts/ab-baseline.sh REV DIR` makes one), each on its own copy of Effect, with a
 * database, its Codex processes, homes and workspace of its own, against one mock model
 * server. Both are warmed alike (a Codex run, then scripted runs one each in turn);
 * then Codex runs alternate between them, which goes first alternating too, over
 * ROUNDS rounds: each round gives each side a fresh Codex process (a provider instance
 * and a home of its own) and a new thread on it, started in alternating order. Two
 * processes of the binary run the same turns some milliseconds apart for as long as
 * they live, whoever drives them: with one process a side, a change that did nothing
 * read as 6.46 ms of wall time one way round and 0.00 the other. Printed,
 * this checkout minus the baseline, at p50 of the paired differences with a bootstrap
 * interval, and by order: the wall time of a run (`run.start` with wait), its own path
 * (the wall time minus the turn's time at the port), and this process's CPU per run.
 *
 *   node --expose-gc test/dist/bench/agentsAb.js DIR [PAIRS]   (SKEIN_BENCH_AB_ROUNDS: the rounds, default 4)
 *
 * An A/A run (DIR built from the checkout's own revision) shows how far apart two
 * identical runtimes come out here.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import type { ProviderAdapter, ProviderName, ThreadId } from "@skein/domain"
import { TurnEvents } from "@skein/adapters"
import { codexEnv, codexLauncher, requireBinaries } from "../agents/support.js"
import { removeDir, tempDir } from "../support/runtime.js"
import { startMockThread } from "./mockThread.js"
import { bootstrapInterval, percentile } from "./stats.js"

const WARM_RUNS = 3000
const DEFAULT_PAIRS = 300
/** Fresh pairs of Codex processes the pairs are split over (see above). */
const ROUNDS = Number(process.env.SKEIN_BENCH_AB_ROUNDS ?? 4)
/** Pairs run, and not counted, on each round's fresh processes first. */
const ROUND_WARMUP = 5
/** The Codex instance of round `r` (each a process and a home of its own). */
const codexOf = (r: number) => (r === 0 ? "codex" : `codex-${r + 1}`) as ProviderName
const WARMUP = "warmup" as ProviderName

type Support = typeof import("../support/runtime.js")
type RuntimeIndex = typeof import("@skein/runtime")
type EffectIndex = typeof import("effect")

/** One runtime: a checkout's modules, loaded from its own files. */
interface Side {
  /** The workspace of its Codex thread (one per side). */
  readonly workspace: string
  /** Runs one Codex run on round `round`'s instance (`run.start` with wait); its wall time, its turn's time at the port, this process's CPU. */
  readonly run: (
    threadId: ThreadId,
    round: number,
    message: string
  ) => Promise<{ wall: number; port: number; cpu: number }>
  readonly warm: (threadId: ThreadId) => Promise<void>
  readonly createThread: (workspace?: string) => Promise<ThreadId>
  readonly close: () => Promise<void>
}

const openSide = async (label: string, root: string | null, dir: string, mockUrl: string): Promise<Side> => {
  // This checkout's modules as this file imports them; the baseline's from its own files,
  // with its own node_modules (so its own Effect).
  const load = <A>(relative: string, own: () => Promise<A>): Promise<A> =>
    root === null ? own() : (import(pathToFileURL(Path.join(root, relative)).href) as Promise<A>)
  const support = await load<Support>("test/dist/support/runtime.js", () => import("../support/runtime.js"))
  const runtime = await load<RuntimeIndex>("packages/runtime/dist/src/index.js", () => import("@skein/runtime"))
  const E = await load<EffectIndex>("node_modules/effect/dist/esm/index.js", () => import("effect"))

  const workspace = Path.join(dir, "workspace")
  Fs.mkdirSync(workspace, { recursive: true })
  const configFile = Path.join(dir, "providers.json")
  Fs.writeFileSync(
    configFile,
    JSON.stringify({
      providers: {
        ...Object.fromEntries(
          Array.from({ length: ROUNDS }, (_, r) => [
            codexOf(r),
            { driver: "codex", command: [codexLauncher], env: codexEnv(Path.join(dir, `home-${r}`), mockUrl) }
          ])
        ),
        [WARMUP]: { driver: "scripted" }
      }
    })
  )
  let port = Number.NaN
  type RunTurn = Parameters<Parameters<Support["wrapTurns"]>[1]>[0]
  const timeTurns =
    (runTurn: RunTurn): RunTurn =>
    (input, onEvents) =>
      E.Effect.suspend(() => {
        const t0 = performance.now()
        return runTurn(input, (events) => {
          if (events.some(TurnEvents.isTerminal)) port = performance.now() - t0
          return onEvents(events)
        })
      })
  const codexInstances = new Set<string>(Array.from({ length: ROUNDS }, (_, r) => codexOf(r)))
  const timed = (adapter: ProviderAdapter) =>
    codexInstances.has(adapter.name) ? support.wrapTurns(adapter.name, timeTurns)(adapter) : adapter
  const managed = E.ManagedRuntime.make(support.runtimeLayer(dir, { configFile, mapAdapter: timed }))
  const orchestrator = await managed.runPromise(runtime.Orchestrator)
  const start = async (threadId: ThreadId, provider: ProviderName, message: string) => {
    const run = await managed.runPromise(orchestrator.startRun({ threadId, provider, message, wait: true }))
    if (run.status !== "completed") throw new Error(`${label}: a ${provider} run ended ${run.status}`)
  }
  return {
    workspace,
    run: async (threadId, round, message) => {
      port = Number.NaN
      const [t0, c0] = [performance.now(), process.cpuUsage()]
      await start(threadId, codexOf(round), message)
      const wall = performance.now() - t0
      const used = process.cpuUsage(c0)
      return { wall, port, cpu: (used.user + used.system) / 1000 }
    },
    warm: (threadId) => start(threadId, WARMUP, "warm"),
    createThread: async (workspace) =>
      (await managed.runPromise(orchestrator.createThread(workspace === undefined ? {} : { workspace }))).id,
    close: () => managed.dispose()
  }
}

const fmt = (ms: number) => `${ms.toFixed(2)} ms`
const median = (values: ReadonlyArray<number>) => percentile(values, 50)

export const run = async (baseline: string, pairs: number) => {
  requireBinaries()
  for (const needed of ["test/dist/support/runtime.js", "packages/runtime/dist/src/index.js"]) {
    if (!Fs.existsSync(Path.join(baseline, needed))) {
      throw new Error(`${baseline} has no ${needed}: build it with scripts/ab-baseline.sh REV ${baseline}`)
    }
  }
  const dir = Fs.realpathSync(tempDir("skein-bench-ab-"))
  const mock = await startMockThread("codex")
  const sides: Array<Side> = []
  try {
    sides.push(await openSide("this checkout", null, Path.join(dir, "candidate"), mock.url))
    sides.push(await openSide("baseline", Fs.realpathSync(baseline), Path.join(dir, "baseline"), mock.url))
    const [candidate, base] = sides as [Side, Side]
    const codexThreads = await Promise.all(sides.map((side) => side.createThread(side.workspace)))
    const warmThreads = await Promise.all(sides.map((side) => side.createThread()))
    for (const [i, side] of sides.entries()) await side.run(codexThreads[i]!, 0, "first")
    for (let r = 0; r < WARM_RUNS; r++) for (const [i, side] of sides.entries()) await side.warm(warmThreads[i]!)

    type Sample = Awaited<ReturnType<Side["run"]>>
    const samples: Array<{ readonly candidate: Sample; readonly base: Sample }> = []
    /** Pairs of runs on round `round`'s processes, alternating which side goes first. */
    const alternate = async (round: number, count: number, into: Array<{ candidate: Sample; base: Sample }>) => {
      for (let i = 0; i < count; i++) {
        if (i % 2 === 0) {
          const c = await candidate.run(codexThreads[0]!, round, `turn ${i}`)
          into.push({ candidate: c, base: await base.run(codexThreads[1]!, round, `turn ${i}`) })
        } else {
          const b = await base.run(codexThreads[1]!, round, `turn ${i}`)
          into.push({ candidate: await candidate.run(codexThreads[0]!, round, `turn ${i}`), base: b })
        }
      }
    }
    /** Each round's share, even (so that each side goes first equally often). */
    const perRound = 2 * Math.ceil(pairs / ROUNDS / 2)
    const roundWalls: Array<number> = []
    for (let r = 0; r < ROUNDS; r++) {
      if (r > 0) {
        // Fresh processes for both sides (a new thread on the round's instance), started in alternating order.
        const order = r % 2 === 0 ? [0, 1] : [1, 0]
        for (const i of order) {
          codexThreads[i] = await sides[i]!.createThread(sides[i]!.workspace)
          await sides[i]!.run(codexThreads[i]!, r, "first")
        }
        await alternate(r, ROUND_WARMUP * 2, [])
      }
      const from = samples.length
      await alternate(r, perRound, samples)
      roundWalls.push(median(samples.slice(from).map((s) => s.candidate.wall - s.base.wall)))
    }

    console.log(
      `run path A/B against ${baseline} (Codex, mock model server; ${samples.length} pairs of runs, alternating, ` +
        `on ${ROUNDS} pairs of Codex processes, after ${WARM_RUNS.toLocaleString("en-US")} scripted runs each; ` +
        `this checkout minus the baseline, no goal)`
    )
    console.log(`wall time by pair of processes (p50 of the paired differences): ${roundWalls.map(fmt).join(", ")}`)
    const measures: ReadonlyArray<readonly [string, (s: Sample) => number]> = [
      ["wall time of a run", (s) => s.wall],
      ["own path (wall minus the turn at the port)", (s) => s.wall - s.port],
      ["this process's CPU per run (all threads)", (s) => s.cpu]
    ]
    for (const [name, of] of measures) {
      const differences = samples.map((s) => of(s.candidate) - of(s.base))
      const [low, high] = bootstrapInterval(differences, median)
      const byOrder = (first: 0 | 1) => median(differences.filter((_, i) => i % 2 === first))
      console.log(
        `${name}: this checkout p50 ${fmt(median(samples.map((s) => of(s.candidate))))}, baseline ` +
          `${fmt(median(samples.map((s) => of(s.base))))}; paired difference p50 ${fmt(median(differences))} ` +
          `(95% bootstrap interval ${low.toFixed(2)}-${high.toFixed(2)} ms; this checkout first ${fmt(byOrder(0))}, ` +
          `baseline first ${fmt(byOrder(1))})`
      )
    }
  } finally {
    for (const side of sides) await side.close()
    await mock.close()
    removeDir(dir)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [baseline, pairs] = process.argv.slice(2)
  if (baseline === undefined) {
    console.error("usage: node --expose-gc test/dist/bench/agentsAb.js BASELINE_DIR [PAIRS]")
    process.exit(2)
  }
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
    console.error(
      `SKEIN_BENCH_AB_ROUNDS must be a whole number of at least 1, not ${process.env.SKEIN_BENCH_AB_ROUNDS}`
    )
    process.exit(2)
  }
  const count = pairs === undefined ? DEFAULT_PAIRS : Number(pairs)
  if (!Number.isInteger(count) || count < 2) {
    console.error(`PAIRS must be a whole number of at least 2, not ${pairs}`)
    process.exit(2)
  }
  await run(baseline, count)
}
