/**
 * The typed client for Effect programs: every Skein method, with its schemas, over
 * a WebSocket (`client.thread.create(...)`, `client.run.start(...)`, `client.thread.events(...)`).
 *
 * The connection comes back by itself: when the socket drops (a daemon restart, a
 * network blip) the requests in flight fail with `RpcClientError`, later requests
 * fail fast with it until the socket is open again, and the client keeps reopening
 * it with a backoff capped at 2 s. `followThread` builds on that: a `thread.events`
 * stream that resumes after a drop from the last sequence it delivered.
 *
 * The token: the one given, else `SKEIN_TOKEN`, else (for a daemon on a loopback
 * address) the daemon's token file `DATA_DIR/token`, read under the daemon's own
 * checks: a token file or data directory the daemon would refuse makes the client
 * fail before it sends anything. When the daemon refuses the
 * handshake, requests fail with an `RpcClientError` whose cause is `HandshakeRefused`,
 * saying which token was tried and where the right one is.
 */
import { Socket } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { RpcClientError } from "@effect/rpc/RpcClientError"
import type { SkeinError, StoredEvent, ThreadId } from "@skein/domain"
import { Context, Duration, Effect, Layer, Schedule, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { WebSocket as NodeWebSocket } from "ws"
import { isLoopbackHost, type WeakToken } from "./Auth.js"
import { defaultDataDir, type UnsafeDataDir } from "./DataDir.js"
import { makeSkeinRpcClient, type SkeinClientShape } from "./SkeinRpcClient.js"
import { readTokenFile, type TokenFileError } from "./TokenFile.js"

export interface SkeinClientOptions {
  /** The daemon's RPC url, as printed by `skein daemon` (`ws://127.0.0.1:7878/rpc`). */
  readonly url: string
  /** The daemon's token (sent as the `token` query parameter); see `resolveClientToken` when absent. */
  readonly token?: string | undefined
  /** Where to find the daemon's token file when no token is given (default `$SKEIN_HOME`, else `~/.skein`). */
  readonly dataDir?: string | undefined
}

/** The token a client presents, and where it came from (for error messages; never the token itself). */
export interface ClientToken {
  readonly token: string | undefined
  readonly source: string
}

/** Why a client would not use its token file: it, or its directory, fails the daemon's checks. */
export type ClientTokenError = TokenFileError | WeakToken | UnsafeDataDir

/**
 * The token to present: `options.token`, else `SKEIN_TOKEN`, else, for a loopback
 * url only, the daemon's token file (a token that protects the local daemon is never
 * sent anywhere else). Fails when that file is there but the daemon would refuse it.
 */
export const resolveClientToken = (
  options: SkeinClientOptions,
  env: Readonly<Record<string, string | undefined>> = process.env
): Effect.Effect<ClientToken, ClientTokenError> =>
  Effect.suspend(() => {
    if (options.token !== undefined) return Effect.succeed({ token: options.token, source: "the token given" })
    const fromEnv = env["SKEIN_TOKEN"]
    if (fromEnv !== undefined && fromEnv.trim() !== "") {
      return Effect.succeed({ token: fromEnv.trim(), source: "SKEIN_TOKEN" })
    }
    let host: string
    try {
      host = new URL(options.url).hostname
    } catch {
      return Effect.succeed({ token: undefined, source: "no token" })
    }
    if (!isLoopbackHost(host)) {
      return Effect.succeed({
        token: undefined,
        source: "no token (none given, SKEIN_TOKEN unset; the token file is only for loopback daemons)"
      })
    }
    return Effect.map(readTokenFile(options.dataDir ?? defaultDataDir(env)), (file) =>
      file.token !== undefined
        ? { token: file.token, source: `the token in ${file.path}` }
        : { token: undefined, source: `no token (none given, SKEIN_TOKEN unset, and ${file.path}: ${file.problem})` }
    )
  })

/** The daemon answered the WebSocket upgrade with an HTTP error instead of a connection. */
export class HandshakeRefused extends Schema.TaggedError<HandshakeRefused>()("HandshakeRefused", {
  /** The url without its token. */
  url: Schema.String,
  status: Schema.Number,
  /** Which token was presented (its source, never its value). */
  tokenSource: Schema.String
}) {
  override get message() {
    const what =
      this.status === 401
        ? `it needs the daemon's token, and ${this.tokenSource.startsWith("no token") ? `there was ${this.tokenSource}` : `${this.tokenSource} is not it`}. Pass it with --token or SKEIN_TOKEN; a daemon started without --token keeps it in DATA_DIR/token ($SKEIN_HOME or ~/.skein)`
        : this.status === 403
          ? "it does not allow this client's Origin (start the daemon with --allow-origin ORIGIN)"
          : this.status === 421
            ? "it answers only requests addressed to a loopback name such as 127.0.0.1 or localhost (start the daemon with --allow-host NAME to allow another)"
            : "see the daemon's log"
    return `Skein at ${this.url} refused the connection (HTTP ${this.status}): ${what}.`
  }
}

/** The HTTP status of a refused upgrade, as the `ws` client reports it, anywhere in a cause chain. */
const refusedStatus = (error: unknown): number | undefined => {
  let current: unknown = error
  for (let i = 0; i < 8 && typeof current === "object" && current !== null; i++) {
    const message = (current as { readonly message?: unknown }).message
    const match = typeof message === "string" ? /Unexpected server response: (\d{3})/.exec(message) : null
    if (match !== null) return Number(match[1])
    const next = current as { readonly cause?: unknown; readonly error?: unknown }
    current = next.cause ?? next.error
  }
  return undefined
}

const redactedUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.searchParams.delete("token")
    return parsed.toString()
  } catch {
    return "(the given url)"
  }
}

