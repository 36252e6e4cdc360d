/**
 * The kept GitWriter against real git: its commits are the commits `git commit-tree`
 * writes, its refs are on disk when it answers, a capture through it refuses what the
 * one-shot path refuses, and a writer whose git failed is broken for good while
 * WorkspaceCheckpoints replaces it with a fresh one.
 */
import { NodeContext } from "@effect/platform-node"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { capture, GitExecutable } from "../../src/lineage/GitCheckpoints.js"
import * as GitWriter from "../../src/lineage/GitWriter.js"
import { WorkspaceCheckpoints } from "../../src/lineage/WorkspaceCheckpoints.js"
import { sh, tempDir as tempDirOf } from "./gitUser.js"

const tempDir = () => tempDirOf("skein-gitwriter-")

const repository = () => {
  const root = tempDir()
  sh(root, "init", "-q", "-b", "main")
  Fs.writeFileSync(Path.join(root, "a.txt"), "a\n")
  sh(root, "add", "-A")
  sh(root, "commit", "-q", "-m", "first")
  return root
}

const run = <A, E>(effect: Effect.Effect<A, E, CommandExecutor | Scope.Scope>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(effect, NodeContext.layer)))
const runEither = <A, E>(effect: Effect.Effect<A, E, CommandExecutor | Scope.Scope>) => run(Effect.either(effect))

/** A commit's text without its two dates, which differ by when each was written. */
const undated = (root: string, commit: string) =>
  sh(root, "cat-file", "-p", commit).replace(/^(author|committer) (.*) \d+ [+-]\d{4}$/gm, "$1 $2")

