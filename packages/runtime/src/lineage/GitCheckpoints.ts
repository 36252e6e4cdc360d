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
 * git runs as a child process through @effect/platform's Command: argument arrays (no
 * shell), a closed environment (PATH, HOME, the temporary index, a fixed author and
 * committer; nothing else inherited, so no `GIT_DIR` or locale leaks in), `-z` output.
 *
 * Speed: the temporary index starts as a copy of the repository's own, so `git add -A`
 * rehashes only files whose stat changed (a fresh index would hash every file); the diff
 * runs beside the commit, since it needs only the trees.
 */
import { Command } from "@effect/platform"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { PlatformError } from "@effect/platform/Error"
import type { DiffEntry } from "@skein/domain"
import { Chunk, Context, Effect, Option, Schema, Stream } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** A git command could not run or failed. The message says what to do. */
export class GitError extends Schema.TaggedError<GitError>()("GitError", {
  /** What was run, e.g. `git add -A`. */
  command: Schema.String,
  detail: Schema.String,
  /** `missing`: no git executable could be started; `failed`: it ran and refused, or the input was unusable. */
  reason: Schema.Literal("missing", "failed")
}) {
  override get message() {
    return this.reason === "missing"
      ? `git could not be started (${this.detail}). Install git and put it on the PATH, or keep using logical checkpoints.`
      : `${this.command} failed: ${this.detail}`
  }
}

/** The git executable to run: `git` on the PATH unless provided otherwise. */
export class GitExecutable extends Context.Reference<GitExecutable>()("@skein/runtime/GitExecutable", {
  defaultValue: (): string => "git"
}) {}

/** A captured checkpoint: its hidden ref, commit and tree, and what changed since the previous one. */
export interface GitCheckpoint {
  readonly ref: string
  readonly commit: string
  readonly tree: string
  readonly diff: ReadonlyArray<DiffEntry>
}

// ---------------------------------------------------------------------------------------
// Running git

interface GitRun {
  readonly cwd: string
  /** GIT_INDEX_FILE; the repository's own index is never named here. */
  readonly index?: string
  readonly stdin?: string
}

interface GitOutput {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** The only environment git sees. */
const environment = (index: string | undefined): Record<string, string | undefined> => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME ?? Os.homedir(),
  GIT_INDEX_FILE: index,
  GIT_AUTHOR_NAME: "Skein",
  GIT_AUTHOR_EMAIL: "skein@localhost",
  GIT_COMMITTER_NAME: "Skein",
  GIT_COMMITTER_EMAIL: "skein@localhost",
  // Never refresh the user's index as a side effect, never prompt.
  GIT_OPTIONAL_LOCKS: "0",
  GIT_TERMINAL_PROMPT: "0"
})

/**
 * Unusual file names verbatim; no split index (which would write a shared index file
 * beside the repository's own); no automatic gc started by a checkpoint.
 */
const settings = ["-c", "core.quotepath=off", "-c", "core.splitIndex=false", "-c", "gc.auto=0"]

const describe = (args: ReadonlyArray<string>) => `git ${args.join(" ")}`

const collect = (stream: Stream.Stream<Uint8Array, PlatformError>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Chunk.toArray(chunks)).toString("utf8"))

const fromPlatform = (args: ReadonlyArray<string>, cwd: string, executable: string) => (error: PlatformError) =>
  error._tag === "SystemError" && error.module === "Command" && error.method === "spawn"
    ? new GitError({
        command: describe(args),
        detail: `${executable}: ${error.reason === "NotFound" ? "not found" : error.message}`,
        reason: "missing"
      })
    : error._tag === "SystemError" && error.method === "access"
      ? new GitError({ command: describe(args), detail: `the directory ${cwd} cannot be used`, reason: "failed" })
      : new GitError({ command: describe(args), detail: error.message, reason: "failed" })

/** Runs git to its end and gives its exit code and output, whatever the code. */
const gitRaw = (args: ReadonlyArray<string>, run: GitRun): Effect.Effect<GitOutput, GitError, CommandExecutor> =>
  Effect.flatMap(GitExecutable, (executable) => {
    let command = Command.make(executable, ...settings, ...args).pipe(
      Command.workingDirectory(run.cwd),
      Command.env(environment(run.index), { extendEnv: false })
    )
    if (run.stdin !== undefined) command = Command.feed(command, run.stdin)
    return Effect.scoped(
      Effect.flatMap(Command.start(command), (process) =>
        Effect.all([process.exitCode, collect(process.stdout), collect(process.stderr)], { concurrency: "unbounded" })
      )
    ).pipe(
      Effect.map(([code, stdout, stderr]) => ({ code, stdout, stderr })),
      Effect.mapError(fromPlatform(args, run.cwd, executable))
    )
  })

const notARepository = /not a git repository|must be run in a work tree/

/** Runs git and gives its standard output; a non-zero exit is a GitError with git's own words. */
const git = (args: ReadonlyArray<string>, run: GitRun): Effect.Effect<string, GitError, CommandExecutor> =>
  Effect.flatMap(gitRaw(args, run), (out) =>
    out.code === 0
      ? Effect.succeed(out.stdout)
      : Effect.fail(
          new GitError({
            command: describe(args),
            detail:
              out.code === 128 && notARepository.test(out.stderr)
                ? `${run.cwd} is not inside a git work tree (it keeps logical checkpoints)`
                : out.stderr.trim() || `exit code ${out.code}`,
            reason: "failed"
          })
        )
  )

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

const checkOrdinal = (what: string, ordinal: number) =>
  Number.isSafeInteger(ordinal) && ordinal >= 0
    ? Effect.void
    : Effect.fail(new GitError({ command: what, detail: `ordinal ${ordinal} is not a whole number`, reason: "failed" }))

// ---------------------------------------------------------------------------------------
// The diff summary

/**
 * Reads `git diff-tree -r -z --raw --numstat`: first one raw record per path (`:modes
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

const diffSummary = (cwd: string, base: string, target: string) =>
  Effect.map(git(["diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", base, target], { cwd }), parseDiff)

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
}): Effect.Effect<GitCheckpoint, GitError, CommandExecutor> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { previous, workspace: cwd } = input
      yield* checkOrdinal("git checkpoint", input.ordinal)
      if (previous !== null) yield* checkObjectId("git checkpoint", previous)
      const index = yield* temporaryIndex(cwd)
      const [, head] = yield* Effect.all(
        [git(["add", "-A"], { cwd, index }), previous === null ? headTree(cwd) : Effect.succeedNone],
        { concurrency: "unbounded" }
      )
      const tree = (yield* git(["write-tree"], { cwd, index })).trim()
      const ref = `${refPrefix(input.threadId)}${input.ordinal}`
      const message = `skein checkpoint ${ref}`
      const parents = previous === null ? [] : ["-p", previous]
      const commit = Effect.flatMap(
        git(["commit-tree", "--no-gpg-sign", ...parents, "-m", message, tree], { cwd }),
        (out) => Effect.as(git(["update-ref", "--no-deref", ref, out.trim()], { cwd }), out.trim())
      )
      // The diff needs only the trees, so it runs beside the commit.
      const base = previous ?? Option.getOrElse(head, () => emptyTree(tree))
      const [id, diff] = yield* Effect.all([commit, diffSummary(cwd, base, tree)], { concurrency: "unbounded" })
      return { ref, commit: id, tree, diff }
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
