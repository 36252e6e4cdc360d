/**
 * An agent's added latency per turn side by side: the pinned binary (Codex or Claude
 * Code, offline against the mock model server on a thread of its own, mockThread.ts)
 * driven three ways in turn: alone over its own protocol by the bench's client
 * (binaryAlone.ts), under the baseline's runtime and under this checkout's (`run.start`
 * with wait, through the Orchestrator).
 *
 * Each turn's binary time is taken at the pipes (pipeTimes.ts): from the write of the
 * line that starts the turn to the arrival of the line that ends it. A run's wall time
 * less that is its driver's time outside the binary's turn; a side's added latency is
 * the p50 over turns of that, less the bench client's own next to it. Taken this way,
 * the binary's own spread (a Claude Code turn's p10-p90 is wider than the whole figure)
 * stays out of it.
 *
 * Beside the figure: its two parts, the start (the command to the turn's line written)
 * and the end (the turn's last line read to the answer), with the adapter's share of the
 * start (from the turn at the provider port); the binary's turn at the pipes under each
 * driver (whether a side slows the binary down while it works); the figure read as each
 * run's wall time less the binary alone next to it (with its wide interval); and each
 * side's own path (the run's wall time minus the turn's time at the provider port).
 *
 * Two processes of the binary run the same turns some milliseconds apart for as long as
 * they live, whoever drives them; so the turns are split over ROUNDS rounds, each on
 * fresh processes for all three (each with a home of its own, as one user's agent has),
 * started in a rotating order. Within a round the three take turns in all six orders in
 * cycle, since a process still finishing its last turn (Codex writes its rollout after
 * `turn/completed`) slows whichever turn comes next.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderName, ThreadId } from "@skein/domain"
import { claudeEnv, claudePlaceholder, codexEnv, codexLauncher } from "../agents/support.js"
import { direct, type Kind, resolveBinary } from "./binaryAlone.js"
import { startMockThread } from "./mockThread.js"
import { observePipes, turnLines } from "./pipeTimes.js"
import { type Figure, format } from "./sideTable.js"
import { isTurnEnd, openRuntime, scaled, type Side, watchTurns } from "./sides.js"
import { bootstrapInterval, percentile } from "./stats.js"

/** Turns counted a side, per binary. */
const TURNS = scaled(Number(process.env.SKEIN_BENCH_SIDE_TURNS ?? 300), 2)
/** Rounds on fresh processes the turns are split over. */
const ROUNDS = Number(process.env.SKEIN_BENCH_SIDE_ROUNDS ?? 4)
/** Turns of each of the three run, and not counted, on each round's fresh processes first. */
const ROUND_WARMUP = scaled(6)
const ORDERS: ReadonlyArray<ReadonlyArray<0 | 1 | 2>> = [
  [0, 1, 2],
  [1, 2, 0],
  [2, 0, 1],
  [0, 2, 1],
  [2, 1, 0],
  [1, 0, 2]
]

const instanceOf = (kind: Kind, round: number) => `${kind}-${round + 1}` as ProviderName

/** A side's runtime with one instance of the binary per round, and when each run's turn began and ended at the port. */
const openAgentSide = async (side: Side, kind: Kind, dir: string, envOf: (home: string) => Record<string, string>) => {
  const workspace = Path.join(dir, "workspace")
  Fs.mkdirSync(workspace, { recursive: true })
  const configFile = Path.join(dir, "providers.json")
  const command = [kind === "codex" ? codexLauncher : claudePlaceholder]
  const providers = Array.from({ length: ROUNDS }, (_, r) => [
    instanceOf(kind, r),
    { driver: kind, command, env: envOf(Path.join(dir, `home-${r}`)) }
  ])
  Fs.writeFileSync(configFile, JSON.stringify({ providers: Object.fromEntries(providers) }))
  const port = new Map<string, { readonly began: number; readonly took: number }>()
  const managed = openRuntime(side, dir, {
    configFile,
    mapAdapter: watchTurns(side, (input, events, startedAt) => {
      if (events.some(isTurnEnd)) port.set(input.runId, { began: startedAt, took: performance.now() - startedAt })
    })
  })
  const o = await managed.runPromise(side.runtime.Orchestrator)
  let thread: ThreadId | null = null
  let provider = instanceOf(kind, 0)
  /** One run on the round's thread: when it and its turn at the port began, its wall time and its turn's time at the port (ms). */
  const turn = async (message: string) => {
    if (thread === null) throw new Error(`${side.label}: no thread yet`)
    const t0 = performance.now()
    const run = await managed.runPromise(o.startRun({ threadId: thread, provider, message, wait: true }))
    const wall = performance.now() - t0
    if (run.status !== "completed") throw new Error(`${side.label}: a ${kind} run ended ${run.status}`)
    const atPort = port.get(run.id)
    port.clear()
    return { startedAt: t0, wall, portBegan: atPort?.began ?? Number.NaN, port: atPort?.took ?? Number.NaN }
  }
  return {
    /** A new thread on round `round`'s instance, its first run starting that instance's process. */
    startRound: async (round: number) => {
      provider = instanceOf(kind, round)
      thread = (await managed.runPromise(o.createThread({ workspace }))).id
      await turn("first")
    },
    turn,
    close: () => managed.dispose()
  }
}