describe("GitWriter", () => {
  it("a kept writer stores the commit commit-tree stores, and its ref is on disk when it answers", async () => {
    const root = repository()
    const tree = sh(root, "rev-parse", "HEAD^{tree}").trim()
    const head = sh(root, "rev-parse", "HEAD").trim()
    const [kept, again, oneShot] = await run(
      Effect.gen(function* () {
        const writer = yield* GitWriter.make(root)
        const kept = yield* writer.commit({ tree, parents: [head], message: "skein checkpoint x" })
        yield* writer.setRef("refs/skein/thr_w/1", kept)
        // The same process serves the next requests.
        const again = yield* writer.commit({ tree, parents: [kept], message: "second" })
        yield* writer.setRef("refs/skein/thr_w/2", again)
        // Replacing a ref is allowed, as a capture of the same ordinal does.
        yield* writer.setRef("refs/skein/thr_w/1", again)
        const one = GitWriter.oneShot(root)
        const oneShot = yield* one.commit({ tree, parents: [head], message: "skein checkpoint x" })
        expect(writer.broken()).toBe(false)
        return [kept, again, oneShot] as const
      })
    )
    expect(undated(root, kept)).toBe(undated(root, oneShot))
    expect(undated(root, kept)).toContain("author Skein <skein@localhost>")
    expect(sh(root, "rev-parse", "refs/skein/thr_w/1").trim()).toBe(again)
    expect(sh(root, "rev-parse", "refs/skein/thr_w/2").trim()).toBe(again)
    expect(sh(root, "rev-parse", `${again}^`).trim()).toBe(kept)
    // The objects pass git's strictest check.
    expect(() => sh(root, "fsck", "--strict", "--no-dangling")).not.toThrow()
    // HEAD and the branch did not move.
    expect(sh(root, "rev-parse", "HEAD").trim()).toBe(head)
  })

  it("a capture through a kept writer chains its checkpoints and refuses a previous that is not a commit, leaving no ref", async () => {
    const root = repository()
    const tree = sh(root, "rev-parse", "HEAD^{tree}").trim()
    const outcome = await run(
      Effect.gen(function* () {
        const writer = yield* GitWriter.make(root)
        Fs.writeFileSync(Path.join(root, "b.txt"), "b\n")
        const first = yield* capture({ workspace: root, threadId: "thr_c", ordinal: 1, previous: null, writer })
        Fs.writeFileSync(Path.join(root, "b.txt"), "b2\n")
        const second = yield* capture({
          workspace: root,
          threadId: "thr_c",
          ordinal: 2,
          previous: first.commit,
          writer
        })
        const unknown = yield* Effect.either(
          capture({ workspace: root, threadId: "thr_c", ordinal: 3, previous: "0".repeat(39) + "1", writer })
        )
        const aTree = yield* Effect.either(
          capture({ workspace: root, threadId: "thr_c", ordinal: 4, previous: tree, writer })
        )
        return { first, second, unknown, aTree }
      })
    )
    expect(outcome.first.diff).toEqual([{ path: "b.txt", change: "add", additions: 1, deletions: 0 }])
    expect(outcome.second.diff).toEqual([{ path: "b.txt", change: "modify", additions: 1, deletions: 1 }])
    expect(sh(root, "log", "-1", "--format=%B", outcome.second.commit)).toContain(
      `skein-previous: ${outcome.first.commit}\n`
    )
    expect(sh(root, "rev-parse", "refs/skein/thr_c/2").trim()).toBe(outcome.second.commit)
    expect(outcome.unknown._tag === "Left" && outcome.unknown.left.message).toContain("0".repeat(39) + "1")
    expect(outcome.aTree._tag).toBe("Left")
    // Nor was a commit with a bad parent written into the repository: fsck (which also
    // reads unreachable objects) finds nothing wrong.
    expect(sh(root, "for-each-ref", "--format=%(refname)", "refs/skein").trim().split("\n")).toEqual([
      "refs/skein/thr_c/1",
      "refs/skein/thr_c/2"
    ])
    expect(() => sh(root, "fsck", "--strict", "--no-dangling")).not.toThrow()
  })

  it("a writer whose git failed answers that error from then on; a missing git is a typed error", async () => {
    const root = repository()
    const head = sh(root, "rev-parse", "HEAD").trim()
    // A ref below refs/skein/thr_b/5 makes refs/skein/thr_b/5 itself impossible.
    sh(root, "update-ref", "refs/skein/thr_b/5/blocker", head)
    const [refused, later, broken] = await run(
      Effect.gen(function* () {
        const writer = yield* GitWriter.make(root)
        const refused = yield* Effect.either(writer.setRef("refs/skein/thr_b/5", head))
        const later = yield* Effect.either(writer.setRef("refs/skein/thr_b/6", head))
        return [refused, later, writer.broken()] as const
      })
    )
    expect(refused._tag === "Left" && refused.left.message).toMatch(/refs\/skein\/thr_b\/5/)
    expect(later._tag === "Left" && later.left).toEqual(refused._tag === "Left" && refused.left)
    expect(broken).toBe(true)
    expect(sh(root, "for-each-ref", "--format=%(refname)", "refs/skein/thr_b/6")).toBe("")

    const missing = await runEither(
      GitWriter.make(root).pipe(Effect.provideService(GitExecutable, Path.join(tempDir(), "no-git-here")))
    )
    expect(missing._tag === "Left" && missing.left.reason).toBe("missing")
  })

  it("WorkspaceCheckpoints drops a writer that failed and captures the next checkpoint with a fresh one", async () => {
    const root = repository()
    const head = sh(root, "rev-parse", "HEAD").trim()
    sh(root, "update-ref", "refs/skein/thr_r/2/blocker", head)
    const results = await Effect.runPromise(
      Effect.gen(function* () {
        const checkpoints = yield* WorkspaceCheckpoints
        const take = (ordinal: number, previous: string | null) =>
          Effect.either(
            checkpoints.capture({
              workspace: root,
              threadId: "thr_r" as never,
              ordinal,
              previous: Effect.succeed(previous)
            })
          )
        const first = yield* take(1, null)
        const firstCommit = first._tag === "Right" && Option.isSome(first.right) ? first.right.value.commit : null
        const blocked = yield* take(2, firstCommit)
        const third = yield* take(3, firstCommit)
        return { first, blocked, third }
      }).pipe(Effect.provide(WorkspaceCheckpoints.layer))
    )
    expect(results.first._tag === "Right" && Option.isSome(results.first.right)).toBe(true)
    expect(results.blocked._tag === "Left" && results.blocked.left._tag).toBe("GitFailed")
    expect(results.blocked._tag === "Left" && results.blocked.left.message).toMatch(/refs\/skein\/thr_r\/2/)
    expect(results.third._tag === "Right" && Option.isSome(results.third.right)).toBe(true)
    expect(sh(root, "for-each-ref", "--format=%(refname)", "refs/skein/thr_r/3")).toContain("refs/skein/thr_r/3")
  })

  it("captures of several threads on one workspace at once share its writer, one request at a time, and all land", async () => {
    const root = repository()
    const threads = Array.from({ length: 6 }, (_, i) => `thr_p${i}`)
    const taken = await Effect.runPromise(
      Effect.gen(function* () {
        const checkpoints = yield* WorkspaceCheckpoints
        // Three rounds, each with every thread capturing at once.
        const commits = new Map<string, string | null>(threads.map((thread) => [thread, null]))
        for (const ordinal of [1, 2, 3]) {
          Fs.writeFileSync(Path.join(root, "round.txt"), `${ordinal}\n`)
          yield* Effect.forEach(
            threads,
            (thread) =>
              Effect.flatMap(
                checkpoints.capture({
                  workspace: root,
                  threadId: thread as never,
                  ordinal,
                  previous: Effect.succeed(commits.get(thread)!)
                }),
                (checkpoint) => Effect.sync(() => commits.set(thread, Option.getOrThrow(checkpoint).commit))
              ),
            { concurrency: "unbounded", discard: true }
          )
        }
        return commits
      }).pipe(Effect.provide(WorkspaceCheckpoints.layer))
    )
    for (const thread of threads) {
      const head = taken.get(thread)!
      expect(sh(root, "rev-parse", `refs/skein/${thread}/3`).trim()).toBe(head)
      // Each thread's chain is its own: 3 names 2, which names 1.
      const previous = (commit: string) =>
        /skein-previous: (\w+)/.exec(sh(root, "log", "-1", "--format=%B", commit))?.[1]
      expect(previous(head)).toBe(sh(root, "rev-parse", `refs/skein/${thread}/2`).trim())
      expect(previous(previous(head)!)).toBe(sh(root, "rev-parse", `refs/skein/${thread}/1`).trim())
      expect(sh(root, "show", `${head}:round.txt`)).toBe("3\n")
    }
    expect(sh(root, "for-each-ref", "--format=%(refname)", "refs/skein").trim().split("\n")).toHaveLength(18)
    expect(() => sh(root, "fsck", "--strict", "--no-dangling")).not.toThrow()
  })
})
