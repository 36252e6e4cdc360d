/**
 * Real agents (the pinned Codex and Claude Code binaries, offline against the mock
 * model servers of test/agents), two figures each, both against the binary driven
 * directly over its own protocol in the same process, interleaved:
 * - Skein's added latency per turn: a run through Skein (the Orchestrator, SQLite, the
 *   driver; `run.start` with wait) minus the same turn sent straight to a warm process
 *   of the binary (Codex: `turn/start` until `turn/completed`; Claude Code: a user line
 *   until its `result`). Goal: under 3 ms at p50. Measured in two rounds: the first 80
 *   turns after start, and 600 more after 3,000 scripted runs have brought the
 *   run path to where a long-running Skein has it (the goal's round, on four fresh
 *   pairs of processes of the binary, 150 turns each); then, with no
 *   goal, 40 turns with a pause after each, as a user's turns come.
 * - Start-up of a provider session, from spawn until the first turn is accepted
 *   (Codex: the `turn/start` reply; Claude Code: the user line written after the
 *   `initialize` answer), through the driver against the binary alone. Goal: at most 1.1x.
 * The mock model server runs on a thread of its own (mockThread.ts), as a real one runs
 * elsewhere: on this process's event loop its replies would queue behind Skein's work.
 * The binary alone and the binary under Skein each have a home of their own (see
 * benchOne), as one user's agent does: sharing one, each process would work on the
 * other's writes to its databases.
 * Beside the goal's figure (no goal): how long this process's main thread was busy while
 * the binary worked on the turn, through Skein and alone; this process's CPU per turn;
 * the binary's own CPU per turn (from /proc); and a calibration of what a millisecond
 * of this process's CPU costs a turn of the binary alone, as the processes run and then
 * with the binary's threads and this process's on CPUs of their own: on two cores this
 * process's CPU can lengthen the binary's turn, which the added latency then counts.
 * Also the run's own path (wall time minus the turn at the port), Skein's part of the
 * figure without the binary's spread.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ProviderAdapter, ProviderName } from "@skein/domain"
import { makeId, ProviderRegistry } from "@skein/domain"
import { providerRegistryLayer, TurnEvents } from "@skein/adapters"
import { Effect, Exit, Scope } from "effect"
import { removeDir, tempDir, withRuntime, wrapTurns } from "../support/runtime.js"
import { startMockThread, type MockThread } from "./mockThread.js"
import { claudeEnv, claudePlaceholder, codexEnv, codexLauncher, requireBinaries } from "../agents/support.js"
import { direct, type Kind } from "./binaryAlone.js"
import { bootstrapInterval, percentile } from "./stats.js"

/**
 * Turns of each kind in the first round. The binary's own turns spread over some
 * 10-18 ms (p10-p90), so the p50 of 80 paired differences moves by about a millisecond
 * from one run to the next on the same code.
 */
const TURNS = Number(process.env.SKEIN_BENCH_AGENT_TURNS ?? 80)
/**
 * Turns of each kind in the goal's round. The p50 of paired differences moves with the
 * binary's own spread: over 240 pairs its 95% bootstrap interval is some 2 ms wide,
 * enough to flip the verdict on the same code; 600 narrow it by about 1.6 times.
 */
const SETTLED_TURNS = Number(process.env.SKEIN_BENCH_AGENT_SETTLED_TURNS ?? 600)
/**
 * The goal's round runs on this many pairs of processes of the binary, one alone and one
 * under Skein, each pair started fresh (which of the two starts first alternating from
 * pair to pair), its turns split evenly among them. Two processes of the same binary run
 * the same turns at speeds a few milliseconds apart, for as long as they live, whichever
 * side drives them: one pair of processes for all the turns would put that difference,
 * either sign, into the figure whole. Over several pairs it averages out.
 */
const ROUNDS = Number(process.env.SKEIN_BENCH_AGENT_ROUNDS ?? 4)
/** Pairs of turns run, and not counted, on each fresh pair of processes before its round's. */
const ROUND_WARMUP = 10
/**
 * Start-ups of each kind. A start-up spreads widely (Claude Code's alone over some
 * 250-410 ms), so the ratio of medians of a dozen moves by up to 10% on the same code,
 * as far as the goal's margin; 24 narrow that by about 1.4 times.
 */
