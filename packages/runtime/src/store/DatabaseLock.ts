/**
 * One runtime per database: a lock that the kernel drops when its holder dies.
 *
 * The lock is an exclusive SQLite lock on a sidecar file, `<db>.lock`, taken by a
 * connection of its own in `locking_mode = EXCLUSIVE` and held until the runtime
 * closes. SQLite's locks are POSIX record locks, which the kernel releases with the
 * process (SIGKILL included), and SQLite shares them between connections of one
 * process, so a second runtime in the same process finds the file locked too. The
 * holder writes its process id into the file's header (`user_version`, bytes 60-63),
 * which a refused process reads to say who holds the database.
 *
 * POSIX locks have one trap: closing any descriptor of the file drops all of the
 * process's locks on it. So this process never opens a lock file it holds: a
 * process-wide registry (shared by every copy of this module) answers for them, and
 * the file is read only by a process that holds no lock on it.
 *
 * The main database is not locked itself: the WAL checkpointer's worker and the
 * tools that read a database beside a runtime open it too.
 */
import { closeSync, chmodSync, mkdirSync, openSync, readSync, realpathSync, statSync } from "node:fs"
import { basename, dirname, join, resolve } from "node:path"
import { DatabaseInUse, StorageError } from "@skein/domain"
import Sqlite from "better-sqlite3"
import { Effect, type Scope } from "effect"

interface LockConnection {
  pragma(text: string): unknown
  exec(text: string): void
  close(): void
}

/** Database files (canonical paths) that a runtime of this process holds. */
const held: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for("@skein/runtime/DatabaseLock")] ??=
  new Set<string>()) as Set<string>

/** The lock file of `filename`. */
export const lockPathOf = (filename: string) => `${filename}.lock`

/** The database's path with its directory's symlinks resolved (the file itself may not exist yet). */
const canonical = (filename: string): string => {
  const absolute = resolve(filename)
  try {
    return realpathSync(absolute)
  } catch {
    return join(realpathSync(dirname(absolute)), basename(absolute))
  }
}

/** Whether the process `pid` exists (EPERM: it does, as another user's). */
const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The holder's pid from the lock file's header, or null (no header yet, or not a pid). */
const readHolder = (lockPath: string): number | null => {
  let fd: number
  try {
    fd = openSync(lockPath, "r")
  } catch {
    return null
  }
  try {
    const header = Buffer.alloc(64)
    if (readSync(fd, header, 0, 64, 0) < 64 || header.toString("latin1", 0, 15) !== "SQLite format 3") return null
    const pid = header.readInt32BE(60)
    return pid > 0 ? pid : null
  } finally {
    closeSync(fd)
  }
}

const isBusy = (error: unknown) => {
  const code = (error as { code?: unknown }).code
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED"
}

/** Takes the lock once: the connection holding it, or "busy". */
const tryLock = (lockPath: string): LockConnection | "busy" => {
  const connection = new Sqlite(lockPath) as unknown as LockConnection
  try {
    connection.pragma("busy_timeout = 0")
    connection.pragma("locking_mode = EXCLUSIVE")
    connection.exec("BEGIN EXCLUSIVE")
    // In EXCLUSIVE locking mode the lock outlives the commit, until the connection closes.
    connection.pragma(`user_version = ${process.pid}`)
    connection.exec("COMMIT")
    return connection
  } catch (error) {
    connection.close()
    if (isBusy(error)) return "busy"
    throw error
  }
}

/** How long a refused start looks for a live holder (one that just took the lock, or just died). */
const SETTLE_MS = 1000

/** One try at the lock of the database `filename`: its release, or the holder's pid (null: none seen). */
const tryOnce = (filename: string): { readonly release: () => void } | { readonly holder: number | null } => {
  mkdirSync(dirname(resolve(filename)), { recursive: true })
  const key = canonical(filename)
  if (held.has(key)) return { holder: process.pid }
  const lockPath = lockPathOf(key)
  // Created private before SQLite opens it; SQLite gives its journal the same mode.
  closeSync(openSync(lockPath, "a", 0o600))
  if ((statSync(lockPath).mode & 0o077) !== 0) chmodSync(lockPath, 0o600)
  const connection = tryLock(lockPath)
  if (connection === "busy") {
    // Another process holds it: this one holds no lock on the file, so reading it is safe.
    const pid = readHolder(lockPath)
    return { holder: pid !== null && pid !== process.pid && isAlive(pid) ? pid : null }
  }
  held.add(key)
  return {
    release: () => {
      held.delete(key)
      connection.close()
    }
  }
}

const cannotLock = (filename: string, error: unknown) =>
  new StorageError({
    detail: `cannot lock database ${filename} (through ${lockPathOf(filename)}): ${error instanceof Error ? error.message : String(error)}. If no Skein is running on it, delete ${lockPathOf(filename)} and start again`,
    startup: true
  })

/**
 * Takes the lock of the database `filename`, or fails with DatabaseInUse naming the
 * holder's pid. A holder that cannot be named yet (it has just taken the lock and not
 * yet written its pid, or has just died) is looked at again for up to SETTLE_MS.
 */
const acquire = (filename: string): Effect.Effect<() => void, DatabaseInUse | StorageError> =>
  Effect.suspend(() => {
    const deadline = Date.now() + SETTLE_MS
    const attempt: Effect.Effect<() => void, DatabaseInUse | StorageError> = Effect.flatMap(
      Effect.try({ try: () => tryOnce(filename), catch: (error) => cannotLock(filename, error) }),
      (outcome) => {
        if ("release" in outcome) return Effect.succeed(outcome.release)
        if (outcome.holder !== null || Date.now() >= deadline) {
          return Effect.fail(new DatabaseInUse({ path: filename, pid: outcome.holder }))
        }
        return Effect.zipRight(Effect.sleep("20 millis"), attempt)
      }
    )
    return attempt
  })

/**
 * Holds the lock of the database `filename` for as long as the scope lasts. An
 * in-memory database has nothing to lock.
 */
export const hold = (
  filename: string,
  isMemory: boolean
): Effect.Effect<void, DatabaseInUse | StorageError, Scope.Scope> =>
  isMemory ? Effect.void : Effect.asVoid(Effect.acquireRelease(acquire(filename), (release) => Effect.sync(release)))
