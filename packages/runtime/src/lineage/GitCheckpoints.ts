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
import type { DiffEntry, OmittedFile, RestoreOutcome } from "@skein/domain"
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, git, GitError, gitRaw, notARepository } from "./Git.js"
import type { GitRun } from "./Git.js"
import * as GitWriter from "./GitWriter.js"
import * as TemporaryDirectories from "./TemporaryDirectories.js"

export { GitError, GitExecutable } from "./Git.js"

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
const temporaryIndex = (workspace: string): Effect.Effect<string, GitError, Scope.Scope> =>
  Effect.flatMap(
    Effect.acquireRelease(
      fileSystem("create a temporary index", () => TemporaryDirectories.make("skein-git")),
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
 * Where a workspace sits in its repository: the top level (every command below runs
 * there), the workspace's path from it (`""` at the top, else ending in `/`), and the
 * repository's object directory.
 */
export interface Place {
  readonly top: string
  readonly prefix: string
  readonly objects: string
}

export const locate = (workspace: string): Effect.Effect<Place, GitError, never> =>
  Effect.map(
    git(["rev-parse", "--show-toplevel", "--show-prefix", "--git-path", "objects"], { cwd: workspace }),
    (out) => {
      const [top = "", prefix = "", objects = ""] = out.replace(/\n$/, "").split("\n")
      return { top, prefix, objects: Path.resolve(workspace, objects) }
    }
  )

/** The pathspec of the workspace (none at the top: the whole tree), anchored at the top, taken literally. */
const scopeOf = (prefix: string): Array<string> => (prefix === "" ? [] : [`:(top,literal)${prefix.slice(0, -1)}`])
const literal = (path: string) => `:(top,literal)${path}`
const exclude = (path: string) => `:(exclude,top,literal)${path}`

/**
 * Files over `limit` bytes among these paths (relative to the top): what a capture
 * leaves out. Only files whose content git would store anew are asked about.
 */
const oversized = (top: string, paths: ReadonlyArray<string>, limit: number): Array<OmittedFile> =>
  paths.flatMap((path) => {
    const stat = Fs.lstatSync(Path.join(top, path), { throwIfNoEntry: false })
    return stat?.isFile() && stat.size > limit ? [{ path, bytes: stat.size }] : []
  })

const nulSplit = (out: string) => out.split("\0").filter((field) => field !== "")

/**
 * The checkpoint commit's message names its omitted files, one line each:
 * `skein-omitted: <bytes> <path relative to the top, as JSON>`, so that a restore can name
 * them from the repository alone.
 */
const OMITTED_LINE = "skein-omitted: "

const messageOf = (ref: string, previous: string | null, omitted: ReadonlyArray<OmittedFile>) =>
  [
    `skein checkpoint ${ref}`,
    "",
    ...(previous === null ? [] : [`skein-previous: ${previous}`]),
    ...omitted.map((file) => `${OMITTED_LINE}${file.bytes} ${JSON.stringify(file.path)}`)
  ].join("\n")

export const omittedOf = (commitText: string): Array<OmittedFile> => {
  const message = commitText.slice(commitText.indexOf("\n\n") + 2)
  return message.split("\n").flatMap((line) => {
    const match = /^skein-omitted: (\d+) (".*")$/.exec(line)
    if (match === null) return []
    try {
      return [{ path: JSON.parse(match[2]!) as string, bytes: Number(match[1]) }]
    } catch {
      return []
    }
  })
}

const underPrefix = (prefix: string) => (file: OmittedFile) => ({ ...file, path: file.path.slice(prefix.length) })

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

/** One entry of `git ls-tree -r -z`: mode, type, id, path (from the top). */
interface TreeEntry {
  readonly mode: string
  readonly id: string
  readonly path: string
}

const lsTree = (cwd: string, tree: string, prefix: string, objects: GitRun["objects"]) =>
  Effect.map(
    git(["ls-tree", "-r", "-z", "--full-name", tree, ...(prefix === "" ? [] : ["--", prefix])], { cwd, objects }),
    (out) =>
      nulSplit(out).map((line): TreeEntry => {
        const tab = line.indexOf("\t")
        const [mode = "", , id = ""] = line.slice(0, tab).split(" ")
        return { mode, id, path: line.slice(tab + 1) }
      })
  )

const GITLINK = "160000"

/** The zero id in the repository's hash, told by the length of an id. */
const zeroId = (like: string) => "0".repeat(like.length)

/** A word for a POSIX shell, quoted. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`

/**
 * How to put the work tree back as it was before a restore: every file of the backup
 * written back (in no-overlay mode, files the user's index tracks that the backup does
 * not hold are removed), then the files the restore created removed.
 */
export const undoCommand = (workspace: string, backupCommit: string, created: ReadonlyArray<string>) =>
  [
    `cd ${quote(workspace)}`,
    `git restore --source=${backupCommit} --worktree -- .`,
    ...(created.length === 0 ? [] : [`rm -f -- ${created.map(quote).join(" ")}`])
  ].join(" && ")

/**
 * What a restore changes, from the tree before it against the checkpoint's, within the
 * workspace (paths relative to it, sorted): omitted files and submodules apart.
 */
export const changes = (
  diffTree: string,
  prefix: string,
  leftAlone: ReadonlySet<string>
): { reverted: Array<string>; deleted: Array<string>; created: Array<string> } => {
  const out = { reverted: [] as Array<string>, deleted: [] as Array<string>, created: [] as Array<string> }
  const fields = nulSplit(diffTree)
  for (let i = 0; i < fields.length; i += 2) {
    const [from = "", to = "", , , status = ""] = fields[i]!.slice(1).split(" ")
    const path = fields[i + 1] ?? ""
    if (from === GITLINK || to === GITLINK || leftAlone.has(path)) continue
    const relative = path.slice(prefix.length)
    if (status.startsWith("A")) out.created.push(relative)
    else if (status.startsWith("D")) out.deleted.push(relative)
    else out.reverted.push(relative)
  }
  const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))
  out.reverted.sort(byBytes)
  out.deleted.sort(byBytes)
  out.created.sort(byBytes)
  return out
}

