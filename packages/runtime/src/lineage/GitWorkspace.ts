/**
 * What workspace checkpoints and restores share about a repository: where a workspace
 * sits in it (`locate`), the hidden refs a thread's checkpoints live under, pathspecs
 * taken literally, a temporary index owned by a Scope, and how a checkpoint's commit
 * records the files it left out.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import type { OmittedFile } from "@skein/domain"
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, git, GitError, gitRaw, notARepository } from "./Git.js"
import * as TemporaryDirectories from "./TemporaryDirectories.js"

export const fileSystem = <A>(what: string, f: () => A) =>
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
export const indexOf = (workspace: string): string | undefined => {
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

export const objectId = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/

export const checkObjectId = (what: string, value: string) =>
  objectId.test(value)
    ? Effect.void
    : Effect.fail(
        new GitError({ command: what, detail: `${JSON.stringify(value)} is not a commit id`, reason: "failed" })
      )

/** A thread id as one ref name component: letters, digits, `_` and `-` kept, anything else percent-encoded. */
export const refComponent = (threadId: string) =>
  Array.from(new TextEncoder().encode(threadId), (byte) => {
    const char = String.fromCharCode(byte)
    return /[A-Za-z0-9_-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }).join("")

export const refPrefix = (threadId: string) => `refs/skein/${refComponent(threadId)}/`

export const checkOrdinal = (what: string, ordinal: number) =>
  Number.isSafeInteger(ordinal) && ordinal >= 0
    ? Effect.void
    : Effect.fail(new GitError({ command: what, detail: `ordinal ${ordinal} is not a whole number`, reason: "failed" }))

// ---------------------------------------------------------------------------------------
// The diff summary

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
export const scopeOf = (prefix: string): Array<string> =>
  prefix === "" ? [] : [`:(top,literal)${prefix.slice(0, -1)}`]
export const literal = (path: string) => `:(top,literal)${path}`
export const exclude = (path: string) => `:(exclude,top,literal)${path}`

export const nulSplit = (out: string) => out.split("\0").filter((field) => field !== "")

/**
 * The checkpoint commit's message names its omitted files, one line each:
 * `skein-omitted: <bytes> <path relative to the top, as JSON>`, so that a restore can name
 * them from the repository alone.
 */
export const OMITTED_LINE = "skein-omitted: "

export const messageOf = (ref: string, previous: string | null, omitted: ReadonlyArray<OmittedFile>) =>
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

export const underPrefix = (prefix: string) => (file: OmittedFile) => ({
  ...file,
  path: file.path.slice(prefix.length)
})

export interface ThreadRef {
  readonly name: string
  /** The run's ordinal; null for a restore backup. */
  readonly ordinal: number | null
  readonly date: number
}

export const deleteRefs = (workspace: string, threadId: string, choose: (refs: Array<ThreadRef>) => Array<ThreadRef>) =>
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