const STARTS = Number(process.env.SKEIN_BENCH_AGENT_STARTS ?? 24)
/**
 * Scripted runs between the two rounds of turns. V8 compiles the run path a function at
 * a time as each gets hot, some only after thousands of runs, on background threads that
 * take a core from the binary meanwhile (see actors.ts).
 */
const WARM_RUNS = 3000
/**
 * A last round, no goal: turns with a pause after each, as a user's come (seconds apart
 * in real use; 40 ms here), where Skein's run path runs on cold caches (see actors.ts,
 * dispatch after a pause).
 */
const PACED_TURNS = 40
const PAUSE_MS = 40
/**
 * A calibration, no goal: pairs of turns of the binary alone, one of each pair with this
 * process kept busy for CALIBRATION_BUSY_MS once the turn is accepted. How much longer
 * those turns take says what a millisecond of this process's CPU costs a turn of the
 * binary on this machine at this hour: on two cores, Skein's own CPU per turn shows in
 * its added latency as far as the scheduler puts the binary's threads where this
 * process runs (see the pinned calibration below).
 */
const CALIBRATION_TURNS = Number(process.env.SKEIN_BENCH_AGENT_CALIBRATION_TURNS ?? 300)
/**
 * About as much CPU as Skein spends on a turn, and more than the width of the p50's
 * interval over 300 pairs (some 2-3 ms: the binary's turns spread over 20-30 ms), which
 * does not grow with the spin.
 */
const CALIBRATION_BUSY_MS = 4
/**
 * The calibration again with the binary's threads on one CPU and this process's on the
 * other (no goal): whether the binary's turn loses this process's CPU for want of cores
 * or because the scheduler puts its threads where this process runs. The two differ by
 * most of the spin, which shows in fewer pairs than the calibration's own.
 */
const PINNED_CALIBRATION_TURNS = Number(process.env.SKEIN_BENCH_AGENT_PINNED_CALIBRATION_TURNS ?? 120)
const WARM_PROVIDER = "warmup" as ProviderName
/** Which binaries to measure (`SKEIN_BENCH_AGENT_KINDS=codex`: one, in half the time). */
const KINDS = (process.env.SKEIN_BENCH_AGENT_KINDS ?? "codex,claude").split(",").map((kind) => {
  if (kind !== "codex" && kind !== "claude") throw new Error(`SKEIN_BENCH_AGENT_KINDS: no binary called ${kind}`)
  return kind as Kind
})

/** One round of alternating turns: wall and CPU milliseconds per turn, and the time at the port. */
interface Phase {
  readonly raw: Array<number>
  readonly skein: Array<number>
  /** CPU milliseconds this process spent per turn (all its threads, the mock model's included). */
  readonly rawCpu: Array<number>
  readonly skeinCpu: Array<number>
  /** Per run: how long the turn took at the port (from runTurn's start to its end event reaching the runtime). */
  readonly port: Array<number>
  /**
   * Milliseconds this process's main thread was busy while the binary worked on the turn
   * (event-loop utilisation): through Skein, over the turn at the port; alone, over the
   * direct client's turn.
   */
  readonly skeinBusy: Array<number>
  readonly rawBusy: Array<number>
}
const emptyPhase = (): Phase => ({ raw: [], skein: [], rawCpu: [], skeinCpu: [], port: [], skeinBusy: [], rawBusy: [] })

/** Through the driver: openSession, startThread, runTurn until TurnStarted. */
const throughDriver = async (adapter: ProviderAdapter, cwd: string) => {
  const scope = await Effect.runPromise(Scope.make())
  const t0 = performance.now()
  let startup = 0
  await Effect.runPromise(
    Effect.gen(function* () {
      const session = yield* adapter.openSession({ workspace: cwd }).pipe(Scope.extend(scope))
      const native = yield* session.startThread({ workspace: cwd, model: null })
      yield* session.runTurn(
        {
          nativeRef: native.nativeRef,
          runId: makeId.run(),
          message: "first turn",
          handoff: null,
          model: null,
          workspace: cwd
        },
        (events) =>
          Effect.sync(() => {
            if (startup === 0 && events.some((event) => event._tag === "TurnStarted")) startup = performance.now() - t0
          })
      )
    })
  )
  await Effect.runPromise(Scope.close(scope, Exit.void))
  return startup
}

/**
 * CPU milliseconds a process has used so far, all its threads (Linux: utime + stime in
 * /proc, in clock ticks of 10 ms, USER_HZ being 100); null where there is no /proc.
 */
