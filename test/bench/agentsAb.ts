/**
 * A change to the run path judged against the code before it, in one process (no goal;
 * see docs/ARCHITECTURE.md, "Cost per turn"). The agents bench's figure moves by a
 * millisecond or more from run to run with the host, more than most changes to the run
 * path are worth; two runtimes side by side, turns alternating between them, see the
 * same host at the same moment.
 *
 * Two runtimes in this process: this checkout's, and a baseline checkout's, built
 * (`scripts/ab-baseline.sh REV DIR` makes one), each on its own copy of Effect, with a
 * database, a Codex process, a home and a workspace of its own, against one mock model
 * server. Both are warmed alike (a Codex run, then scripted runs one each in turn);
 * then Codex runs alternate between them, which goes first alternating too. Printed,
 * this checkout minus the baseline, at p50 of the paired differences with a bootstrap
 * interval, and by order: the wall time of a run (`run.start` with wait), its own path
 * (the wall time minus the turn's time at the port), and this process's CPU per run.
 *
 *   node --expose-gc test/dist/bench/agentsAb.js DIR [PAIRS]
 *
 * An A/A run (DIR built from the checkout's own revision) shows how far apart two
 * identical runtimes come out here.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import type { ProviderName, ThreadId } from "@skein/domain"
import { TurnEvents } from "@skein/adapters"
import { codexEnv, codexLauncher, requireBinaries } from "../agents/support.js"
import { removeDir, tempDir } from "../support/runtime.js"
import { startMockThread } from "./mockThread.js"
import { bootstrapInterval, percentile } from "./stats.js"

const WARM_RUNS = 3000
const DEFAULT_PAIRS = 300
const CODEX = "codex" as ProviderName
const WARMUP = "warmup" as ProviderName

type Support = typeof import("../support/runtime.js")
type RuntimeIndex = typeof import("@skein/runtime")
type EffectIndex = typeof import("effect")

/** One runtime: a checkout's modules, loaded from its own files. */
interface Side {
  /** The workspace of its Codex thread (one per side). */
  readonly workspace: string
  /** Runs one Codex run through this side (`run.start` with wait); its wall time, its turn's time at the port, this process's CPU. */
  readonly run: (threadId: ThreadId, message: string) => Promise<{ wall: number; port: number; cpu: number }>
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
        [CODEX]: { driver: "codex", command: [codexLauncher], env: codexEnv(Path.join(dir, "home"), mockUrl) },
        [WARMUP]: { driver: "scripted" }
      }
    })
  )
  let port = Number.NaN
  const timed = support.wrapTurns(
    CODEX,
    (runTurn) => (input, onEvents) =>
      E.Effect.suspend(() => {
        const t0 = performance.now()
        return runTurn(input, (events) => {
          if (events.some(TurnEvents.isTerminal)) port = performance.now() - t0
          return onEvents(events)
        })
      })
  )
  const managed = E.ManagedRuntime.make(support.runtimeLayer(dir, { configFile, mapAdapter: timed }))
  const orchestrator = await managed.runPromise(runtime.Orchestrator)
  const start = async (threadId: ThreadId, provider: ProviderName, message: string) => {
    const run = await managed.runPromise(orchestrator.startRun({ threadId, provider, message, wait: true }))
    if (run.status !== "completed") throw new Error(`${label}: a ${provider} run ended ${run.status}`)
  }
  return {
    workspace,
    run: async (threadId, message) => {
      port = Number.NaN
      const [t0, c0] = [performance.now(), process.cpuUsage()]
      await start(threadId, CODEX, message)
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
    for (const [i, side] of sides.entries()) await side.run(codexThreads[i]!, "first")
    for (let r = 0; r < WARM_RUNS; r++) for (const [i, side] of sides.entries()) await side.warm(warmThreads[i]!)

    type Sample = Awaited<ReturnType<Side["run"]>>
    const samples: Array<{ readonly candidate: Sample; readonly base: Sample }> = []
    for (let i = 0; i < pairs; i++) {
      if (i % 2 === 0) {
        const c = await candidate.run(codexThreads[0]!, `turn ${i}`)
        samples.push({ candidate: c, base: await base.run(codexThreads[1]!, `turn ${i}`) })
      } else {
        const b = await base.run(codexThreads[1]!, `turn ${i}`)
        samples.push({ candidate: await candidate.run(codexThreads[0]!, `turn ${i}`), base: b })
      }
    }

    console.log(
      `run path A/B against ${baseline} (Codex, mock model server; ${pairs} pairs of runs, alternating, after ` +
        `${WARM_RUNS.toLocaleString("en-US")} scripted runs each; this checkout minus the baseline, no goal)`
    )
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
  const count = pairs === undefined ? DEFAULT_PAIRS : Number(pairs)
  if (!Number.isInteger(count) || count < 2) {
    console.error(`PAIRS must be a whole number of at least 2, not ${pairs}`)
    process.exit(2)
  }
  await run(baseline, count)
}
