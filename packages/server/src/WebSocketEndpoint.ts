/**
 * The RPC over WebSocket as an HTTP app: a daemon serves it on its own HTTP server,
 * an embedding host mounts it on its router. Who may connect is decided on the
 * upgrade request (`Handshake`): a refused request gets a plain HTTP 421, 403 or 401 and
 * never becomes a socket.
 */
import type { HttpApp } from "@effect/platform"
import { HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { Orchestrator } from "@skein/runtime"
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"
import type { WeakToken } from "./Auth.js"
import { makeGuardedProtocol } from "./GuardedProtocol.js"
import { admitUpgrade, type InvalidAllowedHost, type InvalidOrigin, makeAccessPolicy } from "./Handshake.js"
import { makeRpcDispatch } from "./RpcDispatch.js"

const NO_RAW_SOCKET =
  "skein: the WebSocket endpoint writes to the `ws` socket of @effect/platform-node, and this server provides none"

/** The `send` of the `ws` socket behind `Socket.WebSocket` on Node (a text frame from bytes). */
interface NodeWebSocket {
  readonly send: (data: Uint8Array, options: { readonly binary: boolean }) => void
}

export interface EndpointOptions {
  /**
   * Required on every connection when set (`Authorization: Bearer T` or `?token=T`);
   * at least 32 random characters. Without one, only the Origin check protects the
   * endpoint: a host that mounts it so relies on its own protection.
   */
  readonly token?: string | undefined
  /** Where the token came from, for the error when it is too weak (default "the token"). */
  readonly tokenSource?: string | undefined
  /**
   * Origins (`http://localhost:5173`) whose pages may connect. A request that carries
   * any other `Origin` header is refused with 403; requests without one (programs,
   * not browsers) are not concerned. None by default.
   */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /**
   * When given (even empty), a request must be addressed (its `Host` header) to a
   * loopback address, `localhost`, or one of these names, else it is refused with 421:
   * for an endpoint served on loopback only, this defeats DNS rebinding. A daemon on a
   * loopback address always checks (`--allow-host` adds names); by default an
   * embedding host's endpoint does not.
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** Largest accepted frame in bytes (default 4 MiB). */
  readonly maxFrameBytes?: number | undefined
  /**
   * How many bytes may wait unsent to one client before it is disconnected as too
   * slow (default 64 MiB). It reconnects and resumes from its last sequence.
   */
  readonly maxBufferedBytes?: number | undefined
}

/**
 * Starts serving the RPC in the current scope and returns the HTTP app that upgrades a
 * request to a WebSocket connection of it. Each connection lives in its own scope,
 * closed when the socket closes.
 */
export const makeWebSocketEndpoint = (
  options: EndpointOptions = {}
): Effect.Effect<HttpApp.Default, WeakToken | InvalidOrigin | InvalidAllowedHost, Orchestrator | Scope.Scope> =>
  Effect.gen(function* () {
    const policy = yield* makeAccessPolicy(options)
    const orchestrator = yield* Orchestrator
    const maxBufferedBytes = options.maxBufferedBytes ?? 64 * 1024 * 1024
    const guarded = yield* makeGuardedProtocol({
      maxFrameBytes: options.maxFrameBytes,
      follow: orchestrator.follow,
      dispatch: yield* makeRpcDispatch
    })
    // When the scope closes, every open connection ends first (its socket closes),
    // then the requests still under way are interrupted.
    const closing = yield* Deferred.make<void>()
    // A refused origin or Host name is logged once (a page may retry in a loop): the
    // user learns which page tried, or which origin or name to allow.
    const reported = new Set<string>()
    const reportOnce = (key: string, warning: string) =>
      Effect.suspend(() => {
        if (reported.has(key) || reported.size >= 64) return Effect.void
        reported.add(key)
        return Effect.logWarning(warning)
      })
    const reportRefused = (admission: { readonly origin?: string; readonly host?: string }) =>
      admission.host !== undefined
        ? reportOnce(
            `host ${admission.host}`,
            `skein: refused a request addressed to Host ${JSON.stringify(admission.host)} (not a loopback name nor allowed by --allow-host)`
          )
        : admission.origin !== undefined
          ? reportOnce(
              `origin ${admission.origin}`,
              `skein: refused a WebSocket from a page of origin ${JSON.stringify(admission.origin)} (not allowed by --allow-origin)`
            )
          : Effect.void
    yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // Refused first: a request addressed to a foreign name (421) or from a page of
      // another origin (403), upgrade or not.
      const admission = admitUpgrade(request, policy)
      if (admission._tag === "Refuse") {
        yield* reportRefused(admission)
        return HttpServerResponse.text(admission.reason, {
          status: admission.status,
          headers: admission.status === 401 ? { "www-authenticate": 'Bearer realm="skein"' } : {}
        })
      }
      if ((request.headers["upgrade"] ?? "").toLowerCase() !== "websocket") {
        return HttpServerResponse.text("Skein RPC: connect with a WebSocket.", { status: 426 })
      }
      const socket = yield* Effect.orDie(request.upgrade)
      const write = yield* socket.writer
      // The open socket itself, for synchronous answers and event fan-out: known from
      // the first frame, before anything is to be written.
      let open: globalThis.WebSocket | undefined
      const connection = yield* guarded.connect({
        headers: Object.entries(request.headers).filter(([name]) => name !== "authorization"),
        write: (frame) => Effect.orDie(write(frame)),
        writeNow: (frame) => {
          // `open` is known: only a frame leads to a write. Closing: nothing more reaches
          // this client; it resumes from its last sequence.
          if (open === undefined || open.readyState !== 1) return
          if (open.bufferedAmount > maxBufferedBytes) {
            // A follower that does not read would hold server memory without bound.
            return open.close(1008, "Skein: events are read too slowly; reconnect from the last sequence seen")
          }
          // A text frame from the shared bytes: `ws` frames them without a copy.
          ;(open as unknown as NodeWebSocket).send(frame.bytes, { binary: false })
        }
      })
      const onFrame = (frame: string | Uint8Array) =>
        Effect.flatMap(Effect.serviceOption(Socket.WebSocket), (ws) => {
          if (ws._tag === "None") return Effect.dieMessage(NO_RAW_SOCKET)
          open = ws.value
          return connection.onFrame(frame)
        })
      yield* socket.runRaw(onFrame).pipe(
        Effect.catchIf(
          (error) => error.reason === "Close",
          () => Effect.void
        ),
        Effect.catchAll((error) => Effect.logDebug("skein: socket error", error)),
        Effect.ensuring(connection.close),
        Effect.raceFirst(Deferred.await(closing)),
        Effect.interruptible
      )
      return HttpServerResponse.empty()
    }).pipe(Effect.scoped)
  })
