/**
 * Workspace checkpoints in real git, leaving the user's repository as it was.
 *
 * A checkpoint is the work tree (tracked and untracked files, `.gitignore` honoured)
 * written as a tree and a commit under the hidden ref `refs/skein/<threadId>/<ordinal>`
 * (characters a ref name cannot hold are percent-encoded in the thread id).
 * Everything goes through a temporary index (`GIT_INDEX_FILE`) in a temporary
 * directory owned by a Scope, so HEAD, the index, branches, the stash and the work
 * tree are never touched by a capture; a restore changes the work tree only.
 *
 * git runs as child processes (see Git.ts: argument arrays, a closed environment, `-z`
 * output).
 *
 * Speed: the temporary index starts as a copy of the repository's own, so `git add -A`
 * rehashes only files whose stat changed (a fresh index would hash every file); once it
 * holds the work tree, the tree and the diff (`diff-index --cached`, index against the
 * base) are read side by side; the commit and its ref go through a GitWriter, which
 * can be a pair of long-lived processes so that they cost no process start-up.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { DiffEntry } from "@skein/domain"
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, git, GitError, gitRaw, notARepository } from "./Git.js"
import * as GitWriter from "./GitWriter.js"

export { GitError, GitExecutable } from "./Git.js"

/** A captured checkpoint: its hidden ref, commit and tree, and what changed since the previous one. */
export interface GitCheckpoint {
  readonly ref: string
  readonly commit: string
  readonly tree: string
  readonly diff: ReadonlyArray<DiffEntry>
}

// ---------------------------------------------------------------------------------------
// The repository and a temporary index

const fileSystem = <A>(what: string, f: () => A) =>
  Effect.try({
    try: f,
    catch: (error) =>
      new GitError({
        command: what,
        detail: error instanceof Error ? error.message : String(error),
        reason: "failed"
      })
  })

/**
 * Where git keeps the index of the work tree holding `workspace`, found the way git
 * finds it (the nearest `.git` directory, or a `.git` file naming one), or undefined.
 * It only seeds a temporary index: git itself decides which repository it works on, and
 * a missing or wrong seed would cost time, never change a checkpoint.
 */
const indexOf = (workspace: string): string | undefined => {
  for (let dir = Path.resolve(workspace); ; dir = Path.dirname(dir)) {
    const dotGit = Path.join(dir, ".git")
    const stat = Fs.statSync(dotGit, { throwIfNoEntry: false })
    if (stat?.isDirectory()) return Path.join(dotGit, "index")
    if (stat?.isFile()) {
      const gitdir = /^gitdir: (.+)$/m.exec(Fs.readFileSync(dotGit, "utf8"))?.[1]
      return gitdir === undefined ? undefined : Path.join(Path.resolve(dir, gitdir.trim()), "index")
    }
    if (Path.dirname(dir) === dir) return undefined
  }
}

/**
 * A temporary index, removed with the scope: a copy of the repository's index when there
 * is one, so that git trusts its cached file stats and rehashes only what changed. The
 * copy keeps the original's modification time (rounded down), since git judges whether
 * a cached stat can be trusted by comparing it with the index file's own time.
 */
