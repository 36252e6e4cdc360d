/**
 * The typed client for Effect programs: every Skein method, with its schemas, over
 * a WebSocket (`client.thread.create(...)`, `client.run.start(...)`, `client.thread.events(...)`).
 */
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import type { RpcGroup } from "@effect/rpc"
import { SkeinRpcs } from "@skein/domain"
import { Context, Effect, Layer, Schedule } from "effect"
import type { Scope } from "effect"

export interface SkeinClientOptions {
  /** The daemon's RPC url, as printed by `skein daemon` (`ws://127.0.0.1:7878/rpc`). */
  readonly url: string
  /** The daemon's token, if it has one (sent as the `token` query parameter). */
  readonly token?: string | undefined
  /** How many times to retry opening the socket before requests fail (default 4). */
  readonly connectRetries?: number | undefined
}

export type SkeinClientShape = RpcClient.RpcClient<RpcGroup.Rpcs<typeof SkeinRpcs>, RpcClientError>

/** The url with the token as a query parameter. */
export const clientUrl = (options: SkeinClientOptions): string => {
  if (options.token === undefined) return options.url
  const url = new URL(options.url)
  url.searchParams.set("token", options.token)
  return url.toString()
}

/** A client whose connection lives as long as the scope. */
export const makeSkeinClient = (options: SkeinClientOptions): Effect.Effect<SkeinClientShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const protocol = yield* Layer.build(
      RpcClient.layerProtocolSocket({
        retryTransientErrors: false,
        retrySchedule: Schedule.exponential("100 millis").pipe(
          Schedule.intersect(Schedule.recurs(options.connectRetries ?? 4))
        )
      }).pipe(Layer.provide(NodeSocket.layerWebSocket(clientUrl(options))), Layer.provide(RpcSerialization.layerJson))
    )
    // The server never waits for chunk acknowledgements (it streams events without
    // them), so the client does not send any.
    const socket = Context.get(protocol, RpcClient.Protocol)
    return yield* RpcClient.make(SkeinRpcs, { disableTracing: true }).pipe(
      Effect.provideService(RpcClient.Protocol, { ...socket, supportsAck: false })
    )
  })

export class SkeinClient extends Context.Tag("@skein/server/SkeinClient")<SkeinClient, SkeinClientShape>() {
  static readonly layer = (options: SkeinClientOptions): Layer.Layer<SkeinClient> =>
    Layer.scoped(SkeinClient, makeSkeinClient(options))
}
