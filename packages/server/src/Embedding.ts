/**
 * Skein inside a host Effect application: the runtime (Orchestrator) as a Layer, and
 * the RPC mounted on the host's own HttpLayerRouter under a path of its choosing.
 *
 *   const App = HttpLayerRouter.serve(Layer.mergeAll(HostRoutes, SkeinEmbedding.layer({ ... })))
 */
import { HttpLayerRouter } from "@effect/platform"
import type { DatabaseInUse, InvalidInput, StorageError } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Effect, Layer } from "effect"
import type { WeakToken } from "./Auth.js"
import type { InvalidAllowedHost, InvalidOrigin } from "./Handshake.js"
import { type NoProviders, type SkeinRuntimeOptions, skeinRuntimeLayer } from "./SkeinRuntime.js"
import { type EndpointOptions, makeWebSocketEndpoint } from "./WebSocketEndpoint.js"

export interface SkeinRouteOptions extends EndpointOptions {
  /** Where the WebSocket RPC is mounted, e.g. "/skein/rpc". */
  readonly path: HttpLayerRouter.PathInput
}

export interface SkeinEmbeddingOptions extends SkeinRouteOptions, SkeinRuntimeOptions {}

/** Registers the RPC route on the host's router, for an Orchestrator the host provides. */
const route = (
  options: SkeinRouteOptions
): Layer.Layer<never, WeakToken | InvalidOrigin | InvalidAllowedHost, HttpLayerRouter.HttpRouter | Orchestrator> =>
  HttpLayerRouter.use((router) =>
    Effect.gen(function* () {
      const endpoint = yield* makeWebSocketEndpoint(options)
      yield* router.add("GET", options.path, endpoint)
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
