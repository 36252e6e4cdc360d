/**
 * Skein inside a host Effect application: the runtime (Orchestrator) as a Layer, and
 * the RPC (and, with `mcpPath`, Skein's tools over MCP) mounted on the host's own
 * HttpLayerRouter under paths of its choosing.
 *
 *   const App = HttpLayerRouter.serve(Layer.mergeAll(HostRoutes, SkeinEmbedding.layer({ ... })))
 */
import { HttpLayerRouter } from "@effect/platform"
import type { DatabaseInUse, InvalidInput, StorageError } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import { Effect, Layer } from "effect"
import type { WeakToken } from "./Auth.js"
import type { InvalidAllowedHost, InvalidOrigin } from "./Handshake.js"
import { type NoProviders, type SkeinRuntimeOptions, skeinRuntimeLayer } from "./SkeinRuntime.js"
import { makeMcpEndpoint } from "./mcp/McpEndpoint.js"
import { type EndpointOptions, makeWebSocketEndpoint } from "./WebSocketEndpoint.js"

export interface SkeinRouteOptions extends EndpointOptions {
  /** Where the WebSocket RPC is mounted, e.g. "/skein/rpc". */
  readonly path: HttpLayerRouter.PathInput
  /** Where Skein's tools (MCP) are mounted, e.g. "/skein/mcp"; none when absent. */
  readonly mcpPath?: HttpLayerRouter.PathInput | undefined
  /** The absolute URL agents reach `mcpPath` at, which `thread.toolCredential` answers with. */
  readonly mcpUrl?: string | undefined
}

export interface SkeinEmbeddingOptions extends SkeinRouteOptions, SkeinRuntimeOptions {}

/** Registers the RPC route on the host's router, for an Orchestrator the host provides. */
const route = (
  options: SkeinRouteOptions
): Layer.Layer<never, WeakToken | InvalidOrigin | InvalidAllowedHost, HttpLayerRouter.HttpRouter | Orchestrator> =>
  HttpLayerRouter.use((router) =>
    Effect.gen(function* () {
      yield* router.add("GET", options.path, yield* makeWebSocketEndpoint(options))
      if (options.mcpPath === undefined) return
      yield* router.add("*", options.mcpPath, yield* makeMcpEndpoint(options))
      // With its URL known, credentials name it and the agents Skein runs get the tools too.
      if (options.mcpUrl !== undefined) (yield* Orchestrator).toolCredentials.setEndpoint(options.mcpUrl)
    })
  )

/**
 * The runtime and its route together: provides `Orchestrator` to the host (to call
 * it directly) and serves the RPC at `options.path` on the host's router.
 */
const layer = (
  options: SkeinEmbeddingOptions
): Layer.Layer<
  Orchestrator,
  StorageError | InvalidInput | DatabaseInUse | NoProviders | WeakToken | InvalidOrigin | InvalidAllowedHost,
  HttpLayerRouter.HttpRouter
> => route(options).pipe(Layer.provideMerge(skeinRuntimeLayer(options)))

export const SkeinEmbedding = { layer, route } as const