const fmt = (x: number) => format("ms", x)

/**
 * The times of one driver's turns (ms): wall, at the provider port (under a side), the
 * binary's at the pipes, from the command to the turn's line written (its start), and
 * from the turn at the port to that line (the adapter's start, under a side).
 */
interface Turns {
  readonly wall: Array<number>
  readonly port: Array<number>
  readonly binary: Array<number>
  readonly start: Array<number>
  readonly adapterStart: Array<number>
}
const noTurns = (): Turns => ({ wall: [], port: [], binary: [], start: [], adapterStart: [] })

/** `kind`'s added latency per turn under each side, as a figure of the table. */
export const addedLatency = async (sides: readonly [Side, Side], kind: Kind, dir: string): Promise<Figure> => {
  Fs.mkdirSync(dir, { recursive: true })
  const mock = await startMockThread(kind)
  const pipes = observePipes(turnLines[kind])
  const envOf = (home: string) => (kind === "codex" ? codexEnv(home, mock.url) : claudeEnv(home, mock.url))
  const opened: Array<Awaited<ReturnType<typeof openAgentSide>>> = []
  const alones: Array<Awaited<ReturnType<typeof direct>>> = []
  try {
    const binary = await resolveBinary(kind, dir)
    for (const side of sides) opened.push(await openAgentSide(side, kind, Path.join(dir, side.label), envOf))
    const aloneWorkspace = Path.join(dir, "alone", "workspace")
    Fs.mkdirSync(aloneWorkspace, { recursive: true })
    const alone = noTurns()
    const under: readonly [Turns, Turns] = [noTurns(), noTurns()]
    const perRound = Math.ceil(TURNS / ROUNDS)
    for (let r = 0; r < ROUNDS; r++) {
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", ...envOf(Path.join(dir, "alone", `home-${r}`)) }
      const starts = [
        async () => void alones.push(await direct(kind, binary, env, aloneWorkspace)),
        () => opened[0]!.startRound(r),
        () => opened[1]!.startRound(r)
      ]
      for (const k of ORDERS[r % ORDERS.length]!) await starts[k]!()
      const current = alones[alones.length - 1]!
      /** One turn of driver `k` (0 alone, else a side), its times kept in `into`. */
      const one = async (k: 0 | 1 | 2, message: string, into: Turns | undefined) => {
        pipes.take()
        let times = { startedAt: Number.NaN, wall: Number.NaN, portBegan: Number.NaN, port: Number.NaN }
        if (k === 0) {
          const startedAt = performance.now()
          await current.turn(message)
          times = { startedAt, wall: performance.now() - startedAt, portBegan: Number.NaN, port: Number.NaN }
        } else {
          times = await opened[k - 1]!.turn(message)
        }
        const seen = pipes.take()
        into?.wall.push(times.wall)
        into?.port.push(times.port)
        into?.binary.push(seen === undefined ? Number.NaN : seen.ended - seen.written)
        into?.start.push(seen === undefined ? Number.NaN : seen.written - times.startedAt)
        into?.adapterStart.push(seen === undefined ? Number.NaN : seen.written - times.portBegan)
      }
      /** One turn of each of the three, in the i-th of the six orders; recorded when `record`. */
      const triple = async (i: number, record: boolean) => {
        for (const k of ORDERS[i % ORDERS.length]!) {
          await one(k, `turn ${r}.${i}`, record ? (k === 0 ? alone : under[k - 1]) : undefined)
        }
      }
      for (let i = 0; i < ROUND_WARMUP; i++) await triple(i, false)
      for (let i = 0; i < perRound; i++) await triple(i, true)
    }
    return figureOf(kind, alone, under)
  } finally {
    pipes.stop()
    for (const side of opened) await side.close()
    for (const process of alones) await process.stop()
    await mock.close()
  }
}