export type { SkeinClientShape }

/** The url with the token as a query parameter. */
export const clientUrl = (options: SkeinClientOptions): string => {
  if (options.token === undefined) return options.url
  const url = new URL(options.url)
  url.searchParams.set("token", options.token)
  return url.toString()
}

/** 100 ms, doubling, capped at `cap`; unbounded. */
const backoff = (cap: Duration.DurationInput) =>
  Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced(cap)))

/**
 * The `ws` client on every Node version (Node 22's built-in WebSocket does not say
 * which HTTP status refused an upgrade).
 */
const webSocketConstructor = Layer.succeed(
  Socket.WebSocketConstructor,
  (url, protocols) => new NodeWebSocket(url, protocols) as unknown as globalThis.WebSocket
)

/**
 * A client whose connection lives as long as the scope. Fails, without connecting,
 * when the token file it would read is one the daemon would refuse.
 */
export const makeSkeinClient = (
  options: SkeinClientOptions
): Effect.Effect<SkeinClientShape, ClientTokenError, Scope.Scope> =>
  Effect.gen(function* () {
    const { token, source } = yield* resolveClientToken(options)
    const protocol = yield* Layer.build(
      RpcClient.layerProtocolSocket({ retryTransientErrors: false, retrySchedule: backoff("2 seconds") }).pipe(
        Layer.provide(Layer.scoped(Socket.Socket, Socket.makeWebSocket(clientUrl({ url: options.url, token })))),
        Layer.provide(webSocketConstructor),
        Layer.provide(RpcSerialization.layerJson)
      )
    )
    const socket = Context.get(protocol, RpcClient.Protocol)
    // A refused handshake reads as what it is, not as a bare socket error.
    const explain = (error: RpcClientError): RpcClientError => {
      if (error.cause instanceof HandshakeRefused) return error
      const status = refusedStatus(error.cause)
      if (status === undefined) return error
      const refused = new HandshakeRefused({ url: redactedUrl(options.url), status, tokenSource: source })
      return new RpcClientError({ reason: "Protocol", message: refused.message, cause: refused })
    }
    return yield* makeSkeinRpcClient.pipe(
      Effect.provideService(RpcClient.Protocol, {
        ...socket,
        run: (f) =>
          socket.run((message) =>
            f(message._tag === "ClientProtocolError" ? { ...message, error: explain(message.error) } : message)
          ),
        send: (request, transferables) => Effect.mapError(socket.send(request, transferables), explain),
        // The server never waits for chunk acknowledgements (it streams events without
        // them), so the client does not send any.
        supportsAck: false
      })
    )
  })

export interface FollowOptions {
  readonly threadId: ThreadId
  /** Deliver the events after this thread sequence (default 0: the whole log). */
  readonly fromSequence?: number | undefined
  /**
   * How long to keep trying to resume after the connection dropped with no event
   * delivered meanwhile (default 60 s); then the stream fails with the `RpcClientError`.
   */
  readonly resumeFor?: Duration.DurationInput | undefined
}

/**
 * A thread's events, replayed from `fromSequence` and then live, across dropped
 * connections: after a drop it asks again from the last sequence it delivered, so
 * the stream has no gap and no duplicate. Skein's own errors (an unknown thread)
 * end it at once; only transport failures are retried.
 */
export const followThread = (
  client: SkeinClientShape,
  options: FollowOptions
): Stream.Stream<StoredEvent, SkeinError | RpcClientError> =>
  Stream.suspend(() => {
    let last = options.fromSequence ?? 0
    const resume = Stream.suspend(() => client.thread.events({ threadId: options.threadId, fromSequence: last })).pipe(
      Stream.tap((event) =>
        Effect.sync(() => {
          last = event.threadSequence
        })
      )
    )
    return resume.pipe(
      Stream.retry(
        backoff("2 seconds").pipe(
          Schedule.whileInput((error: SkeinError | RpcClientError) => error instanceof RpcClientError),
          Schedule.upTo(options.resumeFor ?? "60 seconds")
        )
      )
    )
  })

export class SkeinClient extends Context.Tag("@skein/server/SkeinClient")<SkeinClient, SkeinClientShape>() {
  static readonly layer = (options: SkeinClientOptions): Layer.Layer<SkeinClient, ClientTokenError> =>
    Layer.scoped(SkeinClient, makeSkeinClient(options))
}
