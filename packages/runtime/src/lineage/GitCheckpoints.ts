/**
 * Workspace checkpoints in real git, leaving the user's repository as it was.
 *
 * A checkpoint is the workspace's files (tracked and untracked, `.gitignore` honoured;
 * only paths inside the workspace, which may be a subdirectory of the repository)
 * written as a tree and a commit under the hidden ref `refs/skein/<threadId>/<ordinal>`
 * (characters a ref name cannot hold are percent-encoded in the thread id).
 * Everything goes through a temporary index (`GIT_INDEX_FILE`) in a temporary
 * directory owned by a Scope, so HEAD, the index, branches, the stash and the work
 * tree are never touched by a capture; a restore changes the workspace's files only,
 * after saving them under `refs/skein/<threadId>/restore-<restoreId>`.
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
import type { DiffEntry, OmittedFile } from "@skein/domain"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { git, GitError, gitRaw } from "./Git.js"
import * as GitWriter from "./GitWriter.js"
import {
  checkObjectId,
  checkOrdinal,
  deleteRefs,
  exclude,
  literal,
  locate,
  messageOf,
  nulSplit,
  objectId,
  type Place,
  refPrefix,
  scopeOf,
  temporaryIndex,
  underPrefix
} from "./GitWorkspace.js"

export { GitError, GitExecutable } from "./Git.js"
export { changes, restore, undoCommand } from "./GitRestore.js"
export { locate, omittedOf, type Place, repositoryOf } from "./GitWorkspace.js"

/** A captured checkpoint: its hidden ref, commit and tree, and what changed since the previous one. */
export interface GitCheckpoint {
  readonly ref: string
  readonly commit: string
  readonly tree: string
  /** Paths relative to the repository's top level (the workspace's own files only). */
  readonly diff: ReadonlyArray<DiffEntry>
  /** Files left out for their size, paths relative to the workspace. */
  readonly omitted: ReadonlyArray<OmittedFile>
}

/** The default per-file limit of a capture: larger files are left out of the checkpoint. */
export const DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024

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
const diffSummary = (cwd: string, index: string, base: string, spec: ReadonlyArray<string>) =>
  Effect.map(
    git(["diff-index", "--cached", "-r", "-z", "--no-renames", "--raw", "--numstat", base, "--", ...spec], {
      cwd,
      index
    }),
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

/**
 * Files over `limit` bytes among these paths (relative to the top): what a capture
 * leaves out. Only files whose content git would store anew are asked about.
 */
const oversized = (top: string, paths: ReadonlyArray<string>, limit: number): Array<OmittedFile> =>
  paths.flatMap((path) => {
    const stat = Fs.lstatSync(Path.join(top, path), { throwIfNoEntry: false })
    return stat?.isFile() && stat.size > limit ? [{ path, bytes: stat.size }] : []
  })

/**
 * Captures the workspace's files under `refs/skein/<threadId>/<ordinal>` (replacing a ref
 * of that name): only paths inside the workspace are taken from the work tree (the rest
 * of the tree is the repository's index as it is). The commit has no parent, so that
 * deleting older refs (`prune`, `dropAfter`) lets git collect what only they held; its
 * message names `previous` (`skein-previous: <id>`) when given. The diff summary, limited to the workspace and with paths relative to the
 * repository's top level, is against `previous`, or against HEAD's tree (the empty tree on
 * an unborn branch) when null. Files over `maxFileBytes` that git would store anew are
 * left out, never hashed, and named in `omitted` and in the commit's message.
 */
export const capture = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly ordinal: number
  readonly previous: string | null
  /** Writes the commit and the ref; a process each unless given (see GitWriter). */
  readonly writer?: GitWriter.GitWriter | undefined
  /** Where the workspace is, when already known (see `locate`). */
  readonly place?: Place | undefined
  readonly maxFileBytes?: number | undefined
}): Effect.Effect<GitCheckpoint, GitError, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { previous } = input
      yield* checkOrdinal("git checkpoint", input.ordinal)
      if (previous !== null) yield* checkObjectId("git checkpoint", previous)
      const place = input.place ?? (yield* locate(input.workspace))
      const cwd = place.top
      const writer = input.writer ?? GitWriter.oneShot(cwd)
      const spec = scopeOf(place.prefix)
      const limit = input.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES
      const index = yield* temporaryIndex(cwd)
      // What git would hash anew (changed tracked files, untracked ones not ignored) is
      // measured first, so that a file over the limit is never written into the store.
      const [changed, head] = yield* Effect.all(
        [
          git(["ls-files", "-z", "-m", "-o", "--exclude-standard", "--", ...spec], { cwd, index }),
          previous === null ? headTree(cwd) : Effect.succeedNone
        ],
        { concurrency: "unbounded" }
      )
      const omitted = oversized(cwd, nulSplit(changed), limit)
      yield* git(["add", "-A", "--", ...spec, ...omitted.map((file) => exclude(file.path))], { cwd, index })
      if (omitted.length > 0) {
        // A tracked file over the limit: its older content is not the checkpoint's either.
        yield* git(
          ["rm", "--cached", "-f", "-q", "--ignore-unmatch", "--", ...omitted.map((file) => literal(file.path))],
          {
            cwd,
            index
          }
        )
      }
      const ref = `${refPrefix(input.threadId)}${input.ordinal}`
      const message = messageOf(ref, previous, omitted)
      // `^{commit}`: the diff also proves that `previous` is a commit of this repository.
      const base = previous === null ? Option.getOrNull(head) : `${previous}^{commit}`
      const [tree, early] = yield* Effect.all(
        [
          Effect.map(git(["write-tree"], { cwd, index }), (out) => out.trim()),
          base === null ? Effect.succeedNone : Effect.asSome(diffSummary(cwd, index, base, spec))
        ],
        { concurrency: "unbounded" }
      )
      // On an unborn branch the base is the empty tree, in the repository's hash.
      const diff = Option.isSome(early) ? early.value : yield* diffSummary(cwd, index, emptyTree(tree), spec)
      // Only now the commit: nothing is written into the repository before the diff
      // proved `previous` (which the message names) a commit of it.
      const commit = yield* writer.commit({ tree, parents: [], message })
      yield* writer.setRef(ref, commit)
      return { ref, commit, tree, diff, omitted: omitted.map(underPrefix(place.prefix)) }
    })
  )

