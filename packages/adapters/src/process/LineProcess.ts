/**
 * A JSON-lines child process owned by a Scope: one JSON value per line on stdin and
 * stdout (a line over a bound is skipped, never held whole: see BoundedLines), stderr
 * always drained and kept as a short tail for error messages. Spawned
 * from an argument array (no shell) with exactly the environment given, as the leader
 * of a process group of its own, so that whatever it starts (an agent's shell
 * commands, its helpers) goes with it. Closing the scope ends stdin, sends SIGTERM to
 * the group and, after a grace period, SIGKILL; a group whose leader already exited
 * gets SIGKILL at once, so no descendant outlives the scope. Should this process die
 * with the scope still open, the group is ended all the same (OrphanWatcher.ts).
 */
import * as NodeChildProcess from "node:child_process"
import * as Os from "node:os"
import { Deferred, Effect, Exit, FiberSet, Mailbox, Option, Stream } from "effect"
import type { Scope } from "effect"
import { ProviderFailure } from "@skein/domain"
import type { BoundedLine } from "./BoundedLines.js"
import { LineSplitter } from "./BoundedLines.js"
import { watchGroup } from "./OrphanWatcher.js"

export interface ExitStatus {
  readonly code: number | null
  readonly signal: string | null
}

export interface LineProcessOptions {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** The whole environment of the child; nothing else is inherited (see `scopedEnv`). */
  readonly env: Record<string, string>
  readonly cwd?: string | undefined
  /** How long to wait after SIGTERM before SIGKILL when the scope closes. Default 2000 ms. */
  readonly graceMs?: number | undefined
  /** The provider instance name, for error messages. */
  readonly provider: string
  /**
   * The longest stdout line read, in bytes (default DEFAULT_MAX_LINE_BYTES): a longer one
   * is skipped with a warning, never held whole in memory.
   */
  readonly maxLineBytes?: number | undefined
}

/**
 * 64 MiB: far above any message the drivers read (a Codex or Claude Code line carries one
 * item or one page of history), low enough that a process writing without newlines
 * cannot take Skein's memory.
 */
const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

export interface LineProcess {
  readonly pid: number
  /** Writes one JSON line to the child's stdin. Fails with kind `crash` once the child is gone. */
  readonly send: (message: unknown) => Effect.Effect<void, ProviderFailure>
  /**
   * The child's stdout lines parsed as JSON, in order; lines that are not JSON are
   * skipped (logged). Ends when stdout closes. Use either this or `readMessages`, once.
   */
  readonly messages: Stream.Stream<unknown>
  /**
   * Hands each message to `handle` as its line arrives, synchronously, from the
   * stream's own callback, in order (whatever came before the call first). Completes
   * when stdout has closed, after the last message. `handle` must not wait: what it has
   * to run as an Effect (an answer to the child, a log line) it passes to `later`,
   * which starts each in a fiber of its own, in the order given. A `handle` that throws
   * is logged and the reader goes on with the next message. Reading in the stream's
   * callback keeps a line's decoding off the scheduler: no fiber is woken per line.
   */
  readonly readMessages: (handle: (message: unknown) => void) => Effect.Effect<void>
  /**
   * Runs `effect` in a fiber of its own, after what was passed before (see
   * `readMessages`); the fiber belongs to the process's scope and ends with it.
   */
  readonly later: (effect: Effect.Effect<void>) => void
  /** The last few kilobytes the child wrote to stderr. */
  readonly stderrTail: Effect.Effect<string>
  /** Completes when the child has exited, for whatever reason. */
  readonly exited: Effect.Effect<ExitStatus>
  /** "code 70", "signal SIGKILL" … and the stderr tail, for failure details. */
  readonly describeExit: Effect.Effect<string>
}

const STDERR_TAIL_CHARS = 4000
/** How long an exit waits for the rest of stderr to arrive (see the "exit" handler). */
const STDERR_DRAIN_MS = 200

/** Signals the child's whole process group (it leads one); falls back to the child alone. */
const signalGroup = (child: NodeChildProcess.ChildProcess, signal: NodeJS.Signals): void => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // Already gone.
    }
  }
}

/**
 * A minimal environment: PATH and HOME of this process, the variables named in
 * `inherit` that this process has (an agent's config directory), plus `extra` (which wins).
 */
export const scopedEnv = (
  extra: Record<string, string> = {},
  inherit: ReadonlyArray<string> = []
): Record<string, string> => {
  const base: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: process.env.HOME ?? Os.homedir()
  }
  for (const name of inherit) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return { ...base, ...extra }
}

