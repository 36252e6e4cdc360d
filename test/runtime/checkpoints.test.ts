/**
 * Git checkpoints through the Orchestrator: a thread whose workspace is a git
 * repository gets a git checkpoint after each completed run, under a hidden ref, with
 * the diff against the previous one; a rollback with restoreFiles writes checkpoint N
 * back byte for byte. The user's repository (HEAD, the index, branches, stash) is never
 * touched, and `git status --porcelain` after the restore is what it was after run N.
 *
 * A run is answered before its checkpoint is taken (it is `pending` until then); the
 * next run and a rollback wait for it, and one Skein stopped before taking is recorded
 * as not taken when Skein starts again. A slow git (a wrapper first on the PATH that
 * sleeps before `git add`) makes that window wide enough to look into.
 */
import type { Orchestrator } from "@skein/runtime"
import type { Checkpoint, ProviderName, SkeinError, ThreadId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { git, repoState } from "../support/gitRepo.js"
import { inTempRuntime, removeDir, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

/** A repository with one commit, a branch and an ignored file, in `dir`. */
const makeRepository = (dir: string) => {
  const repo = Path.join(Fs.realpathSync(dir), "repo")
  Fs.mkdirSync(repo)
  git(repo, "init", "-q", "-b", "main")
  Fs.writeFileSync(Path.join(repo, "README.md"), "hello\n")
  Fs.writeFileSync(Path.join(repo, ".gitignore"), "*.log\n")
  git(repo, "add", "-A")
  git(repo, "commit", "-q", "-m", "init")
  git(repo, "branch", "side")
  Fs.writeFileSync(Path.join(repo, "debug.log"), "ignored\n")
  return repo
}

/** The thread's checkpoints by run, once none is pending. */
const settledCheckpoints = (o: Orchestrator["Type"], threadId: ThreadId) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      const { checkpoints } = yield* o.getThread(threadId)
      if (checkpoints.every((c) => c.status !== "pending")) {
        return [...checkpoints].sort((a, b) => a.runOrdinal - b.runOrdinal)
      }
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage("checkpoints still pending after 10 s")
  })

const statusOf = (checkpoints: ReadonlyArray<Checkpoint>) => checkpoints.map((c) => [c.runOrdinal, c.kind, c.status])

/**
 * Runs `f` with a `git` first on the PATH that sleeps `seconds` before each `git add`
 * and is otherwise the real one.
 */
const withSlowGit = async <A>(seconds: number, f: () => Promise<A>): Promise<A> => {
  const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim()
  const bin = tempDir()
  Fs.writeFileSync(
    Path.join(bin, "git"),
    `#!/bin/sh\nfor a in "$@"; do if [ "$a" = add ]; then sleep ${seconds}; break; fi; done\nexec ${real} "$@"\n`
  )
  Fs.chmodSync(Path.join(bin, "git"), 0o755)
  const path = process.env.PATH
  process.env.PATH = `${bin}:${path ?? ""}`
  try {
    return await f()
  } finally {
    process.env.PATH = path
    removeDir(bin)
  }
}

/**
 * One run in a repository with a git that sleeps `seconds` before `add`, the runtime
 * closed while its checkpoint is pending; then `after` in a runtime opened again on the
 * same data.
 */
const runThenRestart = async (
  seconds: number,
  after: (o: Orchestrator["Type"], threadId: ThreadId) => Effect.Effect<void, SkeinError>
) => {
  const dir = tempDir()
  try {
    const repo = makeRepository(dir)
    const threadId = await withSlowGit(seconds, () =>
      withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: repo })
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[write:a.txt:one]]", wait: true })
          expect(statusOf((yield* o.getThread(thread.id)).checkpoints)).toEqual([[1, "git", "pending"]])
          return thread.id
        })
      )
    )
    await withRuntime(dir, (o) => after(o, threadId))
  } finally {
    removeDir(dir)
  }
}

