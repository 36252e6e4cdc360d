/**
 * CLI start-up as a user meets it: the wall time of spawning `skein --help` and
 * `skein call provider.list` (against a daemon this bench starts from the bundle), from
 * spawn to exit, the median of RUNS spawns each, beside `node -e 0` spawned in the same
 * rounds. The commands take turns within each round, so load from elsewhere hits them
 * alike. Goals: `--help` under 200 ms, the call under 250 ms.
 *
 * For comparison, in the same run and the same way: the bundle without its code cache
 * (`SKEIN_CODE_CACHE=off`: what a Node other than the one that built it gets), and the
 * unbundled CLI (`dist/src/bin.js`, the tsc output, what the bundle is built from;
 * fewer runs, it is slow). Then the human commands beside `skein call` of the same
 * method, and what each command loads (`SKEIN_TRACE_LOADING`).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { bin, startDaemon } from "./daemon.js"
import { monotonicMs, percentile } from "./stats.js"

const RUNS = 21
const UNBUNDLED_RUNS = 5
const WARMUP = 2

const repository = fileURLToPath(new URL("../../../", import.meta.url))
const unbundledBin = Path.join(repository, "packages/server/dist/src/bin.js")
const bundleDir = Path.join(repository, "packages/server/dist/bundle")

interface Subject {
  readonly label: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly runs: number
  readonly goalMs?: number
}

/** One spawn to exit, in milliseconds; throws when the command fails. */
const time = (subject: Subject): number => {
  const started = monotonicMs()
  const result = spawnSync(process.execPath, subject.args, { env: subject.env, stdio: ["ignore", "ignore", "pipe"] })
  const ms = monotonicMs() - started
  if (result.status !== 0) throw new Error(`${subject.label} failed (${result.status}): ${result.stderr}`)
  return ms
}

interface Trace {
  readonly scripts: ReadonlyArray<{ readonly file: string; readonly cache: string }>
  readonly commonJs: ReadonlyArray<string>
}

