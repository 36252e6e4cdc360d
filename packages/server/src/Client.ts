/**
 * The typed client for Effect programs: every Skein method, with its schemas, over
 * a WebSocket (`client.thread.create(...)`, `client.run.start(...)`, `client.thread.events(...)`).
 *
 * The connection comes back by itself: when the socket drops (a daemon restart, a
 * network blip) the requests in flight fail with `RpcClientError`, later requests
 * fail fast with it until the socket is open again, and the client keeps reopening
 * it with a backoff capped at 2 s. `followThread` builds on that: a `thread.events`
 * stream that resumes after a drop from the last sequence it delivered.
 */
import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { RpcClientError } from "@effect/rpc/RpcClientError"
import type { RpcGroup } from "@effect/rpc"
import type { SkeinError, StoredEvent, ThreadId } from "@skein/domain"
import { SkeinRpcs } from "@skein/domain"
import { Context, Duration, Effect, Layer, Schedule, Stream } from "effect"
import type { Scope } from "effect"

export interface SkeinClientOptions {
  /** The daemon's RPC url, as printed by `skein daemon` (`ws://127.0.0.1:7878/rpc`). */
  readonly url: string
  /** The daemon's token, if it has one (sent as the `token` query parameter). */
  readonly token?: string | undefined
}

export type SkeinClientShape = RpcClient.RpcClient<RpcGroup.Rpcs<typeof SkeinRpcs>, RpcClientError>

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

/** A client whose connection lives as long as the scope. */
export const makeSkeinClient = (options: SkeinClientOptions): Effect.Effect<SkeinClientShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const protocol = yield* Layer.build(
      RpcClient.layerProtocolSocket({ retryTransientErrors: false, retrySchedule: backoff("2 seconds") }).pipe(
        Layer.provide(NodeSocket.layerWebSocket(clientUrl(options))),
        Layer.provide(RpcSerialization.layerJson)
      )
    )
    // The server never waits for chunk acknowledgements (it streams events without
    // them), so the client does not send any.
    const socket = Context.get(protocol, RpcClient.Protocol)
    return yield* RpcClient.make(SkeinRpcs, { disableTracing: true }).pipe(
      Effect.provideService(RpcClient.Protocol, { ...socket, supportsAck: false })
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
  static readonly layer = (options: SkeinClientOptions): Layer.Layer<SkeinClient> =>
    Layer.scoped(SkeinClient, makeSkeinClient(options))
}
