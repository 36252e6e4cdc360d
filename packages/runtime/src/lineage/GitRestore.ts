/**
 * A file restore that never loses work: the workspace's files go back to a checkpoint,
 * and only the workspace's (it may be a subdirectory of the repository).
 *
 * 1. The work tree as it is, inside the workspace, is saved first as a commit under
 *    `refs/skein/<thread>/restore-<restoreId>`: tracked and untracked files, and any
 *    ignored file the restore would overwrite. The ref is created once: a restore run
 *    again after a crash keeps the first backup, the true state before it began.
 * 2. What changes is the backup's tree against the checkpoint's, within the workspace:
 *    files reverted, deleted, created. The same lists on every attempt.
 * 3. Deleted files are unlinked (each path checked to lie inside the workspace, and
 *    directories left empty by it removed); reverted and created ones are written by
 *    `git checkout-index` from a temporary index holding the checkpoint's tree, for
 *    those paths alone. HEAD, the user's index, branches and the stash are not touched.
 *
 * Files inside submodules are not restored (named in `submodules`); ignored files the
 * checkpoint does not hold are never removed.
 */
import type { OmittedFile, RestoreOutcome } from "@skein/domain"
import { Effect } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { git, GitError, gitRaw } from "./Git.js"

export interface RestoreInput {
  readonly workspace: string
  /** The checkpoint's commit. */
  readonly commit: string
  readonly toRunOrdinal: number
  /** Where the backup goes: created once, kept when it exists. */
  readonly backupRef: string
  readonly dryRun: boolean
  /** Files the checkpoint left out for their size (paths relative to the workspace). */
  readonly omitted: ReadonlyArray<OmittedFile>
  /** A temporary index file seeded from the repository's own (so `git add` rehashes only what changed). */
  readonly temporaryIndex: Effect.Effect<string, GitError, Scope.Scope>
}

const failed = (command: string, detail: string) => new GitError({ command, detail, reason: "failed" })

/** Paths from `-z` output. */
const fieldsOf = (output: string) => output.split("\0").filter((field) => field !== "")

