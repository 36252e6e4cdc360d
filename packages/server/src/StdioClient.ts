/**
 * The typed client over stdio, for a host that spawns Skein as a child process
 * (`skein stdio`): the same `SkeinClientShape` as the WebSocket client, one JSON RPC
 * message per line on the child's stdin and stdout.
 *
 * The child lives as long as the scope: closing it ends the child's stdin, waits a
 * bounded time for it to exit, then kills it by PID. If the child dies, pending
 * requests fail with an `RpcClientError` saying how it ended and what it last wrote
 * on stderr; so do later ones, unless `restart` is set, in which case the next request
 * starts a new child.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { RpcClient } from "@effect/rpc"
import { RpcClientError } from "@effect/rpc/RpcClientError"
import type { FromServerEncoded } from "@effect/rpc/RpcMessage"
import { Context, Data, Effect, Layer, Mailbox, Stream } from "effect"
import type { Scope } from "effect"
import { makeSkeinRpcClient, type SkeinClientShape } from "./SkeinRpcClient.js"

export interface SkeinStdioClientOptions {
  /** The executable, e.g. `process.execPath` or `skein` (never run through a shell). */
  readonly command: string
  /** Its arguments, e.g. `[binPath, "stdio"]`. */
  readonly args: ReadonlyArray<string>
  /** The child's whole environment when given (nothing is inherited); else the parent's. */
  readonly env?: Record<string, string> | undefined
  readonly cwd?: string | undefined
  /** How long closing the scope waits for the child to exit before killing it (default 5000 ms). */
  readonly closeTimeoutMs?: number | undefined
  /**
   * Start a new child, with the same command, when a request is made after the child
   * died (default false). What was pending when it died still fails; `followThread`
   * then resumes from the last sequence it delivered, provided the child keeps its
   * database in a file (the `skein stdio` default).
   */
  readonly restart?: boolean | undefined
}

/** The child process could not be started. */
export class SkeinStdioClientError extends Data.TaggedError("SkeinStdioClientError")<{
  readonly command: string
  readonly detail: string
}> {
  override get message(): string {
    return `Could not start ${JSON.stringify(this.command)} for the Skein stdio client: ${this.detail}`
  }
}

const STDERR_TAIL_CHARS = 4096
const KILL_WAIT_MS = 2000

