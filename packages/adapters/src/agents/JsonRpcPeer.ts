/**
 * One side of a JSON-RPC 2.0 conversation over newline-delimited JSON (the `jsonrpc`
 * member is never required, and sent only when `versioned`, as ACP asks; Codex's
 * app-server speaks without it): requests
 * correlated with their replies by id, notifications and requests from the other side
 * handed to the driver, and fail-all when the conversation ends.
 *
 * The peer does not own a process: it writes through `send` and reads what it is given
 * with `receive`, synchronously and in order (see `LineProcess.readMessages`), so a
 * reply's `onResult` runs before any message that followed the reply. `serve` wires it
 * to a `LineProcess`. A reply to an id that is not pending is dropped; a line that is not
 * a JSON-RPC message is logged (through `warn`) and skipped.
 */
import { Deferred, Effect, Either, Exit, Schema } from "effect"
import type { Scope } from "effect"
import { ProviderFailure } from "@skein/domain"
import type { LineProcess } from "../process/LineProcess.js"

const RpcId = Schema.Union(Schema.Number, Schema.String)
export type RpcId = typeof RpcId.Type

/** A reply to one of our requests. */
export const RpcResult = Schema.Struct({ id: RpcId, result: Schema.Unknown })
export const RpcError = Schema.Struct({
  id: RpcId,
  error: Schema.Struct({ code: Schema.optional(Schema.Number), message: Schema.String })
})
/** A request from the other side: it waits for our reply with the same id. */
export const ServerRequest = Schema.Struct({ id: RpcId, method: Schema.String, params: Schema.Unknown })
export const Notification = Schema.Struct({ method: Schema.String, params: Schema.optional(Schema.Unknown) })

/** How a request that can no longer be answered fails, given what it was (its method). */
export type FailAll = (what: string) => ProviderFailure

export interface JsonRpcPeerOptions {
  /** The provider instance name, for error messages. */
  readonly provider: string
  /** Writes one message (one line). */
  readonly send: (message: unknown) => Effect.Effect<void, ProviderFailure>
  /** A notification from the other side (decoded as far as method and params). */
  readonly onNotification: (method: string, params: unknown) => void
  /** A request from the other side; the driver must answer it with `respond`. */
  readonly onRequest: (id: RpcId, method: string, params: unknown) => void
  /**
   * Sees each notification before it is decoded; true when it took it (a driver's fast
   * path for reports it reads later). Default: takes nothing.
   */
  readonly intercept?: ((method: string, params: unknown) => boolean) | undefined
  /** Logs a message that was skipped; must not wait (see `LineProcess.later`). */
  readonly warn: (message: string, detail?: unknown) => void
  /** Sends `"jsonrpc": "2.0"` on every message (default: not sent). */
  readonly versioned?: boolean | undefined
}

export interface JsonRpcPeer {
  /**
   * Sends a request and waits for its reply's `result` (not decoded). An error reply
   * fails with kind `error`, "<method>: <message>". `onResult` runs in the reader, in
   * order with the messages around the reply.
   */
  readonly call: (
    method: string,
    params: unknown,
    onResult?: (result: unknown) => void
  ) => Effect.Effect<unknown, ProviderFailure>
  /** Sends a notification. */
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void, ProviderFailure>
  /** Answers a request of the other side. */
  readonly respond: (
    id: RpcId,
    body: { readonly result: unknown } | { readonly error: { readonly code: number; readonly message: string } }
  ) => Effect.Effect<void, ProviderFailure>
  /** Hands over one message read; synchronous. */
  readonly receive: (raw: unknown) => void
  /** Fails every pending request and every later call with `reason` (the first reason wins). */
  readonly failAll: (reason: FailAll) => void
  /** How many requests wait for a reply. */
  readonly pendingCount: () => number
}

interface Pending {
  readonly method: string
  readonly reply: Deferred.Deferred<unknown, ProviderFailure>
  readonly onResult?: ((result: unknown) => void) | undefined
}

const decodeRequest = Schema.decodeUnknownEither(ServerRequest)
const decodeNotification = Schema.decodeUnknownEither(Notification)
const decodeError = Schema.decodeUnknownEither(RpcError)
const decodeResult = Schema.decodeUnknownEither(RpcResult)

