/**
 * A client of the daemons of one cluster (`skein daemon --cluster`) that sends each
 * thread's requests to the daemon whose runner holds the thread. Any daemon serves any
 * request, but one that does not hold the thread passes it on to the runner that does,
 * and its answer back: a hop, in time and in both daemons' work, on every request.
 *
 * - Where a thread lives is asked once (`thread.locate`, of the daemons in turn until
 *   one answers) and trusted for `relocateAfter`; requests for the thread meanwhile wait
 *   for that one answer. A thread that moved since only costs the hop until it is asked
 *   again.
 * - A request is routed by the thread its payload names (`threadId`, else
 *   `sourceThreadId`, `forkThreadId`, `parentThreadId`); the others go to the daemons
 *   in turn. When the thread's location is unknown, or is a daemon not in `urls`, its
 *   request goes to the daemon that answered.
 * - A request whose daemon cannot be reached fails as with one client (`RpcClientError`),
 *   never sent twice; the thread is located afresh at its next request.
 */
import { RpcClientError } from "@effect/rpc/RpcClientError"
import { isStreamSchema } from "@effect/rpc/RpcSchema"
import { InvalidInput, SkeinRpcs, type ThreadId } from "@skein/domain"
import { Deferred, Duration, Effect, FiberId, Stream } from "effect"
import type { Scope } from "effect"
import { type ClientTokenError, makeSkeinClient, type SkeinClientShape } from "./Client.js"

export interface SkeinClusterClientOptions {
  /** The RPC url of each daemon of the cluster, as each printed it. */
  readonly urls: ReadonlyArray<string>
  /** The cluster's token (its daemons share one); else as for `makeSkeinClient`. */
  readonly token?: string | undefined
  readonly dataDir?: string | undefined
  /** How long a thread's location is trusted before it is asked again (default 10 s). */
  readonly relocateAfter?: Duration.DurationInput | undefined
}

export type SkeinClusterClientShape = SkeinClientShape & {
  /** The url of the daemon the thread's next request goes to. */
  readonly urlFor: (threadId: ThreadId) => Effect.Effect<string>
}

/** The fields a payload names its thread by, in the order they are looked for. */
const THREAD_FIELDS = ["threadId", "sourceThreadId", "forkThreadId", "parentThreadId"] as const

/** The thread a payload names, if any. */
export const threadOf = (payload: unknown): string | undefined => {
  if (typeof payload !== "object" || payload === null) return undefined
  for (const field of THREAD_FIELDS) {
    const value = (payload as Record<string, unknown>)[field]
    if (typeof value === "string") return value
  }
  return undefined
}