/** The p50 over the turns `indices` of `a`'s time less `b`'s, turn by turn. */
const gap = (a: ReadonlyArray<number>, b: ReadonlyArray<number>, indices: ReadonlyArray<number>) =>
  percentile(
    indices.map((i) => a[i]! - b[i]!),
    50
  )

/** Each driver's time outside the binary's turn, turn by turn. */
const outside = (turns: Turns) => turns.wall.map((wall, i) => wall - turns.binary[i]!)
/** Each driver's time from the turn's last line read to its answer, turn by turn. */
const ending = (turns: Turns) => turns.wall.map((wall, i) => wall - turns.binary[i]! - turns.start[i]!)

const ratio = (before: number, after: number) => `${(after / before).toFixed(2)}x`
const interval = ([low, high]: readonly [number, number]) => `${low.toFixed(2)}-${high.toFixed(2)}x`

/** The figure and what lies beside it, from the three drivers' turns. */
const figureOf = (kind: Kind, alone: Turns, under: readonly [Turns, Turns]): Figure => {
  // Turns whose ends all three pipes showed (a turn missing one is left out of every statistic).
  const all = alone.wall.map((_, i) => i).filter((i) => [alone, ...under].every((t) => Number.isFinite(t.binary[i])))
  if (all.length < alone.wall.length / 2) {
    throw new Error(`${kind}: only ${all.length} of ${alone.wall.length} turns were seen whole at the pipes`)
  }
  type Statistic = (s: 0 | 1, indices?: ReadonlyArray<number>) => number
  /** Side `s`'s part `of` its turns less the bench client's, p50 over the turns. */
  const less =
    (of: (turns: Turns) => ReadonlyArray<number>): Statistic =>
    (s, indices = all) =>
      gap(of(under[s]), of(alone), indices)
  const added = less(outside)
  const againstAlone = less((turns) => turns.wall)
  const ownPath: Statistic = (s, indices = all) => gap(under[s].wall, under[s].port, indices)
  const adapterStart: Statistic = (s, indices = all) =>
    percentile(
      indices.map((i) => under[s].adapterStart[i]!),
      50
    )
  const between = (statistic: Statistic) =>
    interval(bootstrapInterval(all, (picked) => statistic(1, picked) / statistic(0, picked)))
  const sideBySide = (statistic: Statistic) =>
    `before ${fmt(statistic(0))}, after ${fmt(statistic(1))}, ${ratio(statistic(0), statistic(1))} (${between(statistic)})`
  const binaryP50 = (turns: Turns) =>
    fmt(
      percentile(
        all.map((i) => turns.binary[i]!),
        50
      )
    )
  const walls = all.map((i) => alone.wall[i]!)
  const name = kind === "codex" ? "Codex" : "Claude Code"
  return {
    name: `${name} added latency per turn (p50)`,
    before: added(0),
    after: added(1),
    unit: "ms",
    detail:
      `${name}: ${all.length} turns each of the three, on ${ROUNDS} rounds of fresh processes; a run's time ` +
      `outside the binary's turn (wall time minus the turn between its pipes), less the bench client's: ` +
      `interval ${between(added)}. Its parts: the start (the command to the turn's line written, less the ` +
      `client's) ${sideBySide(less((turns) => turns.start))}; of it, the adapter's (the turn at the port to that ` +
      `line) ${sideBySide(adapterStart)}; the end (the turn's last line read to the answer, less the client's) ` +
      `${sideBySide(less(ending))}. The binary's turn at the pipes p50: alone ${binaryP50(alone)}, before ` +
      `${binaryP50(under[0])}, after ${binaryP50(under[1])}. Read as wall time minus the binary alone next to it ` +
      `(whose p10-p90 spread is ${fmt(percentile(walls, 90) - percentile(walls, 10))}): ${sideBySide(againstAlone)}. ` +
      `Own path (wall time minus the turn at the provider port): ${sideBySide(ownPath)}`
  }
}