/** What the child's streams are handed, as they arrive. */
interface ChildHooks {
  readonly onLine: (line: BoundedLine) => void
  readonly onStderr: (chunk: string) => void
  /** The child exited; told once its stderr is drained (or after a moment). */
  readonly onExit: (status: ExitStatus) => void
  /** Its stdout and stderr have closed. */
  readonly onClose: () => void
}

/** Takes the child's group off the orphan watcher's list, once set. */
interface GroupWatch {
  unwatch: () => void
}

/**
 * Spawns the child, from an argument array, as the leader of a process group of its own,
 * on the orphan watcher's list; its streams handed to `hooks`. Interrupted before it has
 * started, its group is killed.
 */
const startChild = (
  options: LineProcessOptions,
  maxLineBytes: number,
  hooks: ChildHooks,
  group: GroupWatch
): Effect.Effect<NodeChildProcess.ChildProcessWithoutNullStreams, ProviderFailure> =>
  Effect.async((resume) => {
    const child = NodeChildProcess.spawn(options.command, [...options.args], {
      env: options.env,
      cwd: options.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
      detached: true
    })
    let started = false
    child.once("spawn", () => {
      started = true
      group.unwatch = watchGroup(child.pid!)
      resume(Effect.succeed(child))
    })
    child.on("error", (error) => {
      if (!started) {
        resume(
          Effect.fail(
            new ProviderFailure({
              provider: options.provider,
              kind: "spawn",
              detail: `could not start ${options.command}: ${error.message}. Check the instance's "command" and PATH.`
            })
          )
        )
      }
    })
    child.stdin.on("error", () => {})
    child.on("exit", (code, signal) => {
      // What it wrote to stderr just before it exited may still be in the pipe: the
      // exit is told once stderr ends, or after a moment (a process it left behind may
      // hold the pipe open).
      const done = () => hooks.onExit({ code, signal })
      if (child.stderr.readableEnded) return done()
      const timer = setTimeout(done, STDERR_DRAIN_MS)
      child.stderr.once("close", () => {
        clearTimeout(timer)
        done()
      })
    })
    child.on("close", hooks.onClose)
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", hooks.onStderr)
    const lines = new LineSplitter(maxLineBytes)
    child.stdout.on("data", (chunk: Buffer) => {
      for (const line of lines.push(chunk)) hooks.onLine(line)
    })
    child.stdout.on("end", () => {
      for (const line of lines.end()) hooks.onLine(line)
    })
    return Effect.sync(() => {
      signalGroup(child, "SIGKILL")
      group.unwatch()
    })
  })

/**
 * Ends the child's group when the scope closes: stdin ended, SIGTERM, then SIGKILL after
 * `graceMs`; SIGKILL at once when the leader has already exited.
 */
const stopChild = (
  child: NodeChildProcess.ChildProcessWithoutNullStreams,
  exit: Deferred.Deferred<ExitStatus>,
  graceMs: number,
  group: GroupWatch
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (yield* Deferred.isDone(exit)) {
      // The leader is gone; anything it left in its group goes now.
      signalGroup(child, "SIGKILL")
      return
    }
    child.stdin.end()
    signalGroup(child, "SIGTERM")
    // Finalizers run uninterruptibly: the awaits must be interruptible for the timeouts to fire.
    const stopped = yield* Deferred.await(exit).pipe(Effect.interruptible, Effect.timeout(graceMs), Effect.option)
    signalGroup(child, "SIGKILL")
    if (stopped._tag === "None") {
      yield* Deferred.await(exit).pipe(Effect.interruptible, Effect.timeout(5000), Effect.ignore)
    }
  }).pipe(Effect.ensuring(Effect.sync(() => group.unwatch())))

/** Writes one JSON line to the child's stdin; once the child is gone, fails with kind `crash` and how it ended. */
const sendTo =
  (child: NodeChildProcess.ChildProcessWithoutNullStreams, provider: string, describeExit: Effect.Effect<string>) =>
  (message: unknown): Effect.Effect<void, ProviderFailure> =>
    Effect.flatMap(
      Effect.try({
        try: () => `${JSON.stringify(message)}\n`,
        catch: (error) =>
          new ProviderFailure({ provider, kind: "error", detail: `cannot encode a message: ${String(error)}` })
      }),
      (line) =>
        Effect.async<void, ProviderFailure>((resume) => {
          const gone = () =>
            resume(
              Effect.flatMap(describeExit, (how) =>
                Effect.fail(new ProviderFailure({ provider, kind: "crash", detail: `the process ${how}` }))
              )
            )
          if (child.exitCode !== null || child.signalCode !== null || !child.stdin.writable) return gone()
          child.stdin.write(line, (error) => (error ? gone() : resume(Effect.void)))
        })
    )