export const temporaryIndex = (workspace: string): Effect.Effect<string, GitError, Scope.Scope> =>
  Effect.flatMap(
    Effect.acquireRelease(
      fileSystem("create a temporary index", () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-git-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) =>
      fileSystem("copy the repository's index", () => {
        const index = Path.join(dir, "index")
        const seed = indexOf(workspace)
        const stat = seed === undefined ? undefined : Fs.statSync(seed, { throwIfNoEntry: false, bigint: true })
        if (seed !== undefined && stat !== undefined) {
          Fs.copyFileSync(seed, index)
          const seconds = Number(stat.mtimeNs / 1_000_000n) / 1000
          Fs.utimesSync(index, seconds, seconds)
        }
        return index
      })
  )

// ---------------------------------------------------------------------------------------
// Names and ids

const objectId = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/

const checkObjectId = (what: string, value: string) =>
  objectId.test(value)
    ? Effect.void
    : Effect.fail(
        new GitError({ command: what, detail: `${JSON.stringify(value)} is not a commit id`, reason: "failed" })
      )

/** A thread id as one ref name component: letters, digits, `_` and `-` kept, anything else percent-encoded. */
const refComponent = (threadId: string) =>
  Array.from(new TextEncoder().encode(threadId), (byte) => {
    const char = String.fromCharCode(byte)
    return /[A-Za-z0-9_-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }).join("")

const refPrefix = (threadId: string) => `refs/skein/${refComponent(threadId)}/`

/** Where a file restore saves the work tree before it changes a file. */
export const backupRefOf = (threadId: string, restoreId: string) => `${refPrefix(threadId)}restore-${restoreId}`

/** Whether `commit` is a commit of the repository holding `workspace` (a pruned checkpoint's is not). */
export const commitExists = (workspace: string, commit: string) =>
  Effect.map(gitRaw(["cat-file", "-e", `${commit}^{commit}`], { cwd: workspace }), (out) => out.code === 0)

const checkOrdinal = (what: string, ordinal: number) =>
  Number.isSafeInteger(ordinal) && ordinal >= 0
    ? Effect.void
    : Effect.fail(new GitError({ command: what, detail: `ordinal ${ordinal} is not a whole number`, reason: "failed" }))

// ---------------------------------------------------------------------------------------
// The diff summary

/**
 * Reads `git diff-index -r -z --raw --numstat`: first one raw record per path (`:modes
 * ids STATUS` then the path), then one `added TAB deleted TAB path` per path (`-` for
 * binary files, counted as 0).
 */
const parseDiff = (output: string): Array<DiffEntry> => {
  const fields = output.split("\0")
  const changes = new Map<string, DiffEntry["change"]>()
  const counts = new Map<string, readonly [number, number]>()
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!
    if (field === "") continue
    if (field.startsWith(":")) {
      const status = field.slice(field.lastIndexOf(" ") + 1)
      const path = fields[++i] ?? ""
      changes.set(path, status.startsWith("A") ? "add" : status.startsWith("D") ? "delete" : "modify")
    } else {
      const first = field.indexOf("\t")
      const second = field.indexOf("\t", first + 1)
      const count = (text: string) => (text === "-" ? 0 : Number.parseInt(text, 10))
      counts.set(field.slice(second + 1), [count(field.slice(0, first)), count(field.slice(first + 1, second))])
    }
  }
  return Array.from(changes, ([path, change]) => {
    const [additions, deletions] = counts.get(path) ?? [0, 0]
    return { path, change, additions, deletions }
  })
}

/** What the index holds against the tree-ish `base`, from `git diff-index --cached`. */
const diffSummary = (cwd: string, index: string, base: string) =>
  Effect.map(
    git(["diff-index", "--cached", "-r", "-z", "--no-renames", "--raw", "--numstat", base], { cwd, index }),
    parseDiff
  )

/** The empty tree, which git knows without storing it, in the repository's hash (told by the length of an id). */
const emptyTree = (like: string) =>
  like.length === 64
    ? "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    : "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

/** HEAD's tree, or None on an unborn branch. */
const headTree = (cwd: string) =>
  Effect.map(gitRaw(["rev-parse", "-q", "--verify", "HEAD^{tree}"], { cwd }), (out) =>
    out.code === 0 ? Option.some(out.stdout.trim()) : Option.none<string>()
  )

// ---------------------------------------------------------------------------------------
// The public face

/** The repository's top-level directory, or None when the workspace is not inside a git work tree. */
export const repositoryOf = (workspace: string): Effect.Effect<Option.Option<string>, GitError, CommandExecutor> => {
  const args = ["rev-parse", "--show-toplevel"]
  return Effect.flatMap(gitRaw(args, { cwd: workspace }), (out) =>
    out.code === 0
      ? Effect.succeedSome(out.stdout.replace(/\n$/, ""))
      : out.code === 128 && notARepository.test(out.stderr)
        ? Effect.succeedNone
        : Effect.fail(new GitError({ command: describe(args), detail: out.stderr.trim(), reason: "failed" }))
  )
}

/**
 * Captures the work tree under `refs/skein/<threadId>/<ordinal>` (replacing a ref of that
 * name). The commit's parent is `previous` when given; the diff summary is against
 * `previous`, or against HEAD's tree (the empty tree on an unborn branch) when null.
 */
export const capture = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly ordinal: number
  readonly previous: string | null
  /** Writes the commit and the ref; a process each unless given (see GitWriter). */
  readonly writer?: GitWriter.GitWriter | undefined
}): Effect.Effect<GitCheckpoint, GitError, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { previous, workspace: cwd } = input
      const writer = input.writer ?? GitWriter.oneShot(cwd)
      yield* checkOrdinal("git checkpoint", input.ordinal)
      if (previous !== null) yield* checkObjectId("git checkpoint", previous)
      const index = yield* temporaryIndex(cwd)
      const [, head] = yield* Effect.all(
        [git(["add", "-A"], { cwd, index }), previous === null ? headTree(cwd) : Effect.succeedNone],
        { concurrency: "unbounded" }
      )
      const ref = `${refPrefix(input.threadId)}${input.ordinal}`
      const message = `skein checkpoint ${ref}`
      // `^{commit}`: the diff also proves that `previous` is a commit of this repository.
      const base = previous === null ? Option.getOrNull(head) : `${previous}^{commit}`
      // The index now holds the work tree: its tree and the diff against the base (index
      // against a tree) are read from it side by side.
      const [tree, early] = yield* Effect.all(
        [
          Effect.map(git(["write-tree"], { cwd, index }), (out) => out.trim()),
          base === null ? Effect.succeedNone : Effect.asSome(diffSummary(cwd, index, base))
        ],
        { concurrency: "unbounded" }
      )
      // On an unborn branch the base is the empty tree, in the repository's hash.
      const diff = Option.isSome(early) ? early.value : yield* diffSummary(cwd, index, emptyTree(tree))
      // Only now the commit: a kept writer hashes the commit's text without checking its
      // parent, so nothing is written into the repository before the diff proved it.
      const commit = yield* writer.commit({ tree, parents: previous === null ? [] : [previous], message })
      yield* writer.setRef(ref, commit)
      return { ref, commit, tree, diff }
    })
  )