/** A shell word: single-quoted. */
const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`

interface Layout {
  /** The repository's top level. */
  readonly top: string
  /** The workspace relative to it, `""` or ending in `/`. */
  readonly prefix: string
  /** A pathspec for the workspace, from the top level. */
  readonly pathspec: string
}

const layoutOf = (workspace: string) =>
  Effect.map(git(["rev-parse", "--show-toplevel", "--show-prefix"], { cwd: workspace }), (out): Layout => {
    const [top = workspace, prefix = ""] = out.split("\n")
    return { top, prefix, pathspec: prefix === "" ? ":(top)" : `:(top,literal)${prefix.slice(0, -1)}` }
  })

/** Gitlinks (submodules) of a tree within the workspace. */
const submodulesOf = (layout: Layout, tree: string) =>
  Effect.map(git(["ls-tree", "-r", "-z", "--full-tree", tree, "--", layout.pathspec], { cwd: layout.top }), (out) =>
    fieldsOf(out).flatMap((entry) => {
      const tab = entry.indexOf("\t")
      return entry.startsWith("160000 ") ? [entry.slice(tab + 1)] : []
    })
  )

/** Paths of a tree within the workspace (top-relative). */
const pathsOf = (layout: Layout, tree: string) =>
  Effect.map(
    git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", tree, "--", layout.pathspec], { cwd: layout.top }),
    fieldsOf
  )

/** The backup's commit: the ref's when it exists, else the work tree saved now (None for a dry run: its tree only). */
const backUp = (layout: Layout, input: RestoreInput, targetTree: string) =>
  Effect.gen(function* () {
    const existing = yield* gitRaw(["rev-parse", "-q", "--verify", `${input.backupRef}^{commit}`], { cwd: layout.top })
    if (existing.code === 0) {
      const commit = existing.stdout.trim()
      const tree = (yield* git(["rev-parse", `${commit}^{tree}`], { cwd: layout.top })).trim()
      return { commit, tree, fresh: false }
    }
    const index = yield* input.temporaryIndex
    const { top } = layout
    yield* git(["add", "-A", "--", layout.pathspec], { cwd: top, index })
    // Ignored files the restore would write over: saved too.
    const held = new Set(fieldsOf(yield* git(["ls-files", "-z", "--", layout.pathspec], { cwd: top, index })))
    const overwritten = (yield* pathsOf(layout, targetTree)).filter(
      (path) => !held.has(path) && Fs.lstatSync(Path.join(top, path), { throwIfNoEntry: false })?.isFile()
    )
    if (overwritten.length > 0) {
      yield* git(["add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"], {
        cwd: top,
        index,
        stdin: overwritten.map((path) => `:(top,literal)${path}\0`).join("")
      })
    }
    const tree = (yield* git(["write-tree"], { cwd: top, index })).trim()
    if (input.dryRun) return { commit: null, tree, fresh: false }
    const message = `skein restore backup: the work tree before the restore to run ${input.toRunOrdinal}`
    const commit = (yield* git(["commit-tree", "--no-gpg-sign", "-m", message, tree], { cwd: top })).trim()
    // Created only if absent: a concurrent or earlier attempt's backup wins.
    const created = yield* gitRaw(["update-ref", "--no-deref", input.backupRef, commit, ""], { cwd: top })
    if (created.code !== 0) {
      const winner = (yield* git(["rev-parse", `${input.backupRef}^{commit}`], { cwd: top })).trim()
      const winnerTree = (yield* git(["rev-parse", `${winner}^{tree}`], { cwd: top })).trim()
      return { commit: winner, tree: winnerTree, fresh: false }
    }
    return { commit, tree, fresh: true }
  })

/** Removes `path` (top-relative), then the directories it leaves empty, up to the workspace. */
const removeInside = (layout: Layout, workspace: string, path: string) =>
  Effect.try({
    try: () => {
      const absolute = Path.join(layout.top, path)
      const parent = Fs.realpathSync(Path.dirname(absolute))
      if (parent !== workspace && !parent.startsWith(`${workspace}${Path.sep}`)) {
        throw new Error(`${path} is not inside the workspace ${workspace}`)
      }
      const stat = Fs.lstatSync(absolute, { throwIfNoEntry: false })
      if (stat === undefined || stat.isDirectory()) return
      Fs.unlinkSync(absolute)
      for (let dir = parent; dir !== workspace && dir.startsWith(workspace); dir = Path.dirname(dir)) {
        if (Fs.readdirSync(dir).length > 0) break
        Fs.rmdirSync(dir)
      }
    },
    catch: (error) => failed(`remove ${path}`, error instanceof Error ? error.message : String(error))
  })

export const restore = (input: RestoreInput): Effect.Effect<RestoreOutcome, GitError, Scope.Scope> =>
  Effect.gen(function* () {
    if (!/^[0-9a-f]{40,64}$/.test(input.commit)) {
      return yield* failed("git restore checkpoint", `${JSON.stringify(input.commit)} is not a commit id`)
    }
    const workspace = Fs.realpathSync(input.workspace)
    const layout = yield* layoutOf(workspace)
    const target = (yield* git(["rev-parse", `${input.commit}^{tree}`], { cwd: layout.top })).trim()
    const backup = yield* backUp(layout, input, target)
    const [changes, before, after] = yield* Effect.all(
      [
        git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", backup.tree, target, "--", layout.pathspec], {
          cwd: layout.top
        }),
        submodulesOf(layout, backup.tree),
        submodulesOf(layout, target)
      ],
      { concurrency: "unbounded" }
    )
    const submodules = new Set([...before, ...after])
    const omitted = new Set(input.omitted.map((file) => `${layout.prefix}${file.path}`))
    const lists = { reverted: [] as Array<string>, deleted: [] as Array<string>, created: [] as Array<string> }
    const fields = fieldsOf(changes)
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [status, path] = [fields[i]!, fields[i + 1]!]
      if (submodules.has(path) || omitted.has(path)) continue
      const list = status === "A" ? lists.created : status === "D" ? lists.deleted : lists.reverted
      list.push(path)
    }
    const relative = (paths: ReadonlyArray<string>) => paths.map((path) => path.slice(layout.prefix.length)).sort()
    const outcome = (backupRef: string | null, backupCommit: string | null): RestoreOutcome => ({
      toRunOrdinal: input.toRunOrdinal,
      checkpointCommit: input.commit,
      workspace,
      dryRun: input.dryRun,
      backupRef,
      backupCommit,
      reverted: relative(lists.reverted),
      deleted: relative(lists.deleted),
      created: relative(lists.created),
      omitted: [...input.omitted],
      submodules: relative([...submodules]),
      undo:
        backupCommit === null
          ? null
          : [
              `git -C ${quote(workspace)} restore --overlay --source=${backupCommit} --worktree -- .`,
              ...(lists.created.length === 0
                ? []
                : [
                    `rm -f -- ${relative(lists.created)
                      .map((path) => quote(Path.join(workspace, path)))
                      .join(" ")}`
                  ])
            ].join(" && ")
    })
    if (input.dryRun || backup.commit === null) return outcome(null, null)

    for (const path of lists.deleted) yield* removeInside(layout, workspace, path)
    const writes = [...lists.reverted, ...lists.created]
    if (writes.length > 0) {
      const index = yield* input.temporaryIndex
      yield* git(["read-tree", target], { cwd: layout.top, index })
      yield* git(["checkout-index", "-f", "-z", "--stdin"], {
        cwd: layout.top,
        index,
        stdin: writes.map((path) => `${path}\0`).join("")
      })
    }
    return outcome(input.backupRef, backup.commit)
  })
