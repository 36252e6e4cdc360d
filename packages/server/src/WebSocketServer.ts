/**
 * The daemon's transport: an HTTP server on host:port whose `path` speaks the Skein
 * RPC over WebSocket and whose `/mcp` serves Skein's tools to agents
 * (mcp/McpEndpoint.ts). Loopback by default; other hosts need a token. On a loopback
 * address it answers only requests addressed to a loopback name or an allowed one
 * (`allowedHosts`).
 * The WebSocket layer (`ws`) closes a socket whose single message passes 100 MiB
 * with code 1009 before Skein sees it; messages up to that size that pass
 * `maxFrameBytes` get a typed answer.
 */
import * as Http from "node:http"
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import type { ServeError } from "@effect/platform/HttpServerError"
import { Orchestrator } from "@skein/runtime"
import { Effect, ExecutionStrategy, Scope } from "effect"
import { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RPC_PATH, INSPECT_PATH } from "./Address.js"
import { checkBind, type InsecureBind, isLoopbackHost, type WeakToken } from "./Auth.js"
import { type InvalidAllowedHost, type InvalidOrigin, makeAccessPolicy } from "./Handshake.js"
import { makeInspector } from "./Inspector.js"
import { DEFAULT_MCP_PATH, makeMcpEndpoint } from "./mcp/McpEndpoint.js"
import type { SubagentLimits } from "./mcp/SubagentPolicy.js"
import { type EndpointOptions, makeWebSocketEndpoint } from "./WebSocketEndpoint.js"

export { DEFAULT_HOST, DEFAULT_PORT, DEFAULT_RPC_PATH }

export interface WebSocketServerOptions extends EndpointOptions {
  readonly host?: string | undefined
  /** 0 picks a free port. */
  readonly port?: number | undefined
  readonly path?: string | undefined
  /** Limits on the subagents an agent may start through the tools at `/mcp` (default 3 deep, 8 running). */
  readonly subagentLimits?: SubagentLimits | undefined
}

export interface RunningServer {
  /** Where clients connect, with the real port: `ws://127.0.0.1:7878/rpc`. */
  readonly url: string
  /** Where agents call Skein's tools (MCP), with a tool credential: `http://127.0.0.1:7878/mcp`. */
  readonly mcpUrl: string
  readonly host: string
  readonly port: number
}

const formatHost = (host: string): string => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host)

/** A bind to every interface (`0.0.0.0`, `::`): no address a client could dial. */
const isWildcardHost = (host: string): boolean => ["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"].includes(host)

/**
 * Listens until the scope closes. Closing stops accepting, interrupts every
 * connection's in-flight requests and closes the sockets.
 */
export const serveWebSocket = (
  options: WebSocketServerOptions = {}
): Effect.Effect<
  RunningServer,
  InsecureBind | WeakToken | InvalidOrigin | InvalidAllowedHost | ServeError,
  Orchestrator | Scope.Scope
> =>
  Effect.gen(function* () {
    const host = options.host ?? DEFAULT_HOST
    const path = options.path ?? DEFAULT_RPC_PATH
    yield* checkBind(host, options.token)
    // On loopback, requests must be addressed to a loopback name (or an allowed one).
    const endpointOptions: EndpointOptions = isLoopbackHost(host)
      ? { ...options, allowedHosts: options.allowedHosts ?? [] }
      : options
    // Fail on a weak token, a bad origin or host name before listening (the endpoint checks them too).
    yield* makeAccessPolicy(endpointOptions)
    const nodeServer = Http.createServer()
    // The HTTP server lives in a child scope that closes last: its WebSocket server
    // waits for every socket to close, so the endpoint must close them before.
    const httpScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const server = yield* NodeHttpServer.make(() => nodeServer, { host, port: options.port ?? DEFAULT_PORT }).pipe(
      Scope.extend(httpScope)
    )
    const endpoint = yield* makeWebSocketEndpoint(endpointOptions)
    const tools = yield* makeMcpEndpoint({ ...endpointOptions, limits: options.subagentLimits })
    const inspector = makeInspector(yield* makeAccessPolicy(endpointOptions))
    // Closing runs in reverse: stop accepting and drop idle keep-alives, then the
    // endpoint closes its connections and interrupts their requests, then the HTTP server closes.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        nodeServer.close()
        nodeServer.closeAllConnections()
      })
    )
    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = new URL(request.url, "http://localhost").pathname
      if (pathname === path) return yield* endpoint
      if (pathname === DEFAULT_MCP_PATH) return yield* tools
      if (pathname === "/health") return HttpServerResponse.text("ok")
      if (pathname === INSPECT_PATH || pathname.startsWith(`${INSPECT_PATH}/`)) return yield* inspector
      return HttpServerResponse.text(`Not found. Skein RPC is at ${path}.`, { status: 404 })
    })
    yield* server.serve(app).pipe(Scope.extend(httpScope))
    const address = server.address
    const port = address._tag === "TcpAddress" ? address.port : 0
    const mcpUrl = `http://${formatHost(host)}:${port}${DEFAULT_MCP_PATH}`
    const url = `ws://${formatHost(host)}:${port}${path}`
    // Credentials name it, and the agents Skein runs get the tools from now on.
    const { servedAt, toolCredentials } = yield* Orchestrator
    toolCredentials.setEndpoint(mcpUrl)
    // What `thread.locate` answers; an address for every interface is no address to reach.
    servedAt.set(isWildcardHost(host) ? null : url)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        toolCredentials.setEndpoint(null)
        servedAt.set(null)
      })
    )
    return { url, mcpUrl, host, port }
  })
