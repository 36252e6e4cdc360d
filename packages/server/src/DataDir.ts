/**
 * Where Skein keeps its database, provider state and token: `$SKEIN_HOME`, else
 * `~/.skein`. Whoever may write to that directory may replace the token or the
 * database, so the daemon and the client use it only when it is the user's own and
 * no one else may write to it.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Schema } from "effect"

export const defaultDataDir = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env["SKEIN_HOME"] !== undefined && env["SKEIN_HOME"] !== "" ? env["SKEIN_HOME"] : Path.join(Os.homedir(), ".skein")

export class UnsafeDataDir extends Schema.TaggedError<UnsafeDataDir>()("UnsafeDataDir", {
  path: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `Refusing the data directory ${this.path} ($SKEIN_HOME, --data-dir, or ~/.skein): ${this.problem}.`
  }
}

/** What a directory is, as far as the check below needs. */
export interface DirectoryFacts {
  readonly isDirectory: boolean
  readonly mode: number
  readonly uid: number
}

/**
 * Why `path` is no safe data directory for the user `uid`, or `undefined` (pure). Other
 * users may read it (the token file itself is 0600), never write to it.
 */
export const dataDirProblem = (path: string, facts: DirectoryFacts, uid: number | undefined): string | undefined => {
  if (!facts.isDirectory) return "it is not a directory"
  if (uid !== undefined && facts.uid !== uid) {
    return `it belongs to uid ${facts.uid}, not to this user (uid ${uid}), who could replace the token or the database in it; use a directory of your own (set SKEIN_HOME or pass --data-dir)`
  }
  const mode = facts.mode & 0o7777
  if ((mode & 0o022) !== 0) {
    const who = (mode & 0o002) !== 0 ? "every user" : "its group"
    return `${who} may write to it (mode ${mode.toString(8)}) and so could replace the token or the database; run chmod 700 ${path}`
  }
  return undefined
}

const errorText = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** Fails with `UnsafeDataDir` unless `path` is an existing directory of the user that others may not write to. */
export const checkDataDir = (path: string): Effect.Effect<void, UnsafeDataDir> =>
  Effect.flatMap(
    Effect.try({
      try: () => Fs.statSync(path),
      catch: (cause) => new UnsafeDataDir({ path, problem: errorText(cause) })
    }),
    (stat) => {
      const problem = dataDirProblem(
        path,
        { isDirectory: stat.isDirectory(), mode: stat.mode, uid: stat.uid },
        typeof process.getuid === "function" ? process.getuid() : undefined
      )
      return problem === undefined ? Effect.void : Effect.fail(new UnsafeDataDir({ path, problem }))
    }
  )

/** Creates the data directory (mode 0700) when missing, then checks it. */
export const ensureDataDir = (path: string): Effect.Effect<void, UnsafeDataDir> =>
  Effect.zipRight(
    Effect.try({
      try: () => Fs.mkdirSync(path, { recursive: true, mode: 0o700 }),
      catch: (cause) => new UnsafeDataDir({ path, problem: `it cannot be created: ${errorText(cause)}` })
    }),
    checkDataDir(path)
  )
