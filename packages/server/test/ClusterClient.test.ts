/**
 * The cluster client's routing on its own, over stand-in clients that record which
 * daemon each request reached (the daemons themselves: test/server/cluster.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { RpcClientError } from "@effect/rpc/RpcClientError"
import { ThreadId, ThreadNotFound } from "@skein/domain"
import { Chunk, Deferred, Effect, Exit, Fiber, Stream } from "effect"
import type { SkeinClientShape } from "../src/Client.js"
import { daemonKey, makeRouted, makeSkeinClusterClient, threadOf } from "../src/ClusterClient.js"

const URLS = ["ws://127.0.0.1:7001/rpc", "ws://127.0.0.1:7002/rpc", "ws://127.0.0.1:7003/rpc"]
const T = ThreadId.make("thr_routed")

interface Daemons {
  /** Each request as `daemon method`. */
  readonly log: Array<string>
  /** What `thread.locate` answers, asked of any daemon. */
  locate: (threadId: string) => Effect.Effect<{ readonly url: string | null }, unknown>
  /** Daemons that cannot be reached. */
  readonly down: Set<number>
}

/** Three stand-in daemons' clients: each answers a request with its own index. */
const daemons = (): Daemons & { readonly clients: ReadonlyArray<SkeinClientShape> } => {
  const state: Daemons = { log: [], locate: () => Effect.succeed({ url: URLS[1]! }), down: new Set() }
  const client = (i: number) =>
    new Proxy(
      {},
      {
        get: (_, group: string) =>
          new Proxy(
            {},
            {
              get:
                (_, method: string) =>
                (payload: { readonly threadId: string }): unknown => {
                  state.log.push(`${i} ${group}.${method}`)
                  if (state.down.has(i)) {
                    const error = new RpcClientError({ reason: "Protocol", message: "the daemon is down" })
                    return method === "events" ? Stream.fail(error) : Effect.fail(error)
                  }
                  if (method === "locate") return state.locate(payload.threadId)
                  return method === "events" ? Stream.make(i) : Effect.succeed(i)
                }
            }
          )
      }
    ) as unknown as SkeinClientShape
  return Object.assign(state, { clients: [client(0), client(1), client(2)] })
}

const start = (client: SkeinClientShape, threadId = T) =>
  client.run.start({ threadId, provider: "alpha" as never, message: "hi" }) as unknown as Effect.Effect<number, unknown>