describe("git checkpoints", () => {
  it("after each completed run, under a hidden ref, with the diff; rollback restores files; the repository is untouched", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const repo = makeRepository(dir)
        const before = repoState(repo)

        const thread = yield* o.createThread({ workspace: repo })
        const one = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "[[write:notes.txt:first\\nsecond]]",
          wait: true
        })
        expect(one.status).toBe("completed")
        const afterOne = {
          status: git(repo, "status", "--porcelain"),
          notes: Fs.readFileSync(Path.join(repo, "notes.txt"))
        }
        yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "[[write:notes.txt:changed]] [[write:src/new.ts:export const x = 1]]",
          wait: true
        })
        const [c1, c2] = yield* settledCheckpoints(o, thread.id)
        expect(c1).toMatchObject({ kind: "git", gitRef: `refs/skein/${thread.id}/1`, status: "ready" })
        expect(c1!.diffSummary).toEqual([{ path: "notes.txt", change: "add", additions: 2, deletions: 0 }])
        expect(c2!.diffSummary).toEqual([
          { path: "notes.txt", change: "modify", additions: 1, deletions: 2 },
          { path: "src/new.ts", change: "add", additions: 1, deletions: 0 }
        ])
        expect(git(repo, "rev-parse", `refs/skein/${thread.id}/2`).trim()).toBe(c2!.commitSha)
        expect(git(repo, "ls-tree", "-r", "--name-only", c1!.treeSha!).split("\n").filter(Boolean).sort()).toEqual([
          ".gitignore",
          "README.md",
          "notes.txt"
        ])

        const rolled = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1, restoreFiles: true })
        expect(rolled.runs.map((r) => r.status)).toEqual(["completed", "rolled_back"])
        expect(Fs.readFileSync(Path.join(repo, "notes.txt"))).toEqual(afterOne.notes)
        expect(Fs.existsSync(Path.join(repo, "src", "new.ts"))).toBe(false)
        expect(Fs.readFileSync(Path.join(repo, "debug.log"), "utf8")).toBe("ignored\n")
        expect(git(repo, "status", "--porcelain")).toBe(afterOne.status)
        expect(repoState(repo)).toEqual(before)
      })
    )
  }, 60_000)

  it("a run is answered before its git checkpoint is taken; the next run and a rollback wait for it", async () => {
    await withSlowGit(1, () =>
      inTempRuntime((o, _actors, dir) =>
        Effect.gen(function* () {
          const repo = makeRepository(dir)
          const thread = yield* o.createThread({ workspace: repo })
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[write:a.txt:one]]", wait: true })
          // Answered while git is still at work.
          expect(statusOf((yield* o.getThread(thread.id)).checkpoints)).toEqual([[1, "git", "pending"]])
          // Started at once: its provider writes only once run 1's checkpoint is taken.
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[write:b.txt:two]]", wait: true })
          expect(statusOf((yield* o.getThread(thread.id)).checkpoints)).toEqual([
            [1, "git", "ready"],
            [2, "git", "pending"]
          ])
          // At once again: run 1's files come back once run 2's checkpoint is taken.
          yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1, restoreFiles: true })
          expect(Fs.existsSync(Path.join(repo, "b.txt"))).toBe(false)
          expect(Fs.readFileSync(Path.join(repo, "a.txt"), "utf8")).toBe("one")
          const [c1, c2] = yield* settledCheckpoints(o, thread.id)
          expect(c1!.diffSummary.map((d) => d.path)).toEqual(["a.txt"])
          expect(c2!.diffSummary.map((d) => d.path)).toEqual(["b.txt"])
        })
      )
    )
  }, 60_000)

  it("a git checkpoint Skein stopped before taking is recorded as not taken when it starts again", async () => {
    // Closed with git asleep past the shutdown's 4 s: the checkpoint was left pending, and is settled at start-up.
    await runThenRestart(30, (o, threadId) =>
      Effect.gen(function* () {
        const view = yield* o.getThread(threadId)
        expect(statusOf(view.checkpoints)).toEqual([[1, "logical", "ready"]])
        expect(view.checkpoints[0]!.diffSummary.map((d) => d.path)).toEqual(["a.txt"])
        expect(view.runs[0]!.items.at(-1)).toMatchObject({
          type: "error",
          code: "checkpoint_failed",
          message: "no git checkpoint: Skein stopped before it was taken"
        })
        // The thread goes on, with git checkpoints again.
        yield* o.startRun({ threadId, provider: alpha, message: "[[write:b.txt:two]]", wait: true })
        expect(statusOf(yield* settledCheckpoints(o, threadId))).toEqual([
          [1, "logical", "ready"],
          [2, "git", "ready"]
        ])
      })
    )
  }, 60_000)

  it("a shutdown gives a git checkpoint being taken the time to be recorded", async () => {
    await runThenRestart(1, (o, threadId) =>
      Effect.gen(function* () {
        const [checkpoint] = (yield* o.getThread(threadId)).checkpoints
        expect(checkpoint).toMatchObject({ kind: "git", status: "ready", gitRef: `refs/skein/${threadId}/1` })
      })
    )
  }, 60_000)

  it("a workspace that is not a repository keeps logical checkpoints", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const plain = Path.join(Fs.realpathSync(dir), "plain")
        Fs.mkdirSync(plain)
        const thread = yield* o.createThread({ workspace: plain })
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[write:a.txt:x]]", wait: true })
        const view = yield* o.getThread(thread.id)
        expect(view.checkpoints.map((c) => [c.kind, c.gitRef])).toEqual([["logical", null]])
        expect(view.checkpoints[0]!.diffSummary.map((d) => d.path)).toEqual(["a.txt"])
      })
    )
  })
})
