/**
 * A rollback's file restore, through the Orchestrator with real git: it touches only
 * the thread's workspace (a subdirectory of a repository here), saves the work tree
 * before it changes a file and says what it changed, previews with `dryRun`, keeps the
 * thread from taking a run while it is owed, answers a retried command with what it
 * really did, and drops the refs of the runs rolled back.
 *
 * Every case compares the exact bytes of every file of the repository (outside the
 * workspace and inside) before and after.
 */
import type { Orchestrator } from "@skein/runtime"
import type { ProviderName, RollbackView, ThreadId } from "@skein/domain"
import { CommandId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { filesOf, git, gitEnv, repoState } from "../support/gitRepo.js"
import { inTempRuntime, removeDir, tempDir } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

const b64 = (text: string) => Buffer.from(text).toString("base64")

/** `mono/` a repository, `mono/ws` the thread's workspace, `mono/other` the user's own work. */
const makeMonorepo = (dir: string) => {
  const mono = Path.join(Fs.realpathSync(dir), "mono")
  const ws = Path.join(mono, "ws")
  Fs.mkdirSync(Path.join(mono, "other"), { recursive: true })
  Fs.mkdirSync(ws)
  git(mono, "init", "-q", "-b", "main")
  Fs.writeFileSync(Path.join(mono, "other", "user.txt"), "user v1\n")
  Fs.writeFileSync(Path.join(ws, "tracked.txt"), "tracked v1\n")
  Fs.writeFileSync(Path.join(mono, ".gitignore"), "*.log\n")
  git(mono, "add", "-A")
  git(mono, "commit", "-q", "-m", "init")
  Fs.writeFileSync(Path.join(ws, "debug.log"), "ignored\n")
  return { mono, ws }
}

const settled = (o: Orchestrator["Type"], threadId: ThreadId) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      const { checkpoints } = yield* o.getThread(threadId)
      if (checkpoints.every((c) => c.status !== "pending")) return
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.dieMessage("checkpoints still pending after 10 s")
  })

/** A thread on `ws` with three runs, each writing one file, their checkpoints taken. */
const threeRuns = (o: Orchestrator["Type"], ws: string) =>
  Effect.gen(function* () {
    const thread = yield* o.createThread({ workspace: ws })
    for (const [i, message] of [
      "[[write:a.txt:one]]",
      "[[write:b.txt:two]] [[write:tracked.txt:tracked by agent]]",
      "[[write:c.txt:three]]"
    ].entries()) {
      const run = yield* o.startRun({ threadId: thread.id, provider: alpha, message, wait: true })
      expect([i + 1, run.status]).toEqual([i + 1, "completed"])
      yield* settled(o, thread.id)
    }
    return thread.id
  })

/** Runs the outcome's `undo` text in a shell, in the workspace. */
const runUndo = (view: RollbackView, cwd: string) => {
  expect(view.restore?.undo).toEqual(expect.any(String))
  execFileSync("sh", ["-c", view.restore!.undo!], { cwd, env: gitEnv(cwd), encoding: "utf8" })
}