const processCpuMs = (pid: number | undefined): number | null => {
  if (pid === undefined) return null
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return null
  }
}

/**
 * Puts every thread of process `pid` on the CPUs `cpus` (taskset's list, e.g. `0` or
 * `0-1`); threads it starts later inherit that. False where taskset is missing or refuses.
 */
const pinThreads = (pid: number, cpus: string): boolean => {
  try {
    execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

const median = (samples: ReadonlyArray<number>) => percentile(samples, 50)
const fmt = (ms: number) => `${ms.toFixed(2)} ms`
const verdict = (met: boolean, by: string) => (met ? "met" : `missed ${by}`)

const benchOne = async (kind: Kind, mock: MockThread, dir: string) => {
  // Each side has a home of its own (HOME, and CODEX_HOME or CLAUDE_CONFIG_DIR in it), as
  // the one agent a user runs under Skein has. Codex keeps its state, logs and thread
  // history in SQLite databases in its home and watches parts of it: two processes
  // sharing one home work on each other's writes, and the one started second (Skein's)
  // would spend milliseconds more CPU per turn than the other for that alone.
  const homeOf = (side: string) => {
    const home = Path.join(dir, side)
    return kind === "codex" ? codexEnv(home, mock.url) : claudeEnv(home, mock.url)
  }
  /** The instance under Skein for round `r` of the goal's (each a process, and a home, of its own). */
  const instanceOf = (r: number) => (r === 0 ? kind : `${kind}-${r + 1}`) as ProviderName
  const instances = Array.from({ length: Math.max(1, ROUNDS) }, (_, r) => instanceOf(r))
  // The agent's workspace is not Skein's data directory, as in use (~/.skein against a
  // project): Codex watches its working directory, and every commit writes there.
  const workspace = Path.join(dir, "workspace")
  Fs.mkdirSync(workspace)
  const configFile = Path.join(dir, `${kind}.json`)
  Fs.writeFileSync(
    configFile,
    JSON.stringify({
      providers: {
        ...Object.fromEntries(
          instances.map((name, r) => [
            name,
            {
              driver: kind,
              command: [kind === "codex" ? codexLauncher : claudePlaceholder],
              env: homeOf(`through-skein-${r}`)
            }
          ])
        ),
        [WARM_PROVIDER]: { driver: "scripted" }
      }
    })
  )
  const registry = await Effect.runPromise(
    Effect.provide(ProviderRegistry, providerRegistryLayer({ configFile, dataDir: dir }))
  )
  const adapter = registry.adapters.find((a) => a.name === kind)!
  const binary = (await Effect.runPromise(adapter.probe!)).path!
  const rawEnvOf = (r: number) => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", ...homeOf(`alone-${r}`) })
  const rawEnv = rawEnvOf(0)

  // Start-up, interleaved: the binary alone, then through the driver, STARTS times.
  const alone: Array<number> = []
  const driven: Array<number> = []
  for (let i = 0; i < STARTS; i++) {
    const measureAlone = async () => {
      const d = await direct(kind, binary, rawEnv, workspace)
      alone.push(d.startup)
      await d.stop()
    }
    const measureDriven = async () => void driven.push(await throughDriver(adapter, workspace))
    if (i % 2 === 0) {
      await measureAlone()
      await measureDriven()
    } else {
      await measureDriven()
      await measureAlone()
    }
  }

  // Turns: a warm raw process and a warm Skein thread, alternating turn by turn; twice,
  // once just after start and once after Skein's run path has run WARM_RUNS times.
  let raw = await direct(kind, binary, rawEnv, workspace)
  /** Every process of the binary alone started for the rounds; all are stopped at the end, as Skein's idle ones live on. */
  const raws = [raw]
  const early = emptyPhase()
  const settled = emptyPhase()
  const paced = emptyPhase()
  let phase: Phase | null = null
  /** CPU milliseconds the binary alone used over the goal's round (its process, all threads). */
  let binaryCpu: number | null = null
  /** The goal's figure on each pair of processes alone. */
  const roundMedians: Array<number> = []
  const cpuSince = (start: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(start)
    return (used.user + used.system) / 1000
  }
  const timed = (adapter: ProviderAdapter) =>
    instances.includes(adapter.name) ? timeTurns(adapter.name)(adapter) : adapter
  const timeTurns = (name: string) =>
    wrapTurns(
      name,
      (runTurn) => (input, onEvents) =>
        Effect.suspend(() => {
          const [t0, loop0, into] = [performance.now(), performance.eventLoopUtilization(), phase]
          // Until the turn's end event reaches the runtime (which records the run's end from
          // it, while the call still unwinds).
          return runTurn(input, (events) => {
            if (events.some(TurnEvents.isTerminal)) {
              into?.port.push(performance.now() - t0)
              into?.skeinBusy.push(performance.eventLoopUtilization(loop0).active)
            }
            return onEvents(events)
          })
        })
    )
  await withRuntime(
    dir,
    (o) =>
      Effect.gen(function* () {
        let thread = yield* o.createThread({ workspace })
        let provider = instanceOf(0)
        yield* o.startRun({ threadId: thread.id, provider, message: "warm up", wait: true })
        const rawTurn = (into: Phase, i: number) =>
          Effect.promise(async () => {
            const [r0, c0, loop0] = [performance.now(), process.cpuUsage(), performance.eventLoopUtilization()]
            await raw.turn(`turn ${i}`)
            into.raw.push(performance.now() - r0)
            into.rawBusy.push(performance.eventLoopUtilization(loop0).active)
            into.rawCpu.push(cpuSince(c0))
          })
        const skeinTurn = (into: Phase, i: number) =>
          Effect.gen(function* () {
            const [s0, c0] = [performance.now(), process.cpuUsage()]
            const run = yield* o.startRun({ threadId: thread.id, provider, message: `turn ${i}`, wait: true })
            into.skein.push(performance.now() - s0)
            into.skeinCpu.push(cpuSince(c0))
            if (run.status !== "completed") throw new Error(`run ${i} ended ${run.status}`)
          })
        // Alternating which goes first, so that neither always follows the other's work.
        const alternate = (into: Phase, turns = TURNS, pauseMs = 0) =>
          Effect.gen(function* () {
            phase = into
            const pause = pauseMs > 0 ? Effect.sleep(pauseMs) : Effect.void
            for (let i = 0; i < turns; i++) {
              if (i % 2 === 0) {
                yield* rawTurn(into, i).pipe(Effect.zipRight(pause))
                yield* skeinTurn(into, i).pipe(Effect.zipRight(pause))
              } else {
                yield* skeinTurn(into, i).pipe(Effect.zipRight(pause))
                yield* rawTurn(into, i).pipe(Effect.zipRight(pause))
              }
            }
            phase = null
          })
        yield* alternate(early)
        // The run path (actor, planner, store, followers) is the same for every provider:
        // runs of the scripted one bring it to where a long-running Skein has it.
        const warm = yield* o.createThread({})
        for (let i = 0; i < WARM_RUNS; i++) {
          yield* o.startRun({ threadId: warm.id, provider: WARM_PROVIDER, message: "warm", wait: true })
        }
        // The goal's round, on ROUNDS pairs of processes: the first pair is the one above.
        const perRound = 2 * Math.ceil(SETTLED_TURNS / Math.max(1, ROUNDS) / 2)
        binaryCpu = 0
        for (let r = 0; r < Math.max(1, ROUNDS); r++) {
          if (r > 0) {
            const startSkein = Effect.gen(function* () {
              thread = yield* o.createThread({ workspace })
              provider = instanceOf(r)
              yield* o.startRun({ threadId: thread.id, provider, message: "warm up", wait: true })
            })
            const startRaw = Effect.promise(async () => {
              raw = await direct(kind, binary, rawEnvOf(r), workspace)
              raws.push(raw)
            })
            yield* r % 2 === 0 ? Effect.zipRight(startRaw, startSkein) : Effect.zipRight(startSkein, startRaw)
            yield* alternate(emptyPhase(), ROUND_WARMUP)
          }
          const cpu0 = processCpuMs(raw.pid)
          const from = settled.skein.length
          yield* alternate(settled, perRound)
          const cpu1 = processCpuMs(raw.pid)
          binaryCpu = cpu0 === null || cpu1 === null || binaryCpu === null ? null : binaryCpu + cpu1 - cpu0
          roundMedians.push(median(settled.skein.slice(from).map((s, i) => s - settled.raw[from + i]!)))
        }
        yield* alternate(paced, PACED_TURNS, PAUSE_MS)
      }),
    { configFile, mapAdapter: timed }
  )
  // With Skein's runtime closed: the binary alone, with and without this process busy.
  /** Pairs of turns of the binary alone, one of each with this process busy: how much longer that one took. */
  const calibrate = async (pairs: number, label: string) => {
    const differences: Array<number> = []
    for (let i = 0; i < pairs; i++) {
      const timedTurn = async (busyMs: number) => {
        const t0 = performance.now()
        await raw.turn(`${label} ${i}`, busyMs)
        return performance.now() - t0
      }
      // Alternating which goes first, as in the rounds above.
      let loaded: number
      let plain: number
      if (i % 2 === 0) {
        loaded = await timedTurn(CALIBRATION_BUSY_MS)
        plain = await timedTurn(0)
      } else {
        plain = await timedTurn(0)
        loaded = await timedTurn(CALIBRATION_BUSY_MS)
      }
      differences.push(loaded - plain)
    }
    return differences
  }
  const calibration = await calibrate(CALIBRATION_TURNS, "calibration")
  // The same with the binary on a core of its own and this process on the other, where
  // taskset can place them.
  const cores = Os.cpus().length
  let pinned: Array<number> | null = null
  if (cores >= 2 && raw.pid !== undefined && pinThreads(process.pid, "1")) {
    try {
      if (pinThreads(raw.pid, "0")) pinned = await calibrate(PINNED_CALIBRATION_TURNS, "pinned calibration")
    } finally {
      // Back on every CPU, for the next binary's round.
      pinThreads(process.pid, `0-${cores - 1}`)
    }
  }
  for (const alone of raws) await alone.stop()

  const paired = (p: Phase) => p.skein.map((s, i) => s - p.raw[i]!)
  // Even turns ran the binary alone first, odd ones Skein first: the process that ran the
  // previous turn is still finishing it (Codex writes its rollout after turn/completed) and
  // takes CPU from whichever turn comes next on these two cores.
  const byOrder = (p: Phase, first: 0 | 1) => median(paired(p).filter((_, i) => i % 2 === first))
  const orderMean = (p: Phase) => (byOrder(p, 0) + byOrder(p, 1)) / 2
  const cpu = (p: Phase) =>
    `CPU of this process per turn (all threads, the mock model's included): through Skein ${fmt(median(p.skeinCpu))}, ` +
    `binary alone ${fmt(median(p.rawCpu))}`
  console.log(
    `${kind}: the first ${TURNS} turns after start: Skein adds ${fmt(median(paired(early)))} per turn at p50 of the ` +
      `paired differences (by order, mean ${fmt(orderMean(early))}); ${cpu(early)} (no goal: V8 is still compiling the run path)`
  )
  const p = settled
  const own = p.skein.map((s, i) => s - p.port[i]!)
  console.log(
    `${kind}: after ${WARM_RUNS.toLocaleString("en-US")} more runs, a turn through Skein p50 ${fmt(median(p.skein))} ` +
      `(p90 ${fmt(percentile(p.skein, 90))}), the binary alone p50 ${fmt(median(p.raw))} (p90 ${fmt(percentile(p.raw, 90))}), ` +
      `${p.raw.length} turns each, alternating, on ${roundMedians.length} pairs of processes`
  )
  const [low, high] = bootstrapInterval(paired(p), median)
  console.log(
    `${kind}: Skein adds ${fmt(median(paired(p)))} per turn at p50 of the paired differences (95% bootstrap interval ${low.toFixed(2)}-${high.toFixed(2)} ms; goal < 3 ms: ${verdict(median(paired(p)) < 3, `by ${fmt(median(paired(p)) - 3)}`)}; ` +
      `the binary's own turn-to-turn spread is ${fmt(percentile(p.raw, 90) - percentile(p.raw, 10))} p10-p90); ` +
      `run wall time minus the turn's time at the port: p50 ${fmt(median(own))}, p90 ${fmt(percentile(own, 90))}`
  )
  console.log(
    `${kind}: the same on each pair of processes (${p.raw.length / roundMedians.length} pairs of turns each): ` +
      roundMedians.map(fmt).join(", ")
  )
  // The rest of the gap is inside the turn. Beside it, what this process spends on CPU
  // meanwhile (driver, store, V8's compiler and collector, the mock): CPU the binary
  // would otherwise have had on these two cores.
  console.log(
    `${kind}: the turn at the port minus the binary alone: p50 ${fmt(median(p.port.map((t, i) => t - p.raw[i]!)))}; ${cpu(p)}; ` +
      `this process's main thread busy while the binary works: through Skein ${fmt(median(p.skeinBusy))}, ` +
      `alone ${fmt(median(p.rawBusy))} (p50)`
  )
  console.log(
    `${kind}: this process's CPU per turn (all threads), through Skein minus the binary alone: p50 of the paired differences ` +
      `${fmt(median(p.skeinCpu.map((c, i) => c - p.rawCpu[i]!)))}`
  )
  if (binaryCpu !== null) {
    // How much of the machine the binary itself takes. What it does after a turn's end
    // falls in the next turn, its own or Skein's, so "over its turns" is an upper bound.
    const turnsWall = p.raw.reduce((sum, ms) => sum + ms, 0)
    console.log(
      `${kind}: the binary alone used ${fmt(binaryCpu / p.raw.length)} of CPU per turn (its process, all threads), ` +
        `${(binaryCpu / turnsWall).toFixed(2)} cores on average over its turns, of ${Os.availableParallelism()} here`
    )
  }
  console.log(
    `${kind}: the paired difference by order: after a turn of the binary alone ${fmt(byOrder(p, 0))}, ` +
      `after a turn through Skein ${fmt(byOrder(p, 1))} (their mean ${fmt(orderMean(p))})`
  )
  console.log(
    `${kind}: turns ${PAUSE_MS} ms apart (${PACED_TURNS} each, alternating; no goal): Skein adds ${fmt(median(paired(paced)))} per turn ` +
      `at p50 of the paired differences (by order, mean ${fmt(orderMean(paced))}); run wall time minus the turn's time at the port: ` +
      `p50 ${fmt(median(paced.skein.map((s, i) => s - paced.port[i]!)))}`
  )
  /** How much longer the busy turns took, at p50 with its interval, and per ms of the spin. */
  const lengthened = (differences: ReadonlyArray<number>) => {
    const [low, high] = bootstrapInterval(differences, median)
    return (
      `the turn ${fmt(median(differences))} longer at p50 (95% bootstrap interval ${low.toFixed(2)}-${high.toFixed(2)} ms): ` +
      `${(median(differences) / CALIBRATION_BUSY_MS).toFixed(2)} ms of turn per ms of this process's CPU`
    )
  }
  console.log(
    `${kind}: calibration (${CALIBRATION_TURNS} pairs of turns of the binary alone; no goal): this process busy ${fmt(CALIBRATION_BUSY_MS)} ` +
      `once the turn is accepted makes ${lengthened(calibration)}`
  )
  if (pinned !== null) {
    console.log(
      `${kind}: the same with the binary's threads on CPU 0 and this process's on CPU 1 (taskset; ${PINNED_CALIBRATION_TURNS} pairs; no goal): ` +
        lengthened(pinned)
    )
  } else {
    console.log(
      `${kind}: the calibration with the binary on a CPU of its own: not measured (it needs two CPUs and taskset)`
    )
  }
  const ratio = median(driven) / median(alone)
  // Start-ups were measured in pairs (one of each, alternating which went first): resampled as pairs.
  const [ratioLow, ratioHigh] = bootstrapInterval(
    driven.map((_, i) => i),
    (pairs) => median(pairs.map((i) => driven[i]!)) / median(pairs.map((i) => alone[i]!))
  )
  console.log(
    `${kind}: start-up to the first turn accepted: through Skein ${fmt(median(driven))}, binary alone ${fmt(median(alone))}, ` +
      `ratio ${ratio.toFixed(3)}x (95% bootstrap interval ${ratioLow.toFixed(3)}-${ratioHigh.toFixed(3)}x; goal <= 1.1x: ${verdict(ratio <= 1.1, `by ${(ratio - 1.1).toFixed(3)}x`)}; medians of ${STARTS})`
  )
}

export const run = async () => {
  requireBinaries()
  console.log("real agents: Skein's cost over driving each binary directly (mock model servers, offline)")
  for (const kind of KINDS) {
    const dir = Fs.realpathSync(tempDir(`skein-bench-${kind}-`))
    const mock = await startMockThread(kind)
    try {
      await benchOne(kind, mock, dir)
    } finally {
      await mock.close()
      removeDir(dir)
    }
  }
}