/**
 * The child's messages in order, handed synchronously to one reader; until it comes,
 * they wait. A reader that throws is told of (`failed`) and the next message goes on.
 */
const messageQueue = (failed: (error: unknown) => void) => {
  let reader: ((message: unknown) => void) | undefined
  let backlog: Array<unknown> = []
  const hand = (message: unknown) => {
    try {
      reader!(message)
    } catch (error) {
      failed(error)
    }
  }
  return {
    offer: (message: unknown): void => {
      if (reader === undefined) backlog.push(message)
      else hand(message)
    },
    /** Sets the reader and hands it what waited; false when there was one already. */
    read: (handle: (message: unknown) => void): boolean => {
      if (reader !== undefined) return false
      reader = handle
      const earlier = backlog
      backlog = []
      for (const message of earlier) hand(message)
      return true
    }
  }
}

/** "exited with code 1; stderr: …", or "is not running". */
const describeStatus = (status: ExitStatus | null, stderr: string): string => {
  const how =
    status === null
      ? "is not running"
      : status.signal !== null
        ? `exited on signal ${status.signal}`
        : `exited with code ${status.code}`
  const tail = stderr.trim()
  return tail.length > 0 ? `${how}; stderr: ${tail.slice(-1000)}` : how
}

const spawn = (options: LineProcessOptions): Effect.Effect<LineProcess, ProviderFailure, Scope.Scope> =>
  Effect.gen(function* () {
    // What the reader starts runs in fibers of the process's scope: closing it interrupts
    // whatever is still running (an answer to a child that is gone, a log line).
    const run = yield* FiberSet.makeRuntime<never, void, never>()
    const later = (effect: Effect.Effect<void>) => void run(effect)
    const logWarning = (message: string) => later(Effect.logWarning(message))
    const messages = messageQueue((error) =>
      logWarning(`${options.provider}: the reader of the process's messages failed on one: ${String(error)}`)
    )
    const stdoutClosed = yield* Deferred.make<void>()
    const exit = yield* Deferred.make<ExitStatus>()
    let stderr = ""
    // A child that just exited is told a moment later (its stderr drained): wait that long.
    const describeExit = Deferred.await(exit).pipe(
      Effect.timeout(STDERR_DRAIN_MS + 50),
      Effect.option,
      Effect.map((status) => describeStatus(Option.getOrNull(status), stderr))
    )
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
    const onLine = (line: BoundedLine) => {
      if (line._tag === "Oversized") {
        logWarning(
          `${options.provider}: skipping a stdout line of ${line.bytes} bytes, over the limit of ${maxLineBytes}: ` +
            line.prefix.slice(0, 200)
        )
        return
      }
      let message: unknown
      try {
        message = JSON.parse(line.text)
      } catch {
        logWarning(`${options.provider}: ignoring a stdout line that is not JSON: ${line.text.slice(0, 200)}`)
        return
      }
      messages.offer(message)
    }
    const group: GroupWatch = { unwatch: () => {} }
    const child = yield* Effect.acquireRelease(
      startChild(
        options,
        maxLineBytes,
        {
          onLine,
          onStderr: (chunk) => {
            stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS)
          },
          onExit: (status) => Deferred.unsafeDone(exit, Exit.succeed(status)),
          onClose: () => Deferred.unsafeDone(stdoutClosed, Exit.void)
        },
        group
      ),
      (child) => stopChild(child, exit, options.graceMs ?? 2000, group)
    )

    const readMessages = (handle: (message: unknown) => void): Effect.Effect<void> =>
      Effect.suspend(() =>
        messages.read(handle)
          ? Deferred.await(stdoutClosed)
          : Effect.dieMessage("LineProcess: its messages have a reader already")
      )

    return {
      pid: child.pid ?? -1,
      send: sendTo(child, options.provider, describeExit),
      messages: Stream.unwrapScoped(
        Effect.gen(function* () {
          const mailbox = yield* Mailbox.make<unknown>()
          yield* readMessages((message) => mailbox.unsafeOffer(message)).pipe(
            Effect.ensuring(mailbox.end),
            Effect.forkScoped
          )
          return Mailbox.toStream(mailbox)
        })
      ),
      readMessages,
      later,
      stderrTail: Effect.sync(() => stderr),
      exited: Deferred.await(exit),
      describeExit
    } satisfies LineProcess
  })

export const LineProcess = { spawn } as const
