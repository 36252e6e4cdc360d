/**
 * WAL checkpoints off the main thread.
 *
 * In WAL mode SQLite appends each commit to the `-wal` file and now and then copies
 * what the WAL holds back into the database file (a checkpoint). Left to itself it does
 * so inside whichever commit takes the WAL past 1,000 pages: that commit copies some
 * 4 MB and syncs both files, a few milliseconds on an ordinary disk, on the path of
 * whoever was waiting for it (about one run in a hundred; most of the dispatch bench's
 * p99). better-sqlite3 is synchronous, so the whole process waits with it.
 *
 * Here a worker thread with a connection of its own copies the WAL into the database
 * ahead of time: PASSIVE checkpoints, which never wait for and never block the main
 * connection's readers and writers. The main connection reports its commits; the
 * worker checkpoints after every `every` of them, and once commits pause for `idleMs`
 * (one request at a time, never queued). A checkpoint that caught up with the last
 * commit lets the next commit start the WAL over, so between bursts of commits SQLite's
 * own checkpoint never comes due. What a commit guarantees does not change: it is in
 * the WAL when the commit returns (see Database.ts for the sync setting); a checkpoint
 * only moves it on into the database file.
 *
 * When commits keep coming the worker seldom catches up with the very last one, so the
 * WAL is not started over and grows. SQLite's own checkpoint stays on as the bound on
 * that growth, but no longer at its default of 1,000 pages: past its threshold it runs
 * in every commit until the WAL starts over, and although the worker has copied nearly
 * everything, each such run syncs the WAL and the database file, on the main thread,
 * inside a command's commit. (Counted with strace over 200 back-to-back dispatches of
 * the actors bench: 56 syncs on the main thread, some 40 of them these; the slow
 * commits that made most of the dispatch p99 were in them.) While the worker runs the
 * threshold is `sqlitePages` (10,000 pages: the same count went to 11), so the WAL
 * file may reach some 40 MB; SQLite reuses the file, which is cut back to
 * `WAL_SIZE_LIMIT` (Sqlite.ts) when the WAL starts over while idle. When the worker
 * stops, the threshold goes back to SQLite's 1,000, as checkpoints are then SQLite's
 * alone.
 *
 * Starting the WAL over has a price of its own: the first commit after a complete
 * checkpoint writes a new WAL header and, at `synchronous = NORMAL`, syncs the WAL file
 * for it (about 0.13 ms on the test machines against 0.02 ms for a commit; a real
 * disk's sync can take milliseconds). With checkpoints caught up at every pause, that
 * first commit would be the next command's: typically the `run.start` a user sends
 * after a pause. So when a checkpoint asked for by a pause caught up and nothing was
 * committed meanwhile, the checkpointer calls `onCaughtUp` on the main thread, which
 * starts the WAL over then, while the connection is idle (Sqlite.ts: a write that
 * changes nothing). That write is not one of the store's commits and schedules no
 * checkpoint.
 *
 * A pause is a second without commits (`idleMs`), not less: while a provider's turn
 * runs, the thread commits nothing for tens of milliseconds at a time, and a pause
 * counted from 20 ms put that synchronous write and sync on the main thread in the
 * middle of nearly every turn, while the provider worked on the same cores (the event
 * loop was busy 3.7 ms of a 52 ms Codex turn with it, 2.4 ms without). A user's pause
 * between messages is seconds, so the next `run.start` still finds the WAL started over.
 */
import { Effect, Runtime, type Scope } from "effect"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

export interface WalCheckpointerOptions {
  /** Commits between two checkpoint requests. */
  readonly every: number
  /** A pause in commits after which the worker catches up with the last one. */
  readonly idleMs: number
  /** SQLite's own checkpoint threshold (`wal_autocheckpoint`, in pages) while the worker runs; default 10,000. */
  readonly sqlitePages?: number | undefined
  /** The better-sqlite3 module the worker loads (its resolved path); tests point it elsewhere. */
  readonly module?: string | undefined
}

const SQLITE_OWN_PAGES_WHILE_RUNNING = 10_000

export const defaultOptions: WalCheckpointerOptions = {
  every: 32,
  idleMs: 1000,
  sqlitePages: SQLITE_OWN_PAGES_WHILE_RUNNING
}

/** SQLite's default `wal_autocheckpoint`: its own checkpoints once the worker stopped. */
export const SQLITE_DEFAULT_PAGES = 1000

/** What the checkpointer asks of the main connection, on the main thread. */
export interface MainConnection {
  /** Starts the WAL over now, if the connection is free; says whether it did. */
  readonly startWalOver: () => boolean
  /** Sets SQLite's own checkpoint threshold (`wal_autocheckpoint`) to `pages`. */
  readonly autocheckpoint: (pages: number) => void
}

