/**
 * The daemon's generated token, kept in `DATA_DIR/token` (mode 0600, in a 0700
 * directory when Skein creates it): a daemon started without `--token` reads it, or
 * creates it with 256 random bits on first start; the CLI and the typed client read it
 * when no token is given. It lasts across restarts, so a client that reconnects after
 * a restart still holds the right token. Delete the file to get a new token.
 *
 * The daemon and the clients read it through one check (`readCheckedTokenFile`): a
 * regular file, not a symbolic link, the user's own, that others may not read, in a
 * data directory that others may not write to, holding a strong token.
 */
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Schema } from "effect"
import { checkToken, type WeakToken } from "./Auth.js"
import { checkDataDir, ensureDataDir, type UnsafeDataDir } from "./DataDir.js"

export const TOKEN_FILE_NAME = "token"

export const tokenFilePath = (dataDir: string): string => Path.join(dataDir, TOKEN_FILE_NAME)

export class TokenFileError extends Schema.TaggedError<TokenFileError>()("TokenFileError", {
  path: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `Cannot use the token file ${this.path}: ${this.problem}.`
  }
}

/** 32 random bytes as base64url: 43 characters. */
export const generateToken = (): string => randomBytes(32).toString("base64url")

const errorText = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const symlinkTarget = (path: string): string => {
  try {
    return Fs.readlinkSync(path)
  } catch {
    return "somewhere else"
  }
}

/**
 * The token in an existing token file, for the daemon and for every client alike:
 * refuses a file that is not a regular file (a symbolic link is not followed), that
 * others may read, or that is not the user's, and a weak token.
 */
export const readCheckedTokenFile = (path: string): Effect.Effect<string, TokenFileError | WeakToken> =>
  Effect.gen(function* () {
    const stat = yield* Effect.try({
      try: () => Fs.lstatSync(path),
      catch: (cause) => new TokenFileError({ path, problem: errorText(cause) })
    })
    if (stat.isSymbolicLink()) {
      return yield* new TokenFileError({
        path,
        problem: `it is a symbolic link (to ${symlinkTarget(path)}), and Skein reads only a regular file of its own; delete the link (the daemon makes a new token file on its next start) or pass the token with --token or SKEIN_TOKEN`
      })
    }
    if (!stat.isFile()) {
      return yield* new TokenFileError({
        path,
        problem: "it is not a regular file; delete it (the daemon makes a new one on its next start)"
      })
    }
    if ((stat.mode & 0o077) !== 0) {
      return yield* new TokenFileError({
        path,
        problem: `other users may read it (mode ${(stat.mode & 0o777).toString(8)}); run chmod 600 on it, or delete it to get a new token`
      })
    }
    if (typeof process.getuid === "function" && stat.uid !== process.getuid()) {
      return yield* new TokenFileError({ path, problem: `it belongs to uid ${stat.uid}, not to this user` })
    }
    const text = yield* Effect.try({
      try: () => Fs.readFileSync(path, "utf8"),
      catch: (cause) => new TokenFileError({ path, problem: errorText(cause) })
    })
    return yield* checkToken(text.trim(), path)
  })

/** Writes a new token file atomically: a 0600 temp file, hard-linked into place unless one appeared meanwhile. */
const createTokenFile = (path: string): Effect.Effect<"created" | "exists", TokenFileError> =>
  Effect.try({
    try: () => {
      const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`
      const fd = Fs.openSync(temp, "wx", 0o600)
      try {
        Fs.fchmodSync(fd, 0o600)
        Fs.writeSync(fd, `${generateToken()}\n`)
        Fs.fsyncSync(fd)
      } finally {
        Fs.closeSync(fd)
      }
      try {
        Fs.linkSync(temp, path)
        return "created" as const
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code === "EEXIST") return "exists" as const
        throw cause
      } finally {
        Fs.rmSync(temp, { force: true })
      }
    },
    catch: (cause) => new TokenFileError({ path, problem: errorText(cause) })
  })

/**
 * The daemon's token from `DATA_DIR/token`, created (with the directory, mode 0700)
 * when missing. Another daemon creating it at the same moment is fine: both use the
 * one that landed.
 */
export const loadOrCreateToken = (
  dataDir: string
): Effect.Effect<{ readonly token: string; readonly path: string }, TokenFileError | WeakToken | UnsafeDataDir> =>
  Effect.gen(function* () {
    const path = tokenFilePath(dataDir)
    yield* ensureDataDir(dataDir)
    if (!isPresent(path)) yield* createTokenFile(path)
    return { token: yield* readCheckedTokenFile(path), path }
  })

/** Whether anything is at `path`, a dangling symbolic link included. */
const isPresent = (path: string): boolean => {
  try {
    Fs.lstatSync(path)
    return true
  } catch {
    return false
  }
}

/**
 * The token in `DATA_DIR/token` for a client, or why there is none. A missing file is
 * no error (the daemon refuses the client with a message naming this file); a file
 * that is there is used only if it passes the daemon's own checks, in a data directory
 * that passes them too, else the client fails before it sends anything.
 */
export type TokenFileRead =
  | { readonly token: string; readonly path: string }
  | { readonly token: undefined; readonly path: string; readonly problem: string }

export const readTokenFile = (
  dataDir: string
): Effect.Effect<TokenFileRead, TokenFileError | WeakToken | UnsafeDataDir> =>
  Effect.suspend((): Effect.Effect<TokenFileRead, TokenFileError | WeakToken | UnsafeDataDir> => {
    const path = tokenFilePath(dataDir)
    if (!isPresent(path)) return Effect.succeed({ token: undefined, path, problem: "it does not exist" })
    return Effect.zipRight(
      checkDataDir(dataDir),
      Effect.map(readCheckedTokenFile(path), (token) => ({ token, path }))
    )
  })