/** What `skein ARGS` loads: scripts of the bundle (and their cache), and CommonJS modules. */
const traceOf = (args: ReadonlyArray<string>, env: Record<string, string>, dir: string): Trace => {
  const file = Path.join(dir, "trace.json")
  const result = spawnSync(process.execPath, [bin, ...args], {
    env: { ...env, SKEIN_TRACE_LOADING: file },
    stdio: "ignore"
  })
  if (result.status !== 0) throw new Error(`skein ${args.join(" ")} failed (${result.status})`)
  return JSON.parse(Fs.readFileSync(file, "utf8")) as Trace
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

const describeTrace = (trace: Trace, allScripts: ReadonlyArray<string>): string => {
  const size = (files: ReadonlyArray<string>) => files.reduce((sum, file) => sum + Fs.statSync(file).size, 0)
  const caches = new Map<string, number>()
  for (const s of trace.scripts) caches.set(s.cache, (caches.get(s.cache) ?? 0) + 1)
  const sqlite = trace.commonJs.some((file) => file.includes("better-sqlite3"))
  return `${trace.scripts.length} of ${allScripts.length} scripts (${mib(size(trace.scripts.map((s) => s.file)))} of ${mib(size(allScripts))}), code cache ${[...caches].map(([k, n]) => `${k} ${n}`).join(", ")}; better-sqlite3 ${sqlite ? "loaded" : "not loaded"}`
}

/** `skein ARGS`'s stdout; throws when it fails. */
const output = (args: ReadonlyArray<string>, env: Record<string, string>): string => {
  const result = spawnSync(process.execPath, [bin, ...args], { env, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`skein ${args.join(" ")} failed (${result.status}): ${result.stderr}`)
  return result.stdout
}

/**
 * The human commands against `skein call` of the same method, in the same rounds:
 * `threads` beside `call thread.list`, and `send` (which starts the run, then reads the
 * thread's events until the run's end and prints them) beside `call run.start` with
 * `wait` on a thread of its own, each thread growing by one run a round. The scripted
 * provider answers at once, so the difference is the CLI's own.
 */
const humanCommands = (env: Record<string, string>) => {
  for (let i = 0; i < 20; i++) output(["thread", "new", "--title", `listed ${i}`], env)
  const sendThread = output(["thread", "new", "--title", "send"], env).trim()
  const callThread = output(["thread", "new", "--title", "call"], env).trim()
  const start = JSON.stringify({ threadId: callThread, provider: "alpha", message: "hello", wait: true })
  const pairs: ReadonlyArray<readonly [Subject, Subject]> = [
    [
      { label: "skein threads (22 threads)", args: [bin, "threads"], env, runs: RUNS },
      { label: "skein call thread.list", args: [bin, "call", "thread.list"], env, runs: RUNS }
    ],
    [
      { label: "skein send (scripted provider)", args: [bin, "send", sendThread, "alpha", "hello"], env, runs: RUNS },
      { label: "skein call run.start (wait)", args: [bin, "call", "run.start", start], env, runs: RUNS }
    ]
  ]
  const subjects = pairs.flat()
  const samples = new Map<Subject, Array<number>>(subjects.map((s) => [s, []]))
  for (let round = 0; round < WARMUP + RUNS; round++) {
    const order = subjects.map((_, i) => subjects[(i + round) % subjects.length]!)
    for (const subject of order) {
      const ms = time(subject)
      if (round >= WARMUP) samples.get(subject)!.push(ms)
    }
  }
  console.log(`cli: human commands beside skein call of the same method, median of ${RUNS} runs each, same rounds`)
  for (const [human, raw] of pairs) {
    const h = percentile(samples.get(human)!, 50)
    const r = percentile(samples.get(raw)!, 50)
    console.log(
      `  ${human.label.padEnd(48)} ${h.toFixed(0).padStart(5)} ms  (call ${h >= r ? "+" : ""}${(h - r).toFixed(0)} ms)`
    )
    console.log(`  ${raw.label.padEnd(48)} ${r.toFixed(0).padStart(5)} ms`)
  }
}

export async function run(): Promise<void> {
  const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-cli-"))
  const daemon = await startDaemon(home)
  try {
    const env = { PATH: process.env.PATH ?? "", HOME: home, SKEIN_HOME: home, SKEIN_URL: daemon.url }
    const noCache = { ...env, SKEIN_CODE_CACHE: "off" }
    const baseline: Subject = { label: "node -e 0", args: ["-e", "0"], env, runs: RUNS }
    const subjects: ReadonlyArray<Subject> = [
      baseline,
      { label: "skein --help", args: [bin, "--help"], env, runs: RUNS, goalMs: 200 },
      { label: "skein call provider.list", args: [bin, "call", "provider.list"], env, runs: RUNS, goalMs: 250 },
      { label: "  bundle without code cache: --help", args: [bin, "--help"], env: noCache, runs: RUNS },
      {
        label: "  bundle without code cache: call provider.list",
        args: [bin, "call", "provider.list"],
        env: noCache,
        runs: RUNS
      },
      { label: "  unbundled (tsc output): --help", args: [unbundledBin, "--help"], env, runs: UNBUNDLED_RUNS },
      {
        label: "  unbundled (tsc output): call provider.list",
        args: [unbundledBin, "call", "provider.list"],
        env,
        runs: UNBUNDLED_RUNS
      }
    ]
    const samples = new Map<Subject, Array<number>>(subjects.map((s) => [s, []]))
    for (let round = 0; round < WARMUP + RUNS; round++) {
      // Rotate who goes first, so no command always follows the same one.
      const order = subjects.map((_, i) => subjects[(i + round) % subjects.length]!)
      for (const subject of order) {
        if (round >= WARMUP + subject.runs) continue
        const ms = time(subject)
        if (round >= WARMUP) samples.get(subject)!.push(ms)
      }
    }

    const median = (subject: Subject) => percentile(samples.get(subject)!, 50)
    const base = median(baseline)
    console.log(
      `cli: wall time from spawn to exit, median of ${RUNS} runs each (unbundled: ${UNBUNDLED_RUNS}), in rounds with node -e 0; node ${process.version}, ${Os.cpus().length} CPUs`
    )
    for (const subject of subjects) {
      const ms = median(subject)
      const goal =
        subject.goalMs === undefined
          ? ""
          : ms < subject.goalMs
            ? `  goal < ${subject.goalMs} ms: met`
            : `  goal < ${subject.goalMs} ms: MISSED by ${(ms - subject.goalMs).toFixed(0)} ms`
      const over = subject === baseline ? "  (baseline)" : `  (node -e 0 + ${(ms - base).toFixed(0)} ms)`
      console.log(`  ${subject.label.padEnd(48)} ${ms.toFixed(0).padStart(5)} ms${over}${goal}`)
    }

    humanCommands(env)

    const allScripts = Fs.readdirSync(bundleDir, { recursive: true })
      .map((file) => Path.join(bundleDir, String(file)))
      .filter((file) => file.endsWith(".cjs"))
    const traces = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-trace-"))
    try {
      console.log(`  loads --help: ${describeTrace(traceOf(["--help"], env, traces), allScripts)}`)
      console.log(`  loads call:   ${describeTrace(traceOf(["call", "provider.list"], env, traces), allScripts)}`)
    } finally {
      Fs.rmSync(traces, { recursive: true, force: true })
    }
  } finally {
    await daemon.stop()
    Fs.rmSync(home, { recursive: true, force: true })
  }
}