/** One daemon's url whatever its token, query or trailing slash: its host, port and path. */
export const daemonKey = (url: string): string | undefined => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, "")}`
  } catch {
    return undefined
  }
}

/** Locations kept before the expired ones are dropped. */
const PRUNE_AT = 10_000

interface Located {
  readonly until: number
  readonly daemon: Deferred.Deferred<number>
}

/**
 * The routing over one client per daemon (`clients[i]` serving `urls[i]`); any client
 * protocol, so that the routing is tested without sockets.
 */
export const makeRouted = (
  clients: ReadonlyArray<SkeinClientShape>,
  urls: ReadonlyArray<string>,
  relocateAfter: Duration.DurationInput = Duration.seconds(10)
): SkeinClusterClientShape => {
  const ttl = Duration.toMillis(relocateAfter)
  const indexOf = new Map(urls.map((url, i) => [daemonKey(url), i]))
  const located = new Map<string, Located>()
  let turn = 0
  const inTurn = () => turn++ % clients.length

  const locate = (threadId: string): Effect.Effect<number> =>
    Effect.suspend(() => {
      const known = located.get(threadId)
      if (known !== undefined && known.until > Date.now()) return Deferred.await(known.daemon)
      if (located.size >= PRUNE_AT) {
        const now = Date.now()
        for (const [key, entry] of located) if (entry.until <= now) located.delete(key)
      }
      const daemon = Deferred.unsafeMake<number>(FiberId.none)
      const entry = { until: Date.now() + ttl, daemon }
      located.set(threadId, entry)
      const forget = Effect.sync(() => {
        if (located.get(threadId) === entry) located.delete(threadId)
      })
      /** Asked of the daemons in turn until one answers; a daemon that answers serves when the answer is no daemon of ours. */
      const ask = (left: number): Effect.Effect<number> => {
        const asked = inTurn()
        return clients[asked]!.thread.locate({ threadId: threadId as ThreadId }).pipe(
          Effect.flatMap(({ url }) => {
            const index = url === null ? undefined : indexOf.get(daemonKey(url))
            return index === undefined ? Effect.as(forget, asked) : Effect.succeed(index)
          }),
          Effect.catchAll((error) =>
            error instanceof RpcClientError && left > 1
              ? ask(left - 1)
              : // An unknown thread, or no daemon answered: this request goes there, the next asks again.
                Effect.as(forget, asked)
          )
        )
      }
      return ask(clients.length).pipe(
        Effect.tap((index) => Deferred.succeed(daemon, index)),
        // Whoever waits on it is answered even if this asker is interrupted.
        Effect.onInterrupt(() => Effect.zipRight(forget, Deferred.succeed(daemon, inTurn())))
      )
    })

  /** Forgets where the thread is when its daemon could not be reached. */
  const unreachable = (threadId: string) => (error: unknown) =>
    error instanceof RpcClientError ? Effect.sync(() => void located.delete(threadId)) : Effect.void

  /** The request sent where its thread lives, or in turn; a stream when the method streams and no mailbox is asked for. */
  const send = (
    streams: boolean,
    threadId: string | undefined,
    request: (client: SkeinClientShape) => Effect.Effect<unknown, unknown> | Stream.Stream<unknown, unknown>
  ) => {
    const daemon = threadId === undefined ? Effect.sync(inTurn) : locate(threadId)
    const forget = threadId === undefined ? () => Effect.void : unreachable(threadId)
    return streams
      ? Stream.unwrap(Effect.map(daemon, (i) => request(clients[i]!) as Stream.Stream<unknown, unknown>)).pipe(
          Stream.tapError(forget)
        )
      : Effect.flatMap(daemon, (i) => request(clients[i]!) as Effect.Effect<unknown, unknown>).pipe(
          Effect.tapError(forget)
        )
  }

  const groups: Record<string, Record<string, unknown>> = {}
  for (const rpc of SkeinRpcs.requests.values()) {
    const [group, method] = rpc._tag.split(".") as [string, string]
    const streams = isStreamSchema(rpc.successSchema)
    ;(groups[group] ??= {})[method] = (payload: unknown, options?: { readonly asMailbox?: boolean }) =>
      send(streams && options?.asMailbox !== true, threadOf(payload), (client) =>
        (client as unknown as Record<string, Record<string, (p: unknown, o: unknown) => never>>)[group]![method]!(
          payload,
          options
        )
      )
  }
  const urlFor = (threadId: ThreadId) => Effect.map(locate(threadId), (i) => urls[i]!)
  return { ...groups, urlFor } as unknown as SkeinClusterClientShape
}

/**
 * A client of the cluster whose daemons serve at `options.urls`, connected to each for
 * as long as the scope lasts. Fails when no url is given, or on a token file a daemon
 * would refuse.
 */
export const makeSkeinClusterClient = (
  options: SkeinClusterClientOptions
): Effect.Effect<SkeinClusterClientShape, ClientTokenError | InvalidInput, Scope.Scope> =>
  Effect.gen(function* () {
    if (options.urls.length === 0) {
      return yield* new InvalidInput({ detail: "a cluster client needs the url of at least one daemon" })
    }
    const unreadable = options.urls.findIndex((url) => daemonKey(url) === undefined)
    if (unreadable >= 0) return yield* new InvalidInput({ detail: `urls[${unreadable}] is not a url` })
    const clients = yield* Effect.forEach(options.urls, (url) =>
      makeSkeinClient({ url, token: options.token, dataDir: options.dataDir })
    )
    return makeRouted(clients, options.urls, options.relocateAfter)
  })
