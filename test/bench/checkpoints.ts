/**
 * Git checkpoint capture on a repository of 5,000 committed files with 10 changed: p50
 * of GitCheckpoints.capture (temporary index, tree, commit, hidden ref, diff summary)
 * as the runtime runs it (commit and ref through the workspace's long-lived GitWriter),
 * against `git add -A && git write-tree` on a copy of the repository in the same run,
 * spawned through node:child_process as Git.ts spawns git. Goals: under 150 ms; at most
 * 1.5x. Also printed: the capture with a process per step (GitWriter.oneShot), for comparison.
 *
 * Then what a run's caller waits for (no goal): scripted runs through the runtime, each
 * writing a file, `run.start` with wait, in a thread on the same repository against one
 * on a plain directory, alternating, 120 ms apart (as a user's turns come): the capture
 * follows the answer, so the ratio should be about 1. And runs back to back in the
 * repository, where each waits for the previous one's capture.
 */
import { NodeContext } from "@effect/platform-node"
import { Effect, Exit, ManagedRuntime, Scope } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { performance } from "node:perf_hooks"
import type * as GitCheckpoints from "../../packages/runtime/src/lineage/GitCheckpoints.js"
import type * as GitWriter from "../../packages/runtime/src/lineage/GitWriter.js"
import type { ProviderName } from "@skein/domain"
import { withRuntime } from "../support/runtime.js"
import { percentile } from "./stats.js"

const DIRECTORIES = 50
const FILES_PER_DIRECTORY = 100
const CHANGED = 10
const WARMUP = 2
const REPETITIONS = 10
/** Runs of each kind in the answers part, after as many unmeasured. */
const ANSWERS = 40
const ANSWER_PAUSE_MS = 120

/** The runtime's package does not export these modules: load its build output by path. */
const loadModules = async () => ({
  checkpoints: (await import(
    new URL("../../../packages/runtime/dist/src/lineage/GitCheckpoints.js", import.meta.url).href
  )) as typeof GitCheckpoints,
  writers: (await import(
    new URL("../../../packages/runtime/dist/src/lineage/GitWriter.js", import.meta.url).href
  )) as typeof GitWriter
})

const gitEnv = (home: string) => ({
  PATH: process.env.PATH ?? "",
  HOME: home,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com"
})

const sh = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, env: gitEnv(cwd), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

const fileName = (d: number, f: number) => Path.join("src", `module${d}`, `file${f}.ts`)

/** 5,000 small files, their times an hour back (so none is racily clean), committed. */
const buildRepository = (root: string) => {
  sh(root, "init", "-q", "-b", "main")
  const past = new Date(Date.now() - 3_600_000)
  for (let d = 0; d < DIRECTORIES; d++) {
    Fs.mkdirSync(Path.join(root, "src", `module${d}`), { recursive: true })
    for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
      const path = Path.join(root, fileName(d, f))
      Fs.writeFileSync(path, `export const value${f} = ${d * FILES_PER_DIRECTORY + f}\n// module ${d}\n`)
      Fs.utimesSync(path, past, past)
    }
  }
  Fs.writeFileSync(Path.join(root, ".gitignore"), "*.log\n")
  Fs.utimesSync(Path.join(root, ".gitignore"), past, past)
  sh(root, "add", "-A")
  sh(root, "commit", "-q", "-m", "5,000 files")
}

/** The same 10 files in both repositories, with new content each repetition. */
const change = (root: string, repetition: number) => {
  for (let i = 0; i < CHANGED; i++) {
    const path = Path.join(root, fileName(i * 5, i))
    Fs.appendFileSync(path, `// repetition ${repetition}\n`)
  }
}

/** git alone, spawned as plainly as node can (node:child_process, as Git.ts runs it). */
const baseline = (root: string) =>
  Effect.gen(function* () {
    const run = (...args: Array<string>) =>
      Effect.async<string, Error>((resume) => {
        execFile("git", args, { cwd: root, env: gitEnv(root), encoding: "utf8" }, (error, stdout) =>
          resume(error ? Effect.fail(error) : Effect.succeed(stdout))
        )
      })
    yield* run("add", "-A")
    return (yield* run("write-tree")).trim()
  })

