/**
 * An agent's added latency per turn side by side: the pinned binary (Codex or Claude
 * Code, offline against the mock model server on a thread of its own, mockThread.ts)
 * driven three ways in turn: alone over its own protocol (binaryAlone.ts), under the
 * baseline's runtime and under this checkout's (`run.start` with wait, through the
 * Orchestrator). A side's added latency is the p50 over turns of its run's wall time
 * minus the turn of the binary alone next to it, as agents.ts measures it.
 *
 * Two processes of the binary run the same turns some milliseconds apart for as long as
 * they live, whoever drives them; so the turns are split over ROUNDS rounds, each on
 * fresh processes for all three (each with a home of its own, as one user's agent has),
 * started in a rotating order. Within a round the three take turns in all six orders in
 * cycle, since a process still finishing its last turn (Codex writes its rollout after
 * `turn/completed`) slows whichever turn comes next. Beside the figure, its two parts:
 * each side's own path (the run's wall time minus the turn's time at the provider port),
 * which leaves the binary's own spread out, with its ratio and that ratio's interval, and
 * its driver's (the turn's time at the port minus the binary's turn alone next to it).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderName, ThreadId } from "@skein/domain"
import { claudeEnv, claudePlaceholder, codexEnv, codexLauncher } from "../agents/support.js"
import { direct, type Kind, resolveBinary } from "./binaryAlone.js"
import { startMockThread } from "./mockThread.js"
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

/** A side's runtime with one instance of the binary per round, and the time each run's turn took at the port. */
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
  const port = new Map<string, number>()
  const managed = openRuntime(side, dir, {
    configFile,
    mapAdapter: watchTurns(side, (input, events, startedAt) => {
      if (events.some(isTurnEnd)) port.set(input.runId, performance.now() - startedAt)
    })
  })
  const o = await managed.runPromise(side.runtime.Orchestrator)
  let thread: ThreadId | null = null
  let provider = instanceOf(kind, 0)
  /** One run on the round's thread: its wall time and its turn's time at the port (ms). */
  const turn = async (message: string) => {
    if (thread === null) throw new Error(`${side.label}: no thread yet`)
    const t0 = performance.now()
    const run = await managed.runPromise(o.startRun({ threadId: thread, provider, message, wait: true }))
    const wall = performance.now() - t0
    if (run.status !== "completed") throw new Error(`${side.label}: a ${kind} run ended ${run.status}`)
    const atPort = port.get(run.id) ?? Number.NaN
    port.clear()
    return { wall, port: atPort }
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

/** `kind`'s added latency per turn under each side, as a figure of the table. */
export const addedLatency = async (sides: readonly [Side, Side], kind: Kind, dir: string): Promise<Figure> => {
  Fs.mkdirSync(dir, { recursive: true })
  const mock = await startMockThread(kind)
  const envOf = (home: string) => (kind === "codex" ? codexEnv(home, mock.url) : claudeEnv(home, mock.url))
  const opened: Array<Awaited<ReturnType<typeof openAgentSide>>> = []
  const alones: Array<Awaited<ReturnType<typeof direct>>> = []
  try {
    const binary = await resolveBinary(kind, dir)
    for (const side of sides) opened.push(await openAgentSide(side, kind, Path.join(dir, side.label), envOf))
    const aloneWorkspace = Path.join(dir, "alone", "workspace")
    Fs.mkdirSync(aloneWorkspace, { recursive: true })
    const alone = { wall: [] as Array<number> }
    const under = sides.map(() => ({ wall: [] as Array<number>, port: [] as Array<number> }))
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
      /** One turn of each of the three, in the i-th of the six orders; recorded when `record`. */
      const triple = async (i: number, record: boolean) => {
        for (const k of ORDERS[i % ORDERS.length]!) {
          const message = `turn ${r}.${i}`
          if (k === 0) {
            const t0 = performance.now()
            await current.turn(message)
            if (record) alone.wall.push(performance.now() - t0)
          } else {
            const result = await opened[k - 1]!.turn(message)
            if (record) {
              under[k - 1]!.wall.push(result.wall)
              under[k - 1]!.port.push(result.port)
            }
          }
        }
      }
      for (let i = 0; i < ROUND_WARMUP; i++) await triple(i, false)
      for (let i = 0; i < perRound; i++) await triple(i, true)
    }
    /** The p50 over the turns `indices` of `a`'s time less `b`'s, turn by turn. */
    const gap = (a: ReadonlyArray<number>, b: ReadonlyArray<number>, indices: ReadonlyArray<number>) =>
      percentile(
        indices.map((i) => a[i]! - b[i]!),
        50
      )
    const all = alone.wall.map((_, i) => i)
    const added = (s: 0 | 1, indices: ReadonlyArray<number>) => gap(under[s]!.wall, alone.wall, indices)
    const [low, high] = bootstrapInterval(all, (picked) => added(1, picked) / added(0, picked))
    const ownPath = (s: 0 | 1, indices: ReadonlyArray<number> = all) => gap(under[s]!.wall, under[s]!.port, indices)
    const [ownLow, ownHigh] = bootstrapInterval(all, (picked) => ownPath(1, picked) / ownPath(0, picked))
    const driver = (s: 0 | 1) => gap(under[s]!.port, alone.wall, all)
    const name = kind === "codex" ? "Codex" : "Claude Code"
    return {
      name: `${name} added latency per turn (p50)`,
      before: added(0, all),
      after: added(1, all),
      unit: "ms",
      detail:
        `${name}: ${all.length} turns each of the three, on ${ROUNDS} rounds of fresh processes; the binary alone ` +
        `p50 ${fmt(percentile(alone.wall, 50))} (p10-p90 spread ${fmt(percentile(alone.wall, 90) - percentile(alone.wall, 10))}); ` +
        `ratio's 95% bootstrap interval ${low.toFixed(2)}-${high.toFixed(2)}x; own path (run wall time minus the turn ` +
        `at the port) p50 before ${fmt(ownPath(0))}, after ${fmt(ownPath(1))}, ${(ownPath(1) / ownPath(0)).toFixed(2)}x ` +
        `(${ownLow.toFixed(2)}-${ownHigh.toFixed(2)}x); driver (the turn at the port minus ` +
        `the binary alone) p50 before ${fmt(driver(0))}, after ${fmt(driver(1))}`
    }
  } finally {
    for (const side of opened) await side.close()
    for (const process of alones) await process.stop()
    await mock.close()
  }
}