/**
 * Makes the workspace's files match a checkpoint, and nothing outside the workspace.
 *
 * 1. Refused before anything is written when the checkpoint is no longer in the repository.
 * 2. The work tree inside the workspace (tracked and untracked files that are not
 *    ignored, and ignored files at paths the checkpoint holds, which it would overwrite)
 *    is saved as a commit under `refs/skein/<thread>/restore-<restoreId>`, created only:
 *    a retry finds it and uses it as the state before the restore.
 * 3. The outcome (reverted, deleted, created) is the backup's tree against the
 *    checkpoint's within the workspace: the same for a first attempt and a retry.
 * 4. A temporary index holding only the workspace's files is moved to the checkpoint's
 *    (`read-tree --reset -u`): files that differ are written, files it does not hold are
 *    removed; ignored files it does not hold, files the checkpoint omitted for their size
 *    and submodules are left alone. HEAD, the index, branches and the stash are not
 *    touched.
 *
 * A dry run does steps 1-3 with its new objects in a temporary object directory: no
 * file of the repository or the work tree changes, no ref.
 */
export const restore = (input: {
  readonly workspace: string
  readonly threadId: string
  readonly commit: string
  readonly toRunOrdinal: number
  readonly restoreId: string
  readonly dryRun: boolean
  readonly place?: Place | undefined
}): Effect.Effect<RestoreOutcome, GitError, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function* () {
      const what = "git restore checkpoint"
      yield* checkObjectId(what, input.commit)
      yield* checkOrdinal(what, input.toRunOrdinal)
      if (input.restoreId === "") {
        return yield* Effect.fail(new GitError({ command: what, detail: "the restore id is empty", reason: "failed" }))
      }
      const place = input.place ?? (yield* locate(input.workspace))
      const cwd = place.top
      const { prefix } = place
      const spec = scopeOf(prefix)
      // The checkpoint's commit, read whole (its message names the omitted files).
      const read = yield* gitRaw(["cat-file", "commit", input.commit], { cwd })
      if (read.code !== 0) {
        return yield* Effect.fail(
          new GitError({
            command: what,
            detail: `the checkpoint ${input.commit} is no longer in the repository (its refs were pruned or dropped); nothing was changed. Pick a later checkpoint.`,
            reason: "failed"
          })
        )
      }
      const index = yield* temporaryIndex(cwd)
      const scratch = Path.dirname(index)
      const objects = input.dryRun ? { directory: Path.join(scratch, "objects"), repository: place.objects } : undefined
      if (objects !== undefined)
        yield* fileSystem("create a temporary object directory", () => Fs.mkdirSync(objects.directory))
      const run = (args: ReadonlyArray<string>, extra: Partial<GitRun> = {}) =>
        git(args, { cwd, index, objects, ...extra })

      const backupRef = `${refPrefix(input.threadId)}restore-${refComponent(input.restoreId)}`
      const commitText = read.stdout
      const [checkpointEntries, existing] = yield* Effect.all(
        [
          lsTree(cwd, input.commit, prefix, undefined),
          Effect.map(gitRaw(["rev-parse", "-q", "--verify", `${backupRef}^{commit}`], { cwd }), (out) =>
            out.code === 0 ? out.stdout.trim() : null
          )
        ],
        { concurrency: "unbounded" }
      )
      const omittedTop = omittedOf(commitText).filter((file) => file.path.startsWith(prefix))

      // The work tree inside the workspace, as it is now.
      // (Files ignored and untracked are the same before and after the add: asked beside it.)
      const [, ignoredNow] = yield* Effect.all(
        [run(["add", "-A", "--", ...spec]), run(["ls-files", "-z", "-o", "-i", "--exclude-standard", "--", ...spec])],
        { concurrency: "unbounded" }
      )
      const ignored = new Set(nulSplit(ignoredNow))
      const overwritten = checkpointEntries.filter((entry) => entry.mode !== GITLINK && ignored.has(entry.path))
      if (overwritten.length > 0) yield* run(["add", "-f", "--", ...overwritten.map((entry) => literal(entry.path))])
      const now = (yield* run(["write-tree"])).trim()

      // The backup: kept when a former attempt made it, else made (create-only).
      let backupCommit = existing
      if (backupCommit === null && !input.dryRun) {
        const made = (yield* run([
          "commit-tree",
          "--no-gpg-sign",
          "-m",
          `skein restore backup ${backupRef}: the work tree before checkpoint ${input.commit} was restored`,
          now
        ])).trim()
        const created = yield* gitRaw(["update-ref", "--no-deref", backupRef, made, zeroId(made)], { cwd })
        backupCommit =
          created.code === 0 ? made : (yield* git(["rev-parse", "--verify", `${backupRef}^{commit}`], { cwd })).trim()
      }
      const before = backupCommit === null ? now : `${backupCommit}^{tree}`

      const [diffTree, beforeEntries] = yield* Effect.all(
        [
          run(["diff-tree", "-r", "-z", "--no-renames", "--raw", before, `${input.commit}^{tree}`, "--", ...spec]),
          lsTree(cwd, before, prefix, objects)
        ],
        { concurrency: "unbounded" }
      )
      const omittedPaths = new Set(omittedTop.map((file) => file.path))
      const submodulePaths = new Set(
        [...beforeEntries, ...checkpointEntries].filter((entry) => entry.mode === GITLINK).map((entry) => entry.path)
      )
      const leftAlone = new Set([...omittedPaths, ...submodulePaths])
      const listed = changes(diffTree, prefix, leftAlone)

      if (!input.dryRun) {
        // The index now holds only what the restore may change: the workspace's files,
        // less omitted files and submodules. Everything else is, to the reset, not there.
        // (Two commands: an exclude pathspec would also exclude the files left alone.)
        if (prefix !== "") {
          yield* run(["rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--", ":/", exclude(prefix.slice(0, -1))])
        }
        if (leftAlone.size > 0) {
          yield* run(["rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--", ...Array.from(leftAlone, literal)])
        }
        // The target: the checkpoint's files inside the workspace, nothing else (at the
        // top with nothing left alone, the checkpoint's own tree).
        const targetTree =
          prefix === "" && leftAlone.size === 0
            ? `${input.commit}^{tree}`
            : yield* Effect.gen(function* () {
                const target = Path.join(scratch, "target")
                yield* run(["update-index", "-z", "--index-info"], {
                  index: target,
                  stdin: checkpointEntries
                    .filter((entry) => !leftAlone.has(entry.path))
                    .map((entry) => `${entry.mode} ${entry.id}\t${entry.path}\0`)
                    .join("")
                })
                return (yield* run(["write-tree"], { index: target })).trim()
              })
        yield* run(["read-tree", "--reset", "-u", targetTree])
      }

      return {
        toRunOrdinal: input.toRunOrdinal,
        checkpointCommit: input.commit,
        workspace: input.workspace,
        dryRun: input.dryRun,
        backupRef: input.dryRun ? null : backupRef,
        backupCommit: input.dryRun ? null : backupCommit,
        ...listed,
        omitted: omittedTop.map(underPrefix(prefix)),
        submodules: Array.from(submodulePaths, (path) => path.slice(prefix.length)).sort(),
        undo: input.dryRun || backupCommit === null ? null : undoCommand(input.workspace, backupCommit, listed.created)
      } satisfies RestoreOutcome
    })
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

interface ThreadRef {
  readonly name: string
  /** The run's ordinal; null for a restore backup. */
  readonly ordinal: number | null
  readonly date: number
}

const deleteRefs = (workspace: string, threadId: string, choose: (refs: Array<ThreadRef>) => Array<ThreadRef>) =>
  Effect.gen(function* () {
    const prefix = refPrefix(threadId)
    const listed = yield* git(["for-each-ref", "--format=%(refname) %(committerdate:unix)", prefix], {
      cwd: workspace
    })
    const refs = listed.split("\n").flatMap((line): Array<ThreadRef> => {
      const space = line.lastIndexOf(" ")
      const name = line.slice(0, space)
      const rest = name.slice(prefix.length)
      if (!name.startsWith(prefix)) return []
      if (/^\d+$/.test(rest)) return [{ name, ordinal: Number(rest), date: Number(line.slice(space + 1)) }]
      if (rest.startsWith("restore-")) return [{ name, ordinal: null, date: Number(line.slice(space + 1)) }]
      return []
    })
    const doomed = choose(refs)
    if (doomed.length === 0) return
    yield* git(["update-ref", "--stdin"], {
      cwd: workspace,
      stdin: doomed.map((ref) => `delete ${ref.name}\n`).join("")
    })
  })
