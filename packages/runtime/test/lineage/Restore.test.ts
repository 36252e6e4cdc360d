/**
 * A file restore against real git: confined to the workspace, a backup before any file
 * changes, the exact outcome (and the same from a dry run and a retry), an undo that
 * works, files over the size limit and submodules left alone, pruned checkpoints refused.
 */
import { NodeContext } from "@effect/platform-node"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { describe, expect, it } from "@effect/vitest"
import type { RestoreOutcome } from "@skein/domain"
import { ThreadId } from "@skein/domain"
import { Effect, Option } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { capture, checkpointExists, GitExecutable, prune, restore } from "../../src/lineage/GitCheckpoints.js"
import * as TemporaryDirectories from "../../src/lineage/TemporaryDirectories.js"
import { WorkspaceCheckpoints } from "../../src/lineage/WorkspaceCheckpoints.js"
import { env, filesIn, remove, sh, tempDir as tempDirOf, write } from "./gitUser.js"

const tempDir = () => tempDirOf("skein-restore-test-")

const files = (root: string) => filesIn(root, "latin1")

const pick = (all: Record<string, string>, keep: (path: string) => boolean) =>
  Object.fromEntries(Object.entries(all).filter(([path]) => keep(path)))

/** What the user sees of their repository; the index bytes are read before any git command. */
const snapshot = (root: string, outside?: string) => ({
  index: Fs.readFileSync(Path.join(root, ".git", "index")).toString("hex"),
  head: Fs.readFileSync(Path.join(root, ".git", "HEAD"), "utf8") + sh(root, "rev-parse", "HEAD"),
  status:
    outside === undefined ? "" : sh(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", outside),
  branches: sh(root, "branch", "-a", "-v", "--no-abbrev"),
  stash: sh(root, "stash", "list", "--format=%H %s")
})

const run = <A, E>(effect: Effect.Effect<A, E, CommandExecutor>) =>
  Effect.runPromise(Effect.provide(effect, NodeContext.layer))
const runEither = <A, E>(effect: Effect.Effect<A, E, CommandExecutor>) => run(Effect.either(effect))

const refs = (root: string) => sh(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/skein")

/** Runs an outcome's undo as a person would, in a shell. */
const undo = (root: string, outcome: RestoreOutcome) =>
  execFileSync("sh", ["-c", outcome.undo!], { cwd: root, env: env(root), stdio: ["ignore", "pipe", "pipe"] })

const initRepository = () => {
  const root = tempDir()
  sh(root, "init", "-q", "-b", "main")
  return root
}

const commitAll = (root: string) => {
  sh(root, "add", "-A")
  sh(root, "commit", "-q", "-m", "base")
}

const params = (workspace: string, commit: string, restoreId: string, dryRun = false) => ({
  workspace,
  threadId: "thr/r 1",
  commit,
  toRunOrdinal: 1,
  restoreId,
  dryRun
})

describe("GitCheckpoints.restore", () => {
  it("in a subdirectory workspace touches nothing outside it, whatever the checkpoint holds there; undo brings every byte back", async () => {
    const root = initRepository()
    write(root, "mono/other/user.txt", "user v1\n")
    write(root, "mono/ws/a.txt", "a v1\n")
    write(root, "mono/ws/gone.txt", "gone\n")
    write(root, "top.txt", "top\n")
    write(root, ".gitignore", "*.log\n")
    commitAll(root)
    const ws = Path.join(root, "mono/ws")
    write(ws, "made.txt", "made by the agent\n")
    const checkpoint = await run(capture({ workspace: ws, threadId: "thr/r 1", ordinal: 1, previous: null }))
    expect(checkpoint.diff).toEqual([{ path: "mono/ws/made.txt", change: "add", additions: 1, deletions: 0 }])

    // After the checkpoint: the user stages a change outside (so the checkpoint's tree
    // differs from the user's there), edits and creates files outside; the agent works inside.
    write(root, "mono/other/user.txt", "user v2 staged\n")
    sh(root, "add", "mono/other/user.txt")
    write(root, "mono/other/user.txt", "user v3 edited\n")
    write(root, "mono/other/new-user-file.txt", "new user file\n")
    write(root, "top.txt", "top edited\n")
    write(root, "mono/other/x.log", "ignored outside\n")
    write(ws, "a.txt", "a v2\n")
    remove(ws, "made.txt")
    write(ws, "later.txt", "later\n")
    write(ws, "deep/new.txt", "deep\n")
    const before = snapshot(root, ":(exclude)mono/ws")
    const beforeFiles = files(root)
    const outside = pick(beforeFiles, (path) => !path.startsWith("mono/ws/"))
    const refsBefore = refs(root)

    const dry = await run(restore(params(ws, checkpoint.commit, "one", true)))
    expect(files(root)).toEqual(beforeFiles)
    expect(refs(root)).toBe(refsBefore)
    expect(snapshot(root, ":(exclude)mono/ws")).toEqual(before)

    const outcome = await run(restore(params(ws, checkpoint.commit, "one")))
    expect(outcome).toEqual({
      toRunOrdinal: 1,
      checkpointCommit: checkpoint.commit,
      workspace: ws,
      dryRun: false,
      backupRef: "refs/skein/thr%2Fr%201/restore-one",
      backupCommit: outcome.backupCommit,
      reverted: ["a.txt"],
      deleted: ["deep/new.txt", "later.txt"],
      created: ["made.txt"],
      omitted: [],
      submodules: [],
      undo: `cd '${ws}' && git restore --source=${outcome.backupCommit} --worktree -- . && rm -f -- 'made.txt'`
    })
    expect({
      ...dry,
      dryRun: false,
      backupRef: outcome.backupRef,
      backupCommit: outcome.backupCommit,
      undo: outcome.undo
    }).toEqual(outcome)
    // Outside: every byte as it was, the user's status, index and HEAD too.
    expect(pick(files(root), (path) => !path.startsWith("mono/ws/"))).toEqual(outside)
    expect(snapshot(root, ":(exclude)mono/ws")).toEqual(before)
    // Inside: the checkpoint's files exactly.
    expect(pick(files(root), (path) => path.startsWith("mono/ws/"))).toEqual({
      "mono/ws/a.txt": "a v1\n",
      "mono/ws/gone.txt": "gone\n",
      "mono/ws/made.txt": "made by the agent\n"
    })
    // The backup holds the workspace as it was.
    expect(
      sh(root, "ls-tree", "-r", "--name-only", outcome.backupCommit!, "--", "mono/ws").split("\n").filter(Boolean)
    ).toEqual(["mono/ws/a.txt", "mono/ws/deep/new.txt", "mono/ws/gone.txt", "mono/ws/later.txt"])

    undo(root, outcome)
    expect(files(root)).toEqual(beforeFiles)
  })

  it("saves a file made by hand, an edited tracked file and a new .gitignore before reverting them; a dry run lists the same and changes nothing", async () => {
    const root = initRepository()
    write(root, "tracked.txt", "committed\n")
    commitAll(root)
    write(root, "notes.txt", "untracked at the checkpoint\n")
    const checkpoint = await run(capture({ workspace: root, threadId: "thr/r 1", ordinal: 3, previous: null }))
    // By hand, after the last checkpoint: nothing of this is in it.
    write(root, "hand.txt", "made by hand\n")
    write(root, "tracked.txt", "edited by hand\n")
    write(root, ".gitignore", "notes.txt\n*.log\n") // now ignores a file the checkpoint holds
    write(root, "notes.txt", "notes edited, now ignored\n")
    write(root, "keep.log", "ignored, never removed\n")
    const before = snapshot(root)
    const beforeFiles = files(root)
    const refsBefore = refs(root)
    const objectsBefore = sh(root, "count-objects", "-v")

    const dry = await run(restore(params(root, checkpoint.commit, "hand", true)))
    expect(dry).toMatchObject({
      dryRun: true,
      backupRef: null,
      backupCommit: null,
      undo: null,
      reverted: ["notes.txt", "tracked.txt"],
      deleted: [".gitignore", "hand.txt"],
      created: []
    })
    expect(files(root)).toEqual(beforeFiles)
    expect(refs(root)).toBe(refsBefore)
    expect(sh(root, "count-objects", "-v")).toBe(objectsBefore) // not even an object written
    expect(snapshot(root)).toEqual(before)

    const outcome = await run(restore(params(root, checkpoint.commit, "hand")))
    expect([outcome.reverted, outcome.deleted, outcome.created]).toEqual([dry.reverted, dry.deleted, dry.created])
    expect(files(root)).toEqual({
      "tracked.txt": "committed\n",
      "notes.txt": "untracked at the checkpoint\n",
      "keep.log": "ignored, never removed\n"
    })
    const backup = (path: string) => sh(root, "cat-file", "blob", `${outcome.backupCommit}:${path}`)
    expect([backup("hand.txt"), backup("tracked.txt"), backup(".gitignore"), backup("notes.txt")]).toEqual([
      "made by hand\n",
      "edited by hand\n",
      "notes.txt\n*.log\n",
      "notes edited, now ignored\n"
    ])
    expect(snapshot(root)).toEqual(before)
    undo(root, outcome)
    expect(files(root)).toEqual(beforeFiles)
  })

  it("is idempotent: again after it finished, and after git was killed half-way, the same outcome and the true backup", async () => {
    const root = initRepository()
    write(root, "a.txt", "a1\n")
    write(root, "b.txt", "b1\n")
    commitAll(root)
    const checkpoint = await run(capture({ workspace: root, threadId: "thr/r 1", ordinal: 1, previous: null }))
    write(root, "a.txt", "a2\n")
    write(root, "b.txt", "b2\n")
    write(root, "c.txt", "c\n")
    const beforeFiles = files(root)
    const atCheckpoint = { "a.txt": "a1\n", "b.txt": "b1\n" }

    // A "git" killed as the work tree is about to change: the backup is made, nothing restored.
    const dir = tempDir()
    const killer = Path.join(dir, "git")
    Fs.writeFileSync(killer, `#!/bin/sh\nfor a in "$@"; do [ "$a" = read-tree ] && kill -9 $$; done\nexec git "$@"\n`)
    Fs.chmodSync(killer, 0o755)
    const killed = await runEither(
      restore(params(root, checkpoint.commit, "crash")).pipe(Effect.provideService(GitExecutable, killer))
    )
    expect(killed._tag === "Left" && killed.left.message).toMatch(/read-tree.*stopped by SIGKILL/)
    const backupCommit = sh(root, "rev-parse", "refs/skein/thr%2Fr%201/restore-crash").trim()
    expect(files(root)).toEqual(beforeFiles)
    // Half-way: one file already back, one not.
    write(root, "a.txt", "a1\n")

    const retried = await run(restore(params(root, checkpoint.commit, "crash")))
    expect(retried).toMatchObject({ backupCommit, reverted: ["a.txt", "b.txt"], deleted: ["c.txt"], created: [] })
    expect(files(root)).toEqual(atCheckpoint)
    const again = await run(restore(params(root, checkpoint.commit, "crash")))
    expect(again).toEqual(retried)
    expect(files(root)).toEqual(atCheckpoint)
    expect(sh(root, "rev-parse", "refs/skein/thr%2Fr%201/restore-crash").trim()).toBe(backupCommit)
    undo(root, again)
    expect(files(root)).toEqual(beforeFiles)
  })

  it("leaves out files over the size limit without storing them, and a restore leaves them alone and names them", async () => {
    const root = initRepository()
    write(root, "small.txt", "small\n")
    commitAll(root)
    const ws = Path.join(root, "ws")
    write(ws, "x.txt", "x\n")
    const big = Buffer.alloc(5000, 7)
    write(ws, "big.bin", big)
    const blob = execFileSync("git", ["hash-object", "--stdin"], { cwd: root, input: big }).toString().trim()
    const checkpoint = await run(
      capture({ workspace: ws, threadId: "thr/r 1", ordinal: 1, previous: null, maxFileBytes: 4096 })
    )
    expect(checkpoint.omitted).toEqual([{ path: "big.bin", bytes: 5000 }])
    expect(checkpoint.diff.map((entry) => entry.path)).toEqual(["ws/x.txt"])
    expect(() => sh(root, "cat-file", "-e", blob)).toThrow() // never written into the store
    expect(sh(root, "log", "-1", "--format=%B", checkpoint.commit)).toContain('skein-omitted: 5000 "ws/big.bin"')
    write(ws, "big.bin", Buffer.alloc(6000, 8))
    remove(ws, "x.txt")
    const outcome = await run(restore(params(ws, checkpoint.commit, "big")))
    expect(outcome).toMatchObject({
      created: ["x.txt"],
      deleted: [],
      reverted: [],
      omitted: [{ path: "big.bin", bytes: 5000 }]
    })
    expect(Fs.readFileSync(Path.join(ws, "big.bin"))).toEqual(Buffer.alloc(6000, 8))
  })

  it("names submodules inside the workspace and leaves their files alone", async () => {
    const inner = initRepository()
    write(inner, "lib.txt", "lib v1\n")
    commitAll(inner)
    const root = initRepository()
    write(root, "app.txt", "app v1\n")
    commitAll(root)
    sh(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", inner, "vendor/lib")
    sh(root, "commit", "-q", "-m", "submodule")
    const checkpoint = await run(capture({ workspace: root, threadId: "thr/r 1", ordinal: 1, previous: null }))
    write(root, "app.txt", "app v2\n")
    write(root, "vendor/lib/lib.txt", "changed inside the submodule\n")
    const outcome = await run(restore(params(root, checkpoint.commit, "sub")))
    expect(outcome).toMatchObject({ reverted: ["app.txt"], deleted: [], created: [], submodules: ["vendor/lib"] })
    expect(Fs.readFileSync(Path.join(root, "app.txt"), "utf8")).toBe("app v1\n")
    expect(Fs.readFileSync(Path.join(root, "vendor/lib/lib.txt"), "utf8")).toBe("changed inside the submodule\n")
  })

  it("prune keeps the newest runs and restore backups; a pruned checkpoint is refused before anything is written", async () => {
    const root = initRepository()
    write(root, "a.txt", "base\n")
    commitAll(root)
    const commits: Array<string> = []
    for (const ordinal of [1, 2, 3, 4]) {
      write(root, "a.txt", `run ${ordinal}\n`)
      commits.push(
        (await run(capture({ workspace: root, threadId: "thr/r 1", ordinal, previous: commits.at(-1) ?? null }))).commit
      )
    }
    for (const id of ["b1", "b2", "b3", "b4"]) await run(restore(params(root, commits[3]!, id)))
    await run(prune({ workspace: root, threadId: "thr/r 1", keepRuns: 2, keepRestores: 2 }))
    const names = refs(root)
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ")[0])
    expect(names.filter((name) => !name!.includes("restore-"))).toEqual([
      "refs/skein/thr%2Fr%201/3",
      "refs/skein/thr%2Fr%201/4"
    ])
    expect(names.filter((name) => name!.includes("restore-"))).toHaveLength(2)
    // Gone from the repository once git collects it (the newest commits hold run 3 as a parent: collect run 1).
    sh(root, "reflog", "expire", "--expire=now", "--all")
    sh(root, "gc", "-q", "--prune=now")
    expect(await run(checkpointExists({ workspace: root, commit: commits[0]! }))).toBe(false)
    expect(await run(checkpointExists({ workspace: root, commit: commits[3]! }))).toBe(true)
    write(root, "a.txt", "user's\n")
    const refsBefore = refs(root)
    const refused = await runEither(restore(params(root, commits[0]!, "late")))
    expect(refused._tag === "Left" && refused.left.message).toContain(
      `the checkpoint ${commits[0]} is no longer in the repository`
    )
    expect(refs(root)).toBe(refsBefore)
    expect(Fs.readFileSync(Path.join(root, "a.txt"), "utf8")).toBe("user's\n")
  })
})

describe("temporary directories", () => {
  it("are named with their process's id; a sweep removes a dead process's and old unnamed ones only", async () => {
    const made = TemporaryDirectories.make("skein-git")
    expect(Path.basename(made)).toMatch(new RegExp(`^skein-git-${process.pid}-[A-Za-z0-9]{6}$`))
    Fs.rmSync(made, { recursive: true })
    const dir = tempDir()
    const dead = Number(execFileSync("sh", ["-c", "echo $$"]).toString().trim())
    const names = [
      `skein-git-${dead}-aaaaaa`,
      `skein-git-writer-${dead}-bbbbbb`,
      `skein-git-${process.pid}-cccccc`,
      `skein-git-writer-1-dddddd`, // pid 1 lives
      "skein-git-eeeeee", // unnamed, old
      "skein-git-writer-ffffff", // unnamed, new
      "skein-git-test-gggggg"
    ]
    for (const name of names) Fs.mkdirSync(Path.join(dir, name, "inner"), { recursive: true })
    const hoursAgo = (Date.now() - 2 * 3600_000) / 1000
    Fs.utimesSync(Path.join(dir, "skein-git-eeeeee"), hoursAgo, hoursAgo)
    expect(TemporaryDirectories.sweep(dir).sort()).toEqual(
      [`skein-git-${dead}-aaaaaa`, "skein-git-eeeeee", `skein-git-writer-${dead}-bbbbbb`].sort()
    )
    expect(Fs.readdirSync(dir).sort()).toEqual(
      [
        `skein-git-${process.pid}-cccccc`,
        "skein-git-writer-1-dddddd",
        "skein-git-writer-ffffff",
        "skein-git-test-gggggg"
      ].sort()
    )
  })
})

describe("WorkspaceCheckpoints", () => {
  it("takes the size limit as an option, and drops, checks and restores through the service", async () => {
    const root = initRepository()
    write(root, "a.txt", "a\n")
    commitAll(root)
    const thread = ThreadId.make("thr_service")
    const program = Effect.gen(function* () {
      const checkpoints = yield* WorkspaceCheckpoints
      write(root, "big.bin", Buffer.alloc(300, 1))
      const one = Option.getOrThrow(
        yield* checkpoints.capture({ workspace: root, threadId: thread, ordinal: 1, previous: Effect.succeed(null) })
      )
      write(root, "a.txt", "a2\n")
      const two = Option.getOrThrow(
        yield* checkpoints.capture({
          workspace: root,
          threadId: thread,
          ordinal: 2,
          previous: Effect.succeed(one.commit)
        })
      )
      yield* checkpoints.dropCheckpointsAfter(root, thread, 1)
      const outcome = yield* checkpoints.restore({
        workspace: root,
        threadId: thread,
        commit: one.commit,
        toRunOrdinal: 1,
        restoreId: "svc",
        dryRun: false
      })
      return { one, two, outcome, exists: yield* checkpoints.checkpointExists(root, "0".repeat(40)) }
    })
    const { exists, one, outcome } = await Effect.runPromise(
      Effect.provide(program, WorkspaceCheckpoints.layerWith({ maxFileBytes: 200 }))
    )
    expect(one.omitted).toEqual([{ path: "big.bin", bytes: 300 }])
    expect(
      refs(root)
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ")[0])
    ).toEqual(["refs/skein/thr_service/1", "refs/skein/thr_service/restore-svc"])
    expect(outcome).toMatchObject({ reverted: ["a.txt"], omitted: [{ path: "big.bin", bytes: 300 }] })
    expect(files(root)).toEqual({ "a.txt": "a\n", "big.bin": "\x01".repeat(300) })
    expect(exists).toBe(false)
  })
})