describe("file restore", () => {
  it("touches only the workspace, a subdirectory of the repository, and says what it changed", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const { mono, ws } = makeMonorepo(dir)
        const threadId = yield* threeRuns(o, ws)
        // The user's own work, outside the workspace, after the last checkpoint.
        Fs.writeFileSync(Path.join(mono, "other", "user.txt"), "user v2\n")
        Fs.writeFileSync(Path.join(mono, "other", "new-user-file.txt"), "mine\n")
        const outside = Object.fromEntries(Object.entries(filesOf(mono)).filter(([p]) => !p.startsWith("ws/")))
        const before = repoState(mono)

        const rolled = yield* o.rollback({ threadId, toRunOrdinal: 1, restoreFiles: true })
        expect(rolled.restore).toMatchObject({
          toRunOrdinal: 1,
          workspace: ws,
          dryRun: false,
          reverted: ["tracked.txt"],
          deleted: ["b.txt", "c.txt"],
          created: [],
          omitted: [],
          submodules: []
        })
        const after = filesOf(mono)
        expect(Object.fromEntries(Object.entries(after).filter(([p]) => !p.startsWith("ws/")))).toEqual(outside)
        expect(Object.fromEntries(Object.entries(after).filter(([p]) => p.startsWith("ws/")))).toEqual({
          "ws/a.txt": b64("one"),
          "ws/debug.log": b64("ignored\n"),
          "ws/tracked.txt": b64("tracked v1\n")
        })
        expect(repoState(mono)).toEqual(before)
        // The rolled-back runs' checkpoint refs are gone; run 1's and the backup stay.
        const refs = git(mono, "for-each-ref", "--format=%(refname)", `refs/skein/${threadId}/`)
          .split("\n")
          .filter(Boolean)
        expect(refs).toEqual([`refs/skein/${threadId}/1`, rolled.restore!.backupRef].sort())
      })
    )
  }, 60_000)

  it("keeps what a person made by hand: a dry run lists it, the restore saves it, undo brings it back", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const { mono, ws } = makeMonorepo(dir)
        const threadId = yield* threeRuns(o, ws)
        // By hand, after the last checkpoint: a new file, an edit to a tracked one, a new .gitignore.
        Fs.writeFileSync(Path.join(ws, "handmade.txt"), "by hand\n")
        Fs.writeFileSync(Path.join(ws, "tracked.txt"), "edited by hand\n")
        Fs.writeFileSync(Path.join(ws, ".gitignore"), "build/\n")
        const handmade = filesOf(mono)

        // Rolled back to the last run: it undoes no run, only what was made by hand.
        const preview = yield* o.rollback({ threadId, toRunOrdinal: 3, restoreFiles: true, dryRun: true })
        const lists = { reverted: ["tracked.txt"], deleted: [".gitignore", "handmade.txt"], created: [] }
        expect(preview.restore).toMatchObject({ ...lists, dryRun: true, backupRef: null, undo: null })
        expect(filesOf(mono)).toEqual(handmade)
        expect(preview.runs.map((r) => r.status)).toEqual(["completed", "completed", "completed"])

        const done = yield* o.rollback({ threadId, toRunOrdinal: 3, restoreFiles: true })
        expect(done.restore).toMatchObject({ ...lists, dryRun: false })
        expect(done.restore!.backupRef).toMatch(new RegExp(`^refs/skein/${threadId}/`))
        expect(Fs.existsSync(Path.join(ws, "handmade.txt"))).toBe(false)
        expect(Fs.readFileSync(Path.join(ws, "tracked.txt"), "utf8")).toBe("tracked by agent")
        // The backup holds every byte: the undo text puts the work tree back as it was.
        runUndo(done, ws)
        expect(filesOf(mono)).toEqual(handmade)
      })
    )
  }, 60_000)

  it("a run asked for while the files are being restored is refused; the retried rollback answers the same", async () => {
    const real = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim()
    const bin = tempDir()
    const slow = Path.join(bin, "slow")
    // Every git call sleeps while the marker exists: the restore takes several of them.
    Fs.writeFileSync(
      Path.join(bin, "git"),
      `#!/bin/sh\nif [ -e ${JSON.stringify(slow)} ]; then sleep 0.4; fi\nexec ${real} "$@"\n`
    )
    Fs.chmodSync(Path.join(bin, "git"), 0o755)
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path ?? ""}`
    try {
      await inTempRuntime((o, _actors, dir) =>
        Effect.gen(function* () {
          const { ws } = makeMonorepo(dir)
          const threadId = yield* threeRuns(o, ws)
          const commandId = CommandId.make("rollback-while-running")
          Fs.writeFileSync(slow, "")
          const rolling = yield* Effect.fork(o.rollback({ threadId, toRunOrdinal: 1, restoreFiles: true, commandId }))
          // Once the restore is owed, a run is refused until the files are back.
          for (let i = 0; i < 500; i++) {
            if ((yield* o.getThread(threadId)).thread.restore?.status === "owed") break
            yield* Effect.sleep("10 millis")
          }
          const refused = yield* Effect.either(
            o.startRun({ threadId, provider: alpha, message: "[[write:kept.txt:KEEP]]", wait: true })
          )
          expect(Either.isLeft(refused) && refused.left._tag).toBe("RestorePending")
          const first = yield* Fiber.join(rolling)
          Fs.rmSync(slow)
          expect(first.restore?.deleted).toEqual(["b.txt", "c.txt"])
          expect((yield* o.getThread(threadId)).thread.restore).toMatchObject({ status: "done", toRunOrdinal: 1 })

          // Now the run goes ahead, and its file stays.
          const run = yield* o.startRun({ threadId, provider: alpha, message: "[[write:kept.txt:KEEP]]", wait: true })
          expect(run.status).toBe("completed")
          // The same command again: the same answer, nothing restored again.
          const again = yield* o.rollback({ threadId, toRunOrdinal: 1, restoreFiles: true, commandId })
          expect(again.restore).toEqual(first.restore)
          expect(Fs.readFileSync(Path.join(ws, "kept.txt"), "utf8")).toBe("KEEP")
        })
      )
    } finally {
      process.env.PATH = path
      removeDir(bin)
    }
  }, 60_000)

  it("a dry run or a restore from a run without a checkpoint is refused before anything is written", async () => {
    await inTempRuntime((o, _actors, dir) =>
      Effect.gen(function* () {
        const { ws } = makeMonorepo(dir)
        const threadId = yield* threeRuns(o, ws)
        const files = filesOf(ws)
        const noRestore = yield* Effect.flip(o.rollback({ threadId, toRunOrdinal: 1, dryRun: true }))
        expect(noRestore._tag).toBe("InvalidInput")
        const past = yield* Effect.flip(o.rollback({ threadId, toRunOrdinal: 9, restoreFiles: true, dryRun: true }))
        expect(past._tag).toBe("InvalidInput")
        const none = yield* Effect.flip(o.rollback({ threadId, toRunOrdinal: 0, restoreFiles: true }))
        expect(none._tag).toBe("InvalidSourcePoint")
        const view = yield* o.getThread(threadId)
        expect(view.runs.map((r) => r.status)).toEqual(["completed", "completed", "completed"])
        expect(view.thread.restore).toBeUndefined()
        expect(filesOf(ws)).toEqual(files)
      })
    )
  }, 60_000)

  it("checkpoint options: a file over the limit is omitted and left alone, refs past keepRuns are pruned", async () => {
    await inTempRuntime(
      (o, _actors, dir) =>
        Effect.gen(function* () {
          const { mono, ws } = makeMonorepo(dir)
          const big = "x".repeat(500)
          const threadId = yield* threeRuns(o, ws)
          const run4 = yield* o.startRun({ threadId, provider: alpha, message: `[[write:big.bin:${big}]]`, wait: true })
          expect(run4.status).toBe("completed")
          yield* settled(o, threadId)
          const view = yield* o.getThread(threadId)
          expect(view.checkpoints.find((c) => c.runOrdinal === 4)?.omitted).toEqual([{ path: "big.bin", bytes: 500 }])
          // Only the newest two runs keep their refs.
          const refs = git(mono, "for-each-ref", "--format=%(refname)", `refs/skein/${threadId}/`)
          expect(refs.split("\n").filter(Boolean)).toEqual([`refs/skein/${threadId}/3`, `refs/skein/${threadId}/4`])
          // A pruned checkpoint is refused before anything is written.
          const pruned = yield* Effect.flip(o.rollback({ threadId, toRunOrdinal: 1, restoreFiles: true }))
          expect(pruned._tag).toBe("InvalidSourcePoint")
          expect((yield* o.getThread(threadId)).runs.map((r) => r.status)).toEqual([
            "completed",
            "completed",
            "completed",
            "completed"
          ])
          // Back to run 4: the big file is named, not touched.
          Fs.writeFileSync(Path.join(ws, "big.bin"), "changed by hand")
          const rolled = yield* o.rollback({ threadId, toRunOrdinal: 4, restoreFiles: true })
          expect(rolled.restore?.omitted).toEqual([{ path: "big.bin", bytes: 500 }])
          expect(Fs.readFileSync(Path.join(ws, "big.bin"), "utf8")).toBe("changed by hand")
        }),
      { checkpoints: { maxFileBytes: 100, keepRuns: 2 } }
    )
  }, 60_000)
})
