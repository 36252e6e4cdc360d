/**
 * A workspace's files put back as a checkpoint holds them, in real git: the files that
 * would change (`changes`), the restore itself (the files first saved under a backup
 * ref, then written; HEAD, the index and branches untouched), and the command that
 * undoes it.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { RestoreOutcome } from "@skein/domain"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { git, GitError, gitRaw } from "./Git.js"
import type { GitRun } from "./Git.js"
import {
  checkObjectId,
  checkOrdinal,
  exclude,
  fileSystem,
  literal,
  locate,
  nulSplit,
  omittedOf,
  type Place,
  refComponent,
  refPrefix,
  scopeOf,
  temporaryIndex,
  underPrefix
} from "./GitWorkspace.js"

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

/** A git command in the restore's repository, on its temporary index (and, in a dry run, object directory). */
type RunGit = (args: ReadonlyArray<string>, extra?: Partial<GitRun>) => Effect.Effect<string, GitError>

/** The checkpoint's commit, read whole (its message names the omitted files); refused when it is gone. */
const readCheckpoint = (cwd: string, commit: string, what: string) =>
  Effect.flatMap(gitRaw(["cat-file", "commit", commit], { cwd }), (read) =>
    read.code === 0
      ? Effect.succeed(read.stdout)
      : Effect.fail(
          new GitError({
            command: what,
            detail: `the checkpoint ${commit} is no longer in the repository (its refs were pruned or dropped); nothing was changed. Pick a later checkpoint.`,
            reason: "failed"
          })
        )
  )

/**
 * The work tree inside the workspace as a tree, as it is now: tracked and untracked
 * files that are not ignored, and ignored files at paths the checkpoint holds (which it
 * would overwrite).
 */
const workTreeNow = (run: RunGit, spec: ReadonlyArray<string>, checkpointEntries: ReadonlyArray<TreeEntry>) =>
  Effect.gen(function* () {
    // (Files ignored and untracked are the same before and after the add: asked beside it.)
    const [, ignoredNow] = yield* Effect.all(
      [run(["add", "-A", "--", ...spec]), run(["ls-files", "-z", "-o", "-i", "--exclude-standard", "--", ...spec])],
      { concurrency: "unbounded" }
    )
    const ignored = new Set(nulSplit(ignoredNow))
    const overwritten = checkpointEntries.filter((entry) => entry.mode !== GITLINK && ignored.has(entry.path))
    if (overwritten.length > 0) yield* run(["add", "-f", "--", ...overwritten.map((entry) => literal(entry.path))])
    return (yield* run(["write-tree"])).trim()
  })

/** The backup of tree `now` under `backupRef`, created only: when another attempt made it first, that one. */
const makeBackup = (run: RunGit, cwd: string, backupRef: string, commit: string, now: string) =>
  Effect.gen(function* () {
    const made = (yield* run([
      "commit-tree",
      "--no-gpg-sign",
      "-m",
      `skein restore backup ${backupRef}: the work tree before checkpoint ${commit} was restored`,
      now
    ])).trim()
    const created = yield* gitRaw(["update-ref", "--no-deref", backupRef, made, zeroId(made)], { cwd })
    return created.code === 0 ? made : (yield* git(["rev-parse", "--verify", `${backupRef}^{commit}`], { cwd })).trim()
  })

/**
 * Moves the work tree inside the workspace to the checkpoint's files: the temporary
 * index is cut down to what the restore may change, then reset to the target tree.
 */
const writeCheckpoint = (
  run: RunGit,
  input: {
    readonly scratch: string
    readonly prefix: string
    readonly commit: string
    readonly leftAlone: ReadonlySet<string>
    readonly checkpointEntries: ReadonlyArray<TreeEntry>
  }
) =>
  Effect.gen(function* () {
    const { checkpointEntries, commit, leftAlone, prefix } = input
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
        ? `${commit}^{tree}`
        : yield* Effect.gen(function* () {
            const target = Path.join(input.scratch, "target")
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
  })

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
      const commitText = yield* readCheckpoint(cwd, input.commit, what)
      const index = yield* temporaryIndex(cwd)
      const scratch = Path.dirname(index)
      const objects = input.dryRun ? { directory: Path.join(scratch, "objects"), repository: place.objects } : undefined
      if (objects !== undefined)
        yield* fileSystem("create a temporary object directory", () => Fs.mkdirSync(objects.directory))
      const run: RunGit = (args, extra = {}) => git(args, { cwd, index, objects, ...extra })

      const backupRef = `${refPrefix(input.threadId)}restore-${refComponent(input.restoreId)}`
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
      const now = yield* workTreeNow(run, spec, checkpointEntries)
      // The backup: kept when a former attempt made it, else made (create-only).
      const backupCommit =
        existing === null && !input.dryRun ? yield* makeBackup(run, cwd, backupRef, input.commit, now) : existing
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
        yield* writeCheckpoint(run, { scratch, prefix, commit: input.commit, leftAlone, checkpointEntries })
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