/** Whether `commit` is a commit the repository still holds (a pruned checkpoint is not). */
export const checkpointExists = (input: {
  readonly workspace: string
  readonly commit: string
  /** The checkpoint's ref: it must still point at the commit (a pruned checkpoint's does not). */
  readonly ref?: string | null | undefined
}): Effect.Effect<boolean, GitError, never> =>
  !objectId.test(input.commit)
    ? Effect.succeed(false)
    : input.ref == null
      ? Effect.map(
          gitRaw(["cat-file", "-e", `${input.commit}^{commit}`], { cwd: input.workspace }),
          (out) => out.code === 0
        )
      : Effect.map(
          gitRaw(["rev-parse", "-q", "--verify", `${input.ref}^{commit}`], { cwd: input.workspace }),
          (out) => out.code === 0 && out.stdout.trim() === input.commit
        )

/** Deletes the thread's checkpoint refs after `ordinal` (all of them for 0), as a rollback does; restore backups stay. */
export const dropAfter = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly ordinal: number
}): Effect.Effect<void, GitError, CommandExecutor> =>
  Effect.gen(function* () {
    yield* checkOrdinal("git drop checkpoints", input.ordinal)
    yield* deleteRefs(input.workspace, input.threadId, (refs) =>
      refs.filter((ref) => ref.ordinal !== null && ref.ordinal > input.ordinal)
    )
  })

/** How many restore backups of a thread `prune` keeps (the newest ones). */
export const KEEP_RESTORE_BACKUPS = 3

/**
 * Keeps only the newest `keepRuns` checkpoint refs of a thread (by ordinal) and its newest
 * `keepRestores` restore backups (by date); deletes the rest, so that git can collect
 * what only they held.
 */
export const prune = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly keepRuns: number
  readonly keepRestores?: number | undefined
}): Effect.Effect<void, GitError, CommandExecutor> =>
  Effect.gen(function* () {
    yield* checkOrdinal("git prune checkpoints", input.keepRuns)
    const keepRestores = input.keepRestores ?? KEEP_RESTORE_BACKUPS
    yield* checkOrdinal("git prune checkpoints", keepRestores)
    yield* deleteRefs(input.workspace, input.threadId, (refs) => {
      const runs = refs.filter((ref) => ref.ordinal !== null).sort((a, b) => b.ordinal! - a.ordinal!)
      const backups = refs.filter((ref) => ref.ordinal === null).sort((a, b) => b.date - a.date)
      return [...runs.slice(input.keepRuns), ...backups.slice(keepRestores)]
    })
  })