export const make = (options: JsonRpcPeerOptions): JsonRpcPeer => {
  const { provider, warn } = options
  const send: JsonRpcPeerOptions["send"] = options.versioned
    ? (message) => options.send({ jsonrpc: "2.0", ...(message as object) })
    : options.send
  const pending = new Map<number, Pending>()
  let closed: FailAll | null = null
  let nextId = 1

  const settle = (id: RpcId, outcome: Exit.Exit<unknown, ProviderFailure>) => {
    if (typeof id !== "number") return
    const entry = pending.get(id)
    if (entry === undefined) return
    pending.delete(id)
    if (Exit.isSuccess(outcome)) entry.onResult?.(outcome.value)
    Deferred.unsafeDone(entry.reply, outcome)
  }

  const onMethod = (raw: object & Record<"method", unknown>): void => {
    if (
      !("id" in raw) &&
      typeof raw.method === "string" &&
      options.intercept?.(raw.method, (raw as { params?: unknown }).params)
    )
      return
    if ("id" in raw) {
      const request = decodeRequest(raw)
      return Either.isRight(request)
        ? options.onRequest(request.right.id, request.right.method, request.right.params)
        : warn(`${provider}: skipping a malformed server request`, request.left.message)
    }
    const notification = decodeNotification(raw)
    return Either.isRight(notification)
      ? options.onNotification(notification.right.method, notification.right.params)
      : warn(`${provider}: skipping a malformed notification`, notification.left.message)
  }

  const receive = (raw: unknown): void => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      return warn(`${provider}: skipping a message that is not an object`, raw)
    if ("method" in raw) return onMethod(raw)
    if ("error" in raw) {
      const error = decodeError(raw)
      if (Either.isLeft(error)) return warn(`${provider}: skipping a malformed error reply`)
      const method = typeof error.right.id === "number" ? pending.get(error.right.id)?.method : undefined
      const detail = `${method ?? "a request"}: ${error.right.error.message}`
      return settle(error.right.id, Exit.fail(new ProviderFailure({ provider, kind: "error", detail })))
    }
    const result = decodeResult(raw)
    if (Either.isLeft(result)) return warn(`${provider}: skipping a malformed reply`)
    settle(result.right.id, Exit.succeed(result.right.result))
  }

  const call = Effect.fnUntraced(function* (method: string, params: unknown, onResult?: (result: unknown) => void) {
    const reply = yield* Deferred.make<unknown, ProviderFailure>()
    const id = yield* Effect.suspend(() => {
      if (closed !== null) return Effect.fail(closed(method))
      const id = nextId++
      pending.set(id, { method, reply, onResult })
      return Effect.succeed(id)
    })
    yield* send({ id, method, params }).pipe(Effect.tapError(() => Effect.sync(() => pending.delete(id))))
    return yield* Deferred.await(reply).pipe(Effect.ensuring(Effect.sync(() => pending.delete(id))))
  })

  const failAll = (reason: FailAll): void => {
    closed ??= reason
    for (const [id, entry] of pending) {
      pending.delete(id)
      Deferred.unsafeDone(entry.reply, Exit.fail(reason(entry.method)))
    }
  }

  return {
    call,
    notify: (method, params) => send(params === undefined ? { method } : { method, params }),
    respond: (id, body) => send({ id, ...body }),
    receive,
    failAll,
    pendingCount: () => pending.size
  }
}

/**
 * Reads `proc`'s messages into `peer` in a scoped fiber; when stdout has closed and the
 * process exited, `onEnd` gets how it ended ("exited with code 1; stderr: …").
 */
export const serve = (
  peer: JsonRpcPeer,
  proc: LineProcess,
  onEnd: (how: string) => Effect.Effect<void>
): Effect.Effect<void, never, Scope.Scope> =>
  proc
    .readMessages(peer.receive)
    .pipe(
      Effect.zipRight(proc.exited),
      Effect.zipRight(proc.describeExit),
      Effect.flatMap(onEnd),
      Effect.forkScoped,
      Effect.asVoid
    )