describe("the cluster client", () => {
  it.effect("sends a thread's requests, its events too, to the daemon that holds it, located once", () =>
    Effect.gen(function* () {
      const d = daemons()
      const client = makeRouted(d.clients, URLS)
      expect([yield* start(client), yield* start(client)]).toEqual([1, 1])
      const events = yield* Stream.runCollect(client.thread.events({ threadId: T }) as Stream.Stream<unknown, unknown>)
      expect(Chunk.toArray(events)).toEqual([1])
      expect(yield* client.urlFor(T)).toBe(URLS[1])
      expect(d.log.filter((line) => line.endsWith("locate"))).toHaveLength(1)
      expect(d.log.filter((line) => !line.endsWith("locate"))).toEqual([
        "1 run.start",
        "1 run.start",
        "1 thread.events"
      ])
    })
  )

  it.effect("locates a thread once for the requests that arrive together", () =>
    Effect.gen(function* () {
      const d = daemons()
      const answer = yield* Deferred.make<{ readonly url: string | null }>()
      d.locate = () => Deferred.await(answer)
      const client = makeRouted(d.clients, URLS)
      const fiber = yield* Effect.fork(Effect.all([start(client), start(client), start(client)], { concurrency: 3 }))
      // All three are waiting before the answer comes.
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(answer, { url: URLS[2]! })
      expect(yield* Fiber.join(fiber)).toEqual([2, 2, 2])
      expect(d.log.filter((line) => line.endsWith("locate"))).toHaveLength(1)
    })
  )

  it.effect("sends requests that name no thread to the daemons in turn", () =>
    Effect.gen(function* () {
      const d = daemons()
      const client = makeRouted(d.clients, URLS)
      const list = client.provider.list() as unknown as Effect.Effect<number>
      expect([yield* list, yield* list, yield* list, yield* list]).toEqual([0, 1, 2, 0])
    })
  )

  it.effect("goes in turn when the location is unknown, and asks again at the next request", () =>
    Effect.gen(function* () {
      const d = daemons()
      const client = makeRouted(d.clients, URLS)
      // A daemon the client was not given, none, a thread not found: each in turn.
      const answers: Array<Effect.Effect<{ readonly url: string | null }, unknown>> = [
        Effect.succeed({ url: "ws://10.0.0.9:7001/rpc" }),
        Effect.succeed({ url: null }),
        Effect.fail(new ThreadNotFound({ threadId: T }))
      ]
      d.locate = () => answers.shift() ?? Effect.succeed({ url: URLS[0]! })
      const served = [yield* start(client), yield* start(client), yield* start(client), yield* start(client)]
      expect(d.log.filter((line) => line.endsWith("locate"))).toHaveLength(4)
      expect(served).toEqual([0, 1, 2, 0])
    })
  )

  it.effect("locates the thread again after its daemon could not be reached, and never resends", () =>
    Effect.gen(function* () {
      const d = daemons()
      const client = makeRouted(d.clients, URLS)
      expect(yield* start(client)).toBe(1)
      d.down.add(1)
      const failed = yield* Effect.exit(start(client))
      expect(Exit.isFailure(failed)).toBe(true)
      expect(d.log.filter((line) => line.endsWith("run.start"))).toEqual(["1 run.start", "1 run.start"])
      d.down.delete(1)
      d.locate = () => Effect.succeed({ url: URLS[2]! })
      expect(yield* start(client)).toBe(2)
      expect(d.log.filter((line) => line.endsWith("locate"))).toHaveLength(2)
    })
  )

  it.effect("asks the next daemon where a thread lives when one cannot be reached", () =>
    Effect.gen(function* () {
      const d = daemons()
      d.down.add(0)
      d.locate = () => Effect.succeed({ url: URLS[2]! })
      const client = makeRouted(d.clients, URLS)
      expect(yield* start(client)).toBe(2)
      expect(d.log).toEqual(["0 thread.locate", "1 thread.locate", "2 run.start"])
    })
  )

  it.effect("asks again once a location is older than relocateAfter", () =>
    Effect.gen(function* () {
      const d = daemons()
      const client = makeRouted(d.clients, URLS, "0 millis")
      yield* start(client)
      yield* start(client)
      expect(d.log.filter((line) => line.endsWith("locate"))).toHaveLength(2)
    })
  )

  it("finds the thread a payload names, and a daemon whatever its token", () => {
    expect(threadOf({ threadId: "a", parentThreadId: "b" })).toBe("a")
    expect(threadOf({ sourceThreadId: "s" })).toBe("s")
    expect(threadOf({ forkThreadId: "f" })).toBe("f")
    expect(threadOf({ parentThreadId: "p" })).toBe("p")
    expect(threadOf({ handoffId: "h" })).toBeUndefined()
    expect(threadOf(undefined)).toBeUndefined()
    expect(daemonKey("ws://127.0.0.1:7001/rpc?token=x")).toBe(daemonKey("ws://127.0.0.1:7001/rpc/"))
    expect(daemonKey("ws://127.0.0.1:7001/rpc")).not.toBe(daemonKey("ws://127.0.0.1:7002/rpc"))
    expect(daemonKey("not a url")).toBeUndefined()
  })

  it.scoped("refuses no url, or one that is not a url, before it connects", () =>
    Effect.gen(function* () {
      const none = yield* Effect.flip(makeSkeinClusterClient({ urls: [], token: "t".repeat(64) }))
      expect(none._tag).toBe("InvalidInput")
      const bad = yield* Effect.flip(
        makeSkeinClusterClient({ urls: [URLS[0]!, "secret-token"], token: "t".repeat(64) })
      )
      expect(bad.message).toContain("urls[1]")
      expect(bad.message).not.toContain("secret-token")
    })
  )
})
