/**
 * The redesign's guard (issue 45): the commit before the redesign and this checkout side
 * by side in one run, each figure within 1.25x of the old commit's.
 *
 *   npm run build && node --expose-gc test/dist/bench/main.js redesign
 *   (also part of `npm run bench`; never of `npm test`)
 *
 * The baseline (SKEIN_BENCH_BASELINE, default 71ac524; any commit-ish) is built once in
 * a git worktree, `skein-baseline-<commit>` under the temporary directory (baseline.ts,
 * scripts/ab-baseline.sh; a few minutes the first time, reused after), and loaded into
 * this process beside this checkout, each with its own Effect, database, providers and
 * server; both are driven only through what both export. SKEIN_BENCH_BASELINE=HEAD (an
 * A/A run, once HEAD is committed) shows how far two identical runtimes come apart here.
 * The figures, each taken on both sides in the same run, alternating between them:
 * - append ratio: EventStore.append over raw better-sqlite3 (sideStore.ts);
 * - dispatch p50 and p99, the actor round trip, the RPC round trip p50 and p99 (sideRuns.ts);
 * - Codex's and Claude Code's added latency per turn, the real binaries offline against
 *   the mock model servers: each run's time outside the binary's turn as the pipes show
 *   it, less the bench's own client's (sideAgents.ts).
 * The agents' turns come after the run path's figures, whose warm-up (some 3,000
 * scripted runs a side) brings each side's run path to where a long-running Skein has it.
 *
 * It prints a table, one row a figure: before (the baseline), after (this checkout),
 * after/before, the goal (a latency at most 1.25x, the append ratio at least 0.80x) and
 * met, MISSED, or undecided (a baseline figure at or below zero); then the figures beyond
 * the guard, and a line a figure saying how it was taken, with what lies beside it (the
 * sample sizes, the ratio's bootstrap interval, an agent figure's parts and its reading
 * against the binary alone).
 * The run path's figures (`runs`) are taken in SKEIN_BENCH_SIDE_PROCESSES fresh processes
 * (3), each loading both sides, and each row is the median of the processes' figures:
 * their ratios move from one process to the next by more than one process's bootstrap
 * interval shows, with how V8 compiled and laid out that process.
 * It takes some four minutes on two cores. SKEIN_BENCH_SIDE_FIGURES picks figures
 * (`append,runs,codex,claude`, the default); SKEIN_BENCH_SIDE_TURNS and
 * SKEIN_BENCH_SIDE_ROUNDS set the agents' turns (300) and rounds (4); SKEIN_BENCH_SIDE_SCALE
 * scales every sample count (0.1: a quick try that the bench runs).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { requireBinaries } from "../agents/support.js"
import { removeDir, tempDir } from "../support/runtime.js"
import { ensureBaseline } from "./baseline.js"
import { addedLatency } from "./sideAgents.js"
import { runPath } from "./sideRuns.js"
import { loadSide } from "./sides.js"
import { appendRatio } from "./sideStore.js"
import { combined, type Figure, GUARD, tableLines, withinGuard } from "./sideTable.js"

const BASELINE = process.env.SKEIN_BENCH_BASELINE ?? "71ac524"
const KNOWN = ["append", "runs", "codex", "claude"] as const
const FIGURES = (process.env.SKEIN_BENCH_SIDE_FIGURES ?? KNOWN.join(",")).split(",").map((name) => {
  if (!(KNOWN as ReadonlyArray<string>).includes(name)) {
    throw new Error(`SKEIN_BENCH_SIDE_FIGURES: no figures called ${name}; known: ${KNOWN.join(", ")}`)
  }
  return name as (typeof KNOWN)[number]
})

const PROCESSES = Number(process.env.SKEIN_BENCH_SIDE_PROCESSES ?? 3)
if (!(Number.isInteger(PROCESSES) && PROCESSES >= 1)) {
  throw new Error(
    `SKEIN_BENCH_SIDE_PROCESSES must be a whole number from 1, not ${process.env.SKEIN_BENCH_SIDE_PROCESSES}`
  )
}
/** Set in a process this bench started for the run path's figures: it prints them, marked, and nothing else. */
const CHILD = process.env.SKEIN_BENCH_SIDE_CHILD === "1"
const CHILD_MARK = "skein-bench-figures "

/** The run path's figures taken in `count` fresh processes, one after another, and combined. */
const runPathInProcesses = (count: number): Array<Figure> => {
  const main = fileURLToPath(new URL("./main.js", import.meta.url))
  const taken = Array.from({ length: count }, (_, i) => {
    const child = spawnSync(process.execPath, [...process.execArgv, main, "redesign"], {
      env: { ...process.env, SKEIN_BENCH_SIDE_FIGURES: "runs", SKEIN_BENCH_SIDE_CHILD: "1" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"]
    })
    const line = child.stdout.split("\n").find((text) => text.startsWith(CHILD_MARK))
    if (child.status !== 0 || line === undefined) {
      throw new Error(`the run path's process ${i + 1} of ${count} failed (${child.signal ?? `exit ${child.status}`})`)
    }
    return JSON.parse(line.slice(CHILD_MARK.length)) as Array<Figure>
  })
  return combined(taken)
}

export async function run(): Promise<void> {
  if (FIGURES.includes("codex") || FIGURES.includes("claude")) requireBinaries()
  const baseline = ensureBaseline(BASELINE)
  const sides = [await loadSide("before", baseline.dir), await loadSide("after", null)] as const
  const dir = Fs.realpathSync(tempDir("skein-bench-redesign-"))
  const figures: Array<Figure> = []
  try {
    if (FIGURES.includes("append")) figures.push(await appendRatio(sides, dir))
    if (FIGURES.includes("runs")) {
      figures.push(...(CHILD || PROCESSES === 1 ? await runPath(sides, dir) : runPathInProcesses(PROCESSES)))
    }
    for (const kind of ["codex", "claude"] as const) {
      if (FIGURES.includes(kind)) figures.push(await addedLatency(sides, kind, Path.join(dir, kind)))
    }
  } finally {
    removeDir(dir)
  }
  if (CHILD) {
    console.log(CHILD_MARK + JSON.stringify(figures))
    return
  }
  const short = baseline.commit.slice(0, 7)
  console.log(`redesign guard: ${short} (before) against this checkout (after), side by side in one run`)
  for (const line of tableLines(figures, short)) console.log(line)
  const names = (within: boolean | undefined) =>
    figures.filter((figure) => withinGuard(figure) === within).map((figure) => figure.name)
  const [missed, undecided] = [names(false), names(undefined)]
  if (missed.length === 0 && undecided.length === 0) console.log(`every figure within ${GUARD}x of ${short}'s`)
  if (missed.length > 0) console.log(`beyond ${GUARD}x of ${short}'s: ${missed.join("; ")}`)
  if (undecided.length > 0) console.log(`undecided (${short}'s figure not above zero): ${undecided.join("; ")}`)
  for (const figure of figures) if (figure.detail !== undefined) console.log(`  ${figure.detail}`)
}
