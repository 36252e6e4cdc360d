/**
 * Git checkpoints against real git in temporary repositories: what a checkpoint holds,
 * its diff summary, restore, and that the user's repository (status, HEAD, index file,
 * branches, stash, other refs) is exactly as it was.
 */
import { NodeContext } from "@effect/platform-node"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { capture, dropAfter, GitExecutable, repositoryOf, restore } from "../../src/lineage/GitCheckpoints.js"
import { gitRaw } from "../../src/lineage/Git.js"
import { env, filesIn, remove, sh, tempDir as tempDirOf, write } from "./gitUser.js"

const tempDir = () => tempDirOf("skein-gitck-")

const files = (root: string) => filesIn(root, "hex")

/** Every directory under root except .git. */
const directories = (root: string, dir = ""): Array<string> =>
  Fs.readdirSync(Path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = dir === "" ? entry.name : `${dir}/${entry.name}`
    return entry.isDirectory() && rel !== ".git" ? [rel, ...directories(root, rel)] : []
  })

/** What the user sees of their repository. The index bytes are read first, before any other git command. */
const snapshot = (root: string) => {
  const index = Fs.readFileSync(Path.join(root, ".git", "index")).toString("hex")
  return {
    index,
    status: sh(root, "status", "--porcelain=v1", "-z", "--untracked-files=all"),
    head: sh(root, "symbolic-ref", "HEAD") + sh(root, "rev-parse", "HEAD"),
    branches: sh(root, "branch", "-a", "-v", "--no-abbrev"),
    stash: sh(root, "stash", "list", "--format=%H %s"),
    refs: sh(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags", "refs/stash")
  }
}

/** Paths of a tree, and each file's bytes as hex. */
const treeFiles = (root: string, tree: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const path of sh(root, "ls-tree", "-r", "-z", "--name-only", tree)
    .split("\0")
    .filter((p) => p !== "")) {
    out[path] = execFileSync("git", ["cat-file", "blob", `${tree}:${path}`], { cwd: root, env: env(root) }).toString(
      "hex"
    )
  }
  return out
}

let restores = 0
/** A restore of `commit` into `workspace` with a restore id of its own. */
const restoring = (workspace: string, commit: string, restoreId = `r${++restores}`) => ({
  workspace,
  threadId: "thr_restore",
  commit,
  toRunOrdinal: 1,
  restoreId,
  dryRun: false
})

const hex = (text: string) => Buffer.from(text).toString("hex")

const run = <A, E>(effect: Effect.Effect<A, E, CommandExecutor>) =>
  Effect.runPromise(Effect.provide(effect, NodeContext.layer))

const runEither = <A, E>(effect: Effect.Effect<A, E, CommandExecutor>) => run(Effect.either(effect))

/**
 * A repository with history, a second branch, a stash entry, a staged change, and then
 * in the work tree: a modified, a deleted, an untracked and two ignored files.
 */
const busyRepository = () => {
  const root = tempDir()
  sh(root, "init", "-q", "-b", "main")
  write(root, ".gitignore", "*.log\nbuild/\n")
  write(root, "a.txt", "one\ntwo\nthree\n")
  write(root, "b.txt", "b\n")
  write(root, "c.txt", "c1\nc2\nc3\n")
  write(root, "dir/d.txt", "d\n")
  write(root, "bin.dat", new Uint8Array([0, 1, 2, 0, 255]))
  sh(root, "add", "-A")
  sh(root, "commit", "-q", "-m", "first")
  sh(root, "branch", "side")
  write(root, "b.txt", "stashed\n")
  sh(root, "stash", "push", "-q", "-m", "kept")
  write(root, "b.txt", "b2\n")
  sh(root, "add", "b.txt") // staged: the index differs from HEAD
  write(root, "a.txt", "one\nTWO\nthree\nfour\n") // modified, not staged
  remove(root, "c.txt") // deleted, not staged
  write(root, "new.txt", "x\ny\n") // untracked
  write(root, "app.log", "ignored\n")
  write(root, "build/out.js", "ignored too\n")
  return root
}