/**
 * Makes the work tree match a checkpoint: writes the files whose content differs,
 * removes files it does not hold (tracked ones, and untracked ones that are not
 * ignored), leaves ignored files alone. HEAD, the index, branches and the stash are
 * not touched. A path the checkpoint holds is written even where an ignored file now is.
 */
export const restore = (input: {
  readonly workspace: string
  readonly commit: string
}): Effect.Effect<void, GitError, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function* () {
      const cwd = input.workspace
      yield* checkObjectId("git restore checkpoint", input.commit)
      const index = yield* temporaryIndex(cwd)
      // The temporary index first takes the work tree as it is, so that git knows which
      // files are current and which are not ignored; then a one-tree reset moves both to
      // the checkpoint, writing only what differs and deleting what it does not hold.
      yield* git(["add", "-A"], { cwd, index })
      yield* git(["read-tree", "--reset", "-u", `${input.commit}^{tree}`], { cwd, index })
    })
  )

/** Deletes the thread's checkpoint refs after `ordinal` (all of them for 0), as a rollback does. */
export const dropAfter = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly ordinal: number
}): Effect.Effect<void, GitError, CommandExecutor> =>
  Effect.gen(function* () {
    const cwd = input.workspace
    yield* checkOrdinal("git drop checkpoints", input.ordinal)
    const prefix = refPrefix(input.threadId)
    const refs = yield* git(["for-each-ref", "--format=%(refname)", prefix], { cwd })
    const doomed = refs.split("\n").filter((ref) => {
      const rest = ref.slice(prefix.length)
      return ref.startsWith(prefix) && /^\d+$/.test(rest) && Number(rest) > input.ordinal
    })
    if (doomed.length === 0) return
    yield* git(["update-ref", "--stdin"], { cwd, stdin: doomed.map((ref) => `delete ${ref}\n`).join("") })
  })