/** What the child's end looks like to a caller. */
const exitDescription = (
  pid: number | undefined,
  code: number | null,
  signal: NodeJS.Signals | null,
  stderrTail: string
): string => {
  const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`
  const tail = stderrTail.trim()
  return `The Skein stdio child process (pid ${pid}) ${how}${tail === "" ? " (no stderr output)" : `; its stderr ended with:\n${tail}`}`
}

/** Starts the child and resolves once it is running (or fails if it cannot start). */
const spawnChild = (
  options: SkeinStdioClientOptions
): Effect.Effect<ChildProcessWithoutNullStreams, SkeinStdioClientError> =>
  Effect.async<ChildProcessWithoutNullStreams, SkeinStdioClientError>((resume) => {
    let child: ChildProcessWithoutNullStreams
    try {
      child = spawn(options.command, [...options.args], {
        stdio: ["pipe", "pipe", "pipe"],
        ...(options.env === undefined ? {} : { env: options.env }),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd })
      })
    } catch (cause) {
      return resume(Effect.fail(new SkeinStdioClientError({ command: options.command, detail: String(cause) })))
    }
    const onSpawn = () => {
      child.off("error", onError)
      resume(Effect.succeed(child))
    }
    const onError = (error: Error) => {
      child.off("spawn", onSpawn)
      resume(Effect.fail(new SkeinStdioClientError({ command: options.command, detail: error.message })))
    }
    child.once("spawn", onSpawn)
    child.once("error", onError)
  })

/** Ends stdin, waits up to `timeoutMs` for the child to exit, then SIGKILLs it by PID. */
const stopChild = (child: ChildProcessWithoutNullStreams, timeoutMs: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const running = () => child.exitCode === null && child.signalCode === null
    let released = false
    const release = () => {
      if (released) return
      released = true
      clearTimeout(graceTimer)
      clearTimeout(killTimer)
      // Drop the pipes even if a grandchild still holds them open.
      child.stdout.destroy()
      child.stderr.destroy()
      resume(Effect.void)
    }
    let killTimer: ReturnType<typeof setTimeout> | undefined
    const graceTimer = setTimeout(() => {
      if (running() && child.pid !== undefined) {
        try {
          process.kill(child.pid, "SIGKILL")
        } catch {
          // already gone
        }
      }
      killTimer = setTimeout(release, KILL_WAIT_MS)
    }, timeoutMs)
    if (!running()) return release()
    child.once("exit", release)
    child.stdin.end()
  })

/** One child process as the protocol sees it. */
interface Attached {
  readonly child: ChildProcessWithoutNullStreams
  /** Set once the child is gone; requests then fail with it (or start a new child). */
  deathError: RpcClientError | undefined
}

/**
 * Watches a child: its stdout lines become messages in `inbox`; its death (how it ended,
 * the tail of its stderr) becomes a `ClientProtocolError` there, recorded in
 * `undelivered` until the RPC client has handed it to the pending requests.
 */
const attachChild = (
  child: ChildProcessWithoutNullStreams,
  inbox: Mailbox.Mailbox<FromServerEncoded>,
  undelivered: Set<RpcClientError>
): Attached => {
  const attached: Attached = { child, deathError: undefined }
  let stderrTail = ""
  child.stderr.setEncoding("utf8")
  child.stderr.on("data", (text: string) => {
    stderrTail = (stderrTail + text).slice(-STDERR_TAIL_CHARS)
  })

  let pending = ""
  const onLine = (line: string) => {
    if (line.trim() === "") return
    let decoded: unknown
    try {
      decoded = JSON.parse(line)
    } catch (cause) {
      inbox.unsafeOffer({
        _tag: "ClientProtocolError",
        error: new RpcClientError({
          reason: "Protocol",
          message: `The Skein stdio child wrote a line that is not JSON: ${line.slice(0, 200)}`,
          cause
        })
      })
      return
    }
    for (const message of Array.isArray(decoded) ? decoded : [decoded]) {
      inbox.unsafeOffer(message as FromServerEncoded)
    }
  }
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (text: string) => {
    pending += text
    let newline = pending.indexOf("\n")
    if (newline === -1) return
    let start = 0
    while (newline !== -1) {
      onLine(pending.slice(start, newline))
      start = newline + 1
      newline = pending.indexOf("\n", start)
    }
    pending = pending.slice(start)
  })

  // Set before pending requests are failed, so a request racing the death fails in `send`.
  const onDeath = (message: string, cause?: unknown) => {
    if (attached.deathError !== undefined) return
    attached.deathError = new RpcClientError({ reason: "Protocol", message, cause })
    undelivered.add(attached.deathError)
    inbox.unsafeOffer({ _tag: "ClientProtocolError", error: attached.deathError })
  }
  // "close": the process exited and its stdout is fully read.
  child.on("close", (code: number | null, signal: NodeJS.Signals | null) => {
    if (pending !== "") onLine(pending)
    pending = ""
    onDeath(exitDescription(child.pid, code, signal, stderrTail))
  })
  child.on("error", (error) => onDeath(`The Skein stdio child process failed: ${error.message}`, error))
  // Writes to a dead child fail here (EPIPE); the death itself is reported by "close".
  child.stdin.on("error", () => {})
  return attached
}

/**
 * The RPC client protocol over a child's stdin (requests) and stdout (responses).
 * `current` holds the live child; with `respawn`, a request made after its death
 * starts a new one first.
 */
const makeStdioProtocol = (
  first: ChildProcessWithoutNullStreams,
  respawn: Effect.Effect<ChildProcessWithoutNullStreams, SkeinStdioClientError> | undefined,
  onChild: (child: ChildProcessWithoutNullStreams) => void
): Effect.Effect<RpcClient.Protocol["Type"], never, Scope.Scope> =>
  RpcClient.Protocol.make((writeResponse) =>
    Effect.gen(function* () {
      // Node callbacks feed this mailbox; one fiber hands responses on in arrival order.
      const inbox = yield* Mailbox.make<FromServerEncoded>()
      // Deaths whose error the RPC client has not yet handed to the pending requests.
      const undelivered = new Set<RpcClientError>()
      yield* Mailbox.toStream(inbox).pipe(
        Stream.runForEach((message) =>
          Effect.ensuring(
            writeResponse(message),
            Effect.sync(() => message._tag === "ClientProtocolError" && undelivered.delete(message.error))
          )
        ),
        Effect.interruptible,
        Effect.forkScoped
      )

      let current = attachChild(first, inbox, undelivered)
      // One replacement at a time, however many requests find the child dead.
      const replacing = yield* Effect.makeSemaphore(1)
      const live: Effect.Effect<Attached, RpcClientError> = Effect.suspend(() => {
        const dead = current.deathError
        if (dead === undefined) return Effect.succeed(current)
        // Until the RPC client has failed what was pending at the death, a request may
        // be among those: it fails too (never to run on a new child unseen).
        if (respawn === undefined || undelivered.has(dead)) return Effect.fail(dead)
        return replacing.withPermits(1)(
          Effect.suspend(() => {
            if (current.deathError === undefined) return Effect.succeed(current)
            return respawn.pipe(
              Effect.map((child) => {
                onChild(child)
                current = attachChild(child, inbox, undelivered)
                return current
              }),
              Effect.mapError(
                (error) =>
                  new RpcClientError({ reason: "Protocol", message: `${dead.message}; ${error.message}`, cause: error })
              )
            )
          })
        )
      })

      return {
        send: (request) =>
          Effect.map(live, ({ child }) => {
            // JSON.stringify escapes newlines inside strings: one message, one line.
            child.stdin.write(`${JSON.stringify(request)}\n`)
          }),
        // The server never waits for chunk acknowledgements, so the client sends none.
        supportsAck: false,
        supportsTransferables: false
      }
    })
  )

/** A client over a `skein stdio` child process that lives as long as the scope. */
export const makeSkeinStdioClient = (
  options: SkeinStdioClientOptions
): Effect.Effect<SkeinClientShape, SkeinStdioClientError, Scope.Scope> =>
  Effect.gen(function* () {
    // The live child (a new one after a restart); closing the scope stops whichever it is.
    const holder = yield* Effect.acquireRelease(
      Effect.map(spawnChild(options), (child) => ({ child, closed: false })),
      (holder) =>
        Effect.suspend(() => {
          holder.closed = true
          return stopChild(holder.child, options.closeTimeoutMs ?? 5000)
        })
    )
    // Uninterruptible: a child that was started is always handed over (or stopped).
    const respawn = options.restart === true ? Effect.uninterruptible(spawnChild(options)) : undefined
    const protocol = yield* makeStdioProtocol(holder.child, respawn, (child) => {
      // A replacement that finished starting after the scope closed does not outlive it.
      if (holder.closed && child.pid !== undefined) {
        try {
          process.kill(child.pid, "SIGKILL")
        } catch {
          // already gone
        }
      }
      holder.child = child
    })
    return yield* makeSkeinRpcClient.pipe(Effect.provideService(RpcClient.Protocol, protocol))
  })

export class SkeinStdioClient extends Context.Tag("@skein/server/SkeinStdioClient")<
  SkeinStdioClient,
  SkeinClientShape
>() {
  static readonly layer = (options: SkeinStdioClientOptions): Layer.Layer<SkeinStdioClient, SkeinStdioClientError> =>
    Layer.scoped(SkeinStdioClient, makeSkeinStdioClient(options))
}