export interface WalCheckpointerStatus {
  /** Checkpoints the worker has finished. */
  readonly completed: number
  /** Times the WAL was started over while idle (`onCaughtUp` said it did). */
  readonly restarts: number
  /** Why the worker stopped, once it has: checkpoints are then SQLite's own alone. */
  readonly failed: string | null
}

export interface WalCheckpointer {
  /** Tells the checkpointer one more transaction committed. Cheap; never blocks. */
  readonly committed: () => void
  readonly status: () => WalCheckpointerStatus
}

/** Messages the worker answers with; `caughtUp`: every frame of the WAL is in the database. */
type Reply = { readonly ok: true; readonly caughtUp: boolean } | { readonly ok: false; readonly error: string }

/**
 * The worker: opens `file` and answers each message with one PASSIVE checkpoint. It is
 * evaluated as a CommonJS script, so it names the better-sqlite3 it loads by path.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.file)
parentPort.on("message", () => {
  try {
    const [result] = db.pragma("wal_checkpoint(PASSIVE)")
    parentPort.postMessage({ ok: true, caughtUp: result.busy === 0 && result.log === result.checkpointed })
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error && error.message || error) })
  }
})
`

/**
 * Starts the checkpointer for the database file `file` (in WAL mode already), for as
 * long as the scope lasts: the worker is stopped before the scope's earlier finalizers
 * (such as closing the main connection) run.
 */
export const start = (
  file: string,
  options: WalCheckpointerOptions = defaultOptions,
  main: MainConnection = { startWalOver: () => false, autocheckpoint: () => {} }
): Effect.Effect<WalCheckpointer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const warn = (message: string) => Runtime.runFork(runtime)(Effect.logWarning(message))
    let completed = 0
    let restarts = 0
    let failed: string | null = null
    let inFlight = false
    let sinceRequest = 0
    let stopping = false

    const fail = (why: string) => {
      if (failed !== null || stopping) return
      failed = why
      try {
        main.autocheckpoint(SQLITE_DEFAULT_PAGES)
      } catch (error) {
        warn(`could not put SQLite's own WAL checkpoint back at ${SQLITE_DEFAULT_PAGES} pages: ${String(error)}`)
      }
      warn(`WAL checkpoints are SQLite's own again, in commits: the checkpoint worker stopped (${why})`)
    }

    /** Whether the checkpoint in flight was asked for by a pause in commits (not by their count). */
    let onPause = false
    const request = (pause: boolean) => {
      if (failed !== null || inFlight) return
      sinceRequest = 0
      inFlight = true
      onPause = pause
      worker.postMessage(null)
    }
    /** Fires `idleMs` after the last commit (re-armed by each). */
    const idle = setTimeout(() => {
      if (sinceRequest > 0) request(true)
    }, options.idleMs)
    idle.unref()
    yield* Effect.addFinalizer(() => Effect.sync(() => clearTimeout(idle)))

    const worker = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const module = options.module ?? createRequire(import.meta.url).resolve("better-sqlite3")
        const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { module, file } })
        worker.unref()
        // Until the worker stops (fail), SQLite's own checkpoint is only the bound.
        main.autocheckpoint(options.sqlitePages ?? SQLITE_OWN_PAGES_WHILE_RUNNING)
        worker.on("message", (reply: Reply) => {
          inFlight = false
          if (reply.ok) {
            completed++
            // After a pause, with nothing committed since: the connection is idle, so start
            // the WAL over now. (Not between commits that keep coming: there the next one
            // is near, and would wait for this write.)
            if (reply.caughtUp && onPause && sinceRequest === 0 && !stopping) {
              try {
                if (main.startWalOver()) restarts++
              } catch (error) {
                // The next commit starts the WAL over instead, as SQLite always did.
                warn(`could not start the WAL over while idle: ${String(error)}`)
              }
            }
          } else fail(reply.error)
          // Commits made while it ran: caught up with at the next pause.
          if (sinceRequest > 0) idle.refresh()
        })
        worker.on("error", (error) => fail(error.message))
        worker.on("exit", (code) => fail(`it exited with code ${code}`))
        return worker
      }),
      (worker) =>
        Effect.promise(() => {
          stopping = true
          return worker.terminate()
        })
    )

    return {
      committed: () => {
        if (failed !== null) return
        if (++sinceRequest >= options.every) request(false)
        else idle.refresh()
      },
      status: () => ({ completed, restarts, failed })
    }
  })