describe("GitCheckpoints", () => {
  it("capture writes the work tree (tracked and untracked, not ignored) under a hidden ref, with an exact diff", async () => {
    const root = busyRepository()
    const before = snapshot(root)
    const first = await run(capture({ workspace: root, threadId: "thr_a", ordinal: 1, previous: null }))
    expect(snapshot(root)).toEqual(before)

    expect(first.ref).toBe("refs/skein/thr_a/1")
    expect(sh(root, "rev-parse", first.ref).trim()).toBe(first.commit)
    expect(sh(root, "rev-parse", `${first.commit}^{tree}`).trim()).toBe(first.tree)
    expect(sh(root, "rev-list", "--parents", "-n", "1", first.commit).trim()).toBe(first.commit) // no parent
    // Made without any user configuration: Skein is author and committer.
    expect(sh(root, "log", "-1", "--format=%an <%ae> / %cn <%ce>", first.commit).trim()).toBe(
      "Skein <skein@localhost> / Skein <skein@localhost>"
    )
    const working = files(root)
    expect(treeFiles(root, first.tree)).toEqual({
      ".gitignore": working[".gitignore"],
      "a.txt": hex("one\nTWO\nthree\nfour\n"),
      "b.txt": hex("b2\n"),
      "bin.dat": "00010200ff",
      "dir/d.txt": hex("d\n"),
      "new.txt": hex("x\ny\n")
    })
    // Against HEAD's tree when there is no previous checkpoint.
    expect(first.diff).toEqual([
      { path: "a.txt", change: "modify", additions: 2, deletions: 1 },
      { path: "b.txt", change: "modify", additions: 1, deletions: 1 },
      { path: "c.txt", change: "delete", additions: 0, deletions: 3 },
      { path: "new.txt", change: "add", additions: 2, deletions: 0 }
    ])

    // The next run: a binary change (0/0), a deletion, an edit, a new ignored file.
    write(root, "bin.dat", new Uint8Array([0, 9, 9, 0]))
    remove(root, "dir/d.txt")
    write(root, "new.txt", "x\nz\nw\n")
    write(root, "more.log", "ignored\n")
    const middle = snapshot(root)
    const second = await run(capture({ workspace: root, threadId: "thr_a", ordinal: 2, previous: first.commit }))
    expect(snapshot(root)).toEqual(middle)
    expect(second.ref).toBe("refs/skein/thr_a/2")
    // No parent (pruned refs free their objects); the message names the previous checkpoint.
    expect(sh(root, "rev-list", "--parents", "-n", "1", second.commit).trim()).toBe(second.commit)
    expect(sh(root, "log", "-1", "--format=%B", second.commit)).toBe(
      `skein checkpoint refs/skein/thr_a/2\n\nskein-previous: ${first.commit}\n\n`
    )
    expect(second.diff).toEqual([
      { path: "bin.dat", change: "modify", additions: 0, deletions: 0 },
      { path: "dir/d.txt", change: "delete", additions: 0, deletions: 1 },
      { path: "new.txt", change: "modify", additions: 2, deletions: 1 }
    ])
    expect(Object.keys(treeFiles(root, second.tree))).toEqual([".gitignore", "a.txt", "b.txt", "bin.dat", "new.txt"])
    // Nothing changed: the same tree, an empty diff.
    const third = await run(capture({ workspace: root, threadId: "thr_a", ordinal: 3, previous: second.commit }))
    expect(third.tree).toBe(second.tree)
    expect(third.diff).toEqual([])
  })

  it("restore brings the checkpoint back byte for byte and leaves ignored files alone", async () => {
    const root = busyRepository()
    const before = snapshot(root)
    const atCapture = files(root)
    const checkpoint = await run(capture({ workspace: root, threadId: "thr_r", ordinal: 1, previous: null }))

    // An agent's run: edits, deletions of tracked and untracked files, new files and
    // directories, and changes to ignored files.
    write(root, "a.txt", "rewritten\n")
    remove(root, "b.txt")
    remove(root, "new.txt")
    remove(root, "dir")
    write(root, "later.txt", "later\n")
    write(root, "deep/er/x.txt", "x\n")
    write(root, "app.log", "changed ignored\n")
    write(root, "deep/keep.log", "ignored in a new directory\n")
    write(root, "z.log", "new ignored\n")
    Fs.chmodSync(Path.join(root, "bin.dat"), 0o755)

    await run(restore(restoring(root, checkpoint.commit)))
    expect(files(root)).toEqual({
      ...atCapture,
      "app.log": hex("changed ignored\n"),
      "deep/keep.log": hex("ignored in a new directory\n"),
      "z.log": hex("new ignored\n")
    })
    expect(Fs.statSync(Path.join(root, "bin.dat")).mode & 0o111).toBe(0)
    expect(directories(root).sort()).toEqual(["build", "deep", "dir"]) // deep/er went with its file
    expect(snapshot(root)).toEqual(before)

    // Restoring an older checkpoint after a newer one, and the newer one again.
    write(root, "new.txt", "second\n")
    const second = await run(capture({ workspace: root, threadId: "thr_r", ordinal: 2, previous: checkpoint.commit }))
    const atSecond = files(root)
    await run(restore(restoring(root, checkpoint.commit)))
    expect(files(root)["new.txt"]).toBe(hex("x\ny\n"))
    await run(restore(restoring(root, second.commit)))
    expect(files(root)).toEqual(atSecond)
  })

  it("keeps file names with spaces, unicode, newlines, tabs, quotes, dashes and colons", async () => {
    const root = tempDir()
    sh(root, "init", "-q", "-b", "main") // unborn: the first diff is against the empty tree
    const names = [
      "with space.txt",
      "ünïcödé ✓.txt",
      "new\nline.txt",
      "tab\tname.txt",
      'quote"d.txt',
      "-rf",
      ":colon",
      "dir with space/ø.md"
    ]
    names.forEach((name, i) => write(root, name, `${i}\n`))
    const checkpoint = await run(capture({ workspace: root, threadId: "thr_n", ordinal: 1, previous: null }))
    const sorted = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    expect(Object.keys(treeFiles(root, checkpoint.tree))).toEqual(sorted)
    expect(checkpoint.diff).toEqual(sorted.map((path) => ({ path, change: "add", additions: 1, deletions: 0 })))
    const atCapture = files(root)
    for (const name of names) remove(root, name)
    write(root, "other name ✗.txt", "gone soon\n")
    await run(restore(restoring(root, checkpoint.commit)))
    expect(files(root)).toEqual(atCapture)
    expect(() => sh(root, "rev-parse", "-q", "--verify", "HEAD")).toThrow() // still unborn
    expect(Fs.existsSync(Path.join(root, ".git", "index"))).toBe(false) // never written
  })

  it("from a subdirectory takes and restores that directory only, whatever GIT_ variables the process has", async () => {
    const root = busyRepository()
    const before = snapshot(root)
    // Were any of these inherited, git would look at another repository, index or work tree.
    const elsewhere = tempDir()
    const variables = {
      GIT_DIR: elsewhere,
      GIT_WORK_TREE: elsewhere,
      GIT_INDEX_FILE: Path.join(elsewhere, "index"),
      GIT_CONFIG_PARAMETERS: "'core.quotepath'='on'"
    }
    Object.assign(process.env, variables)
    try {
      expect(await run(repositoryOf(Path.join(root, "dir")))).toEqual(Option.some(root))
      write(root, "dir/sub.txt", "in dir\n")
      const fromSub = await run(
        capture({ workspace: Path.join(root, "dir"), threadId: "thr_s", ordinal: 2, previous: null })
      )
      // The diff names the workspace's files only, relative to the top level as before.
      expect(fromSub.diff).toEqual([{ path: "dir/sub.txt", change: "add", additions: 1, deletions: 0 }])
      // Outside the workspace the tree is the user's index: new.txt (untracked) is not in it.
      expect(Object.keys(treeFiles(root, fromSub.tree))).toEqual([
        ".gitignore",
        "a.txt",
        "b.txt",
        "bin.dat",
        "c.txt",
        "dir/d.txt",
        "dir/sub.txt"
      ])
      remove(root, "new.txt")
      remove(root, "dir/sub.txt")
      const outcome = await run(restore(restoring(Path.join(root, "dir"), fromSub.commit)))
      expect(outcome.created).toEqual(["sub.txt"])
      expect(files(root)["dir/sub.txt"]).toBe(hex("in dir\n"))
      expect(files(root)["new.txt"]).toBeUndefined() // outside: not brought back
      write(root, "new.txt", "x\ny\n")
      remove(root, "dir/sub.txt")
    } finally {
      for (const name of Object.keys(variables)) delete process.env[name]
    }
    expect(snapshot(root)).toEqual(before)
    expect(Fs.readdirSync(elsewhere)).toEqual([])
  })

  it("repositoryOf finds the top level, and None outside a work tree", async () => {
    const root = busyRepository()
    expect(await run(repositoryOf(root))).toEqual(Option.some(root))
    const plain = tempDir()
    expect(await run(repositoryOf(plain))).toEqual(Option.none())
    expect(await run(repositoryOf(Path.join(root, ".git")))).toEqual(Option.none())
    const refused = await runEither(capture({ workspace: plain, threadId: "thr_p", ordinal: 1, previous: null }))
    expect(refused._tag === "Left" && refused.left.message).toMatch(/not inside a git work tree/)
  })

  it("a missing git binary and a failing git command are typed GitErrors that say what to do", async () => {
    const root = busyRepository()
    const missing = await runEither(
      repositoryOf(root).pipe(Effect.provideService(GitExecutable, Path.join(tempDir(), "no-git-here")))
    )
    expect(missing._tag).toBe("Left")
    if (missing._tag === "Left") {
      expect(missing.left._tag).toBe("GitError")
      expect(missing.left.reason).toBe("missing")
      expect(missing.left.message).toMatch(/no-git-here: not found.*Install git/)
    }
    // No git on the PATH at all.
    const path = process.env.PATH
    process.env.PATH = tempDir()
    const noPath = await runEither(capture({ workspace: root, threadId: "thr_e", ordinal: 1, previous: null })).finally(
      () => {
        process.env.PATH = path
      }
    )
    expect(noPath._tag === "Left" && noPath.left.reason).toBe("missing")
    expect(noPath._tag === "Left" && noPath.left.message).toMatch(/git: not found.*Install git/)
    // A commit id that names no object: git refuses, and the error carries its words.
    const unknown = await runEither(
      capture({ workspace: root, threadId: "thr_e", ordinal: 1, previous: "0".repeat(39) + "1" })
    )
    expect(unknown._tag === "Left" && unknown.left.reason).toBe("failed")
    expect(unknown._tag === "Left" && unknown.left.message).toContain("0".repeat(39) + "1")
    // Input that is not a commit id is refused before git runs.
    const bad = await runEither(restore(restoring(root, "--help")))
    expect(bad._tag === "Left" && bad.left.message).toMatch(/not a commit id/)
    expect(sh(root, "for-each-ref", "refs/skein")).toBe("")
  })

  it("a working directory that is gone is told from a missing git; an interrupted git process group is ended", async () => {
    const gone = Path.join(tempDir(), "gone")
    const refused = await runEither(gitRaw(["status"], { cwd: gone }))
    expect(refused._tag === "Left" && refused.left.reason).toBe("failed")
    expect(refused._tag === "Left" && refused.left.message).toContain(`the directory ${gone} cannot be used`)
    // A "git" that writes its pid and its child's, then waits: interrupting the call ends both.
    const dir = tempDir()
    const fake = Path.join(dir, "slow-git")
    const pids = Path.join(dir, "pids")
    Fs.writeFileSync(fake, `#!/bin/sh\nsleep 30 &\necho "$$ $!" > "${pids}"\nwait\n`)
    Fs.chmodSync(fake, 0o755)
    const interrupted = await Effect.runPromise(
      gitRaw(["status"], { cwd: dir }).pipe(
        Effect.provideService(GitExecutable, fake),
        Effect.timeoutOption("1 second"),
        Effect.map(Option.isNone)
      )
    )
    expect(interrupted).toBe(true)
    const [shell, sleeper] = Fs.readFileSync(pids, "utf8").trim().split(" ").map(Number)
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0)
        return true
      } catch {
        return false
      }
    }
    const deadline = Date.now() + 5000
    while ((alive(shell!) || alive(sleeper!)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
    expect([alive(shell!), alive(sleeper!)]).toEqual([false, false])
  })

  it("dropAfter deletes the thread's refs after an ordinal, and only those", async () => {
    const root = busyRepository()
    const thread = "thr/odd id" // made safe as one ref component
    let previous: string | null = null
    for (const ordinal of [1, 2, 3, 10]) {
      write(root, "new.txt", `${ordinal}\n`)
      previous = (await run(capture({ workspace: root, threadId: thread, ordinal, previous }))).commit
    }
    await run(capture({ workspace: root, threadId: "thr_other", ordinal: 5, previous: null }))
    const refs = () => sh(root, "for-each-ref", "--format=%(refname)", "refs/skein").split("\n").filter(Boolean)
    expect(refs()).toEqual([
      "refs/skein/thr%2Fodd%20id/1",
      "refs/skein/thr%2Fodd%20id/10",
      "refs/skein/thr%2Fodd%20id/2",
      "refs/skein/thr%2Fodd%20id/3",
      "refs/skein/thr_other/5"
    ])
    await run(dropAfter({ workspace: root, threadId: thread, ordinal: 2 }))
    expect(refs()).toEqual(["refs/skein/thr%2Fodd%20id/1", "refs/skein/thr%2Fodd%20id/2", "refs/skein/thr_other/5"])
    await run(dropAfter({ workspace: root, threadId: thread, ordinal: 0 }))
    expect(refs()).toEqual(["refs/skein/thr_other/5"])
  })
})