export async function run(): Promise<void> {
  const { checkpoints, writers } = await loadModules()
  const dir = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-checkpoints-")))
  const runtime = ManagedRuntime.make(NodeContext.layer)
  const writerScope = await runtime.runPromise(Scope.make())
  try {
    const repository = Path.join(dir, "repository")
    const copy = Path.join(dir, "copy")
    Fs.mkdirSync(repository)
    buildRepository(repository)
    Fs.cpSync(repository, copy, { recursive: true, preserveTimestamps: true })
    // The copy's index describes the original's inodes: one refresh, untimed.
    await runtime.runPromise(baseline(copy))
    const writer = await runtime.runPromise(Scope.extend(writers.make(repository), writerScope))

    const previous: Record<string, string | null> = { kept: null, oneShot: null }
    const samples: Record<"kept" | "oneShot" | "baseline", Array<number>> = { kept: [], oneShot: [], baseline: [] }
    let lastDiff = 0
    const timed = async (name: keyof typeof samples, repetition: number, f: () => Promise<void>) => {
      const started = performance.now()
      await f()
      if (repetition > WARMUP) samples[name].push(performance.now() - started)
    }
    const captureSide = (name: "kept" | "oneShot", repetition: number) => () =>
      timed(name, repetition, async () => {
        const checkpoint: GitCheckpoints.GitCheckpoint = await runtime.runPromise(
          checkpoints.capture({
            workspace: repository,
            threadId: `thr_bench_${name}`,
            ordinal: repetition,
            previous: previous[name]!,
            writer: name === "kept" ? writer : undefined
          })
        )
        previous[name] = checkpoint.commit
        lastDiff = checkpoint.diff.length
      })
    for (let repetition = 1; repetition <= WARMUP + REPETITIONS; repetition++) {
      change(repository, repetition)
      change(copy, repetition)
      // Rotate which side goes first, so that caches and load from elsewhere hit all alike.
      const sides = [
        captureSide("kept", repetition),
        () => timed("baseline", repetition, () => runtime.runPromise(Effect.asVoid(baseline(copy)))),
        captureSide("oneShot", repetition)
      ]
      const shift = repetition % sides.length
      for (const side of [...sides.slice(shift), ...sides.slice(0, shift)]) await side()
    }
    const kept = percentile(samples.kept, 50)
    const oneShot = percentile(samples.oneShot, 50)
    const theirs = percentile(samples.baseline, 50)
    const files = DIRECTORIES * FILES_PER_DIRECTORY
    console.log(
      `checkpoints: capture of a repository of ${files.toLocaleString("en-US")} committed files with ${CHANGED} changed, p50 of ${REPETITIONS}`
    )
    console.log(
      `  GitCheckpoints.capture as the runtime runs it (temporary index, tree, diff of ${lastDiff} files; commit and ref through a kept GitWriter): ${kept.toFixed(1)} ms (goal < 150 ms)`
    )
    console.log(`  the same with a process per step (commit-tree, update-ref):  ${oneShot.toFixed(1)} ms`)
    console.log(`  git add -A && git write-tree on a copy:                      ${theirs.toFixed(1)} ms`)
    console.log(
      `  ratio capture/baseline: ${(kept / theirs).toFixed(2)} (goal <= 1.5); a process per step: ${(oneShot / theirs).toFixed(2)}`
    )
    await answers(repository, Path.join(dir, "runtime"))
  } finally {
    await runtime.runPromise(Scope.close(writerScope, Exit.void))
    await runtime.dispose()
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Scripted runs answered in a git repository against a plain directory (see the header). */
const answers = async (repository: string, dir: string) => {
  const plain = Path.join(dir, "plain")
  Fs.mkdirSync(plain, { recursive: true })
  const alpha = "alpha" as ProviderName
  const p50 = (samples: ReadonlyArray<number>) => percentile(samples, 50)
  await withRuntime(dir, (o) =>
    Effect.gen(function* () {
      const inRepository = yield* o.createThread({ workspace: repository })
      const inPlain = yield* o.createThread({ workspace: plain })
      const timedRun = (threadId: typeof inPlain.id, i: number) =>
        Effect.gen(function* () {
          const started = performance.now()
          yield* o.startRun({ threadId, provider: alpha, message: `[[write:notes/run.txt:${i}]]`, wait: true })
          return performance.now() - started
        })
      const paced = { repository: [] as Array<number>, plain: [] as Array<number> }
      for (let i = 0; i < 2 * ANSWERS; i++) {
        for (const [side, threadId] of [
          ["repository", inRepository.id],
          ["plain", inPlain.id]
        ] as const) {
          yield* Effect.sleep(ANSWER_PAUSE_MS)
          const ms = yield* timedRun(threadId, i)
          if (i >= ANSWERS) paced[side].push(ms)
        }
      }
      const backToBack: Array<number> = []
      for (let i = 0; i < ANSWERS; i++) backToBack.push(yield* timedRun(inRepository.id, i))
      const [repo, flat] = [p50(paced.repository), p50(paced.plain)]
      console.log(
        `  a scripted run's answer (run.start with wait), runs ${ANSWER_PAUSE_MS} ms apart, p50 of ${ANSWERS}: in this repository ` +
          `${repo.toFixed(1)} ms, in a plain directory ${flat.toFixed(1)} ms, ratio ${(repo / flat).toFixed(2)} (no goal); ` +
          `back to back in the repository ${p50(backToBack).toFixed(1)} ms (each waits for the previous run's checkpoint)`
      )
    })
  )
}
