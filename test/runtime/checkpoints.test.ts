/**
 * Git checkpoints through the Orchestrator: a thread whose workspace is a git
 * repository gets a git checkpoint after each completed run, under a hidden ref, with
 * the diff against the previous one; a rollback with restoreFiles writes checkpoint N
 * back byte for byte. The user's repository (HEAD, the index, branches, stash) is never
 * touched, and `git status --porcelain` after the restore is what it was after run N.
 */
import type { ProviderName } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: cwd,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t"
    }
  })

/** What of the user's repository must never change. */
const repoState = (cwd: string) => ({
  head: git(cwd, "rev-parse", "HEAD"),
  branches: git(cwd, "branch", "-a", "-v"),
  stash: git(cwd, "stash", "list"),
  index: Fs.readFileSync(Path.join(cwd, ".git", "index")).toString("base64")
})

describe("git checkpoints", () => {
  it("after each completed run, under a hidden ref, with the diff; rollback restores files; the repository is untouched", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const repo = Path.join(Fs.realpathSync(dir), "repo")
        Fs.mkdirSync(repo)
        git(repo, "init", "-q", "-b", "main")
        Fs.writeFileSync(Path.join(repo, "README.md"), "hello\n")
        Fs.writeFileSync(Path.join(repo, ".gitignore"), "*.log\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "init")
        git(repo, "branch", "side")
        Fs.writeFileSync(Path.join(repo, "debug.log"), "ignored\n")
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
        const view = yield* o.getThread(thread.id)
        const [c1, c2] = [...view.checkpoints].sort((a, b) => a.runOrdinal - b.runOrdinal)
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
