/**
 * One connection of the guarded protocol, over the real dispatch and handlers, with an
 * Orchestrator whose few methods these cases call answer as each case needs: what a
 * connection answers, and that nothing it started outlives it.
 */
import { describe, expect, it } from "@effect/vitest"
import { ThreadId } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import { Deferred, Effect, Exit, Scope } from "effect"
import { makeGuardedProtocol } from "../src/GuardedProtocol.js"
import { makeRpcDispatch } from "../src/RpcDispatch.js"

type Shape = Orchestrator["Type"]

const thread = ThreadId.make("thr_guarded")
const request = (id: string, tag: string, payload: unknown) =>
  JSON.stringify({ _tag: "Request", id, tag, payload, headers: [] })

const withConnection = (orchestrator: Partial<Shape>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const provided = <A, E>(effect: Effect.Effect<A, E, Orchestrator | Scope.Scope>) =>
      effect.pipe(Effect.provideService(Orchestrator, orchestrator as Shape), Scope.extend(scope))
    const dispatch = yield* provided(makeRpcDispatch)
    const guarded = yield* makeGuardedProtocol({ follow: () => Effect.never, dispatch })
    const frames: Array<any> = []
    const connection = yield* guarded.connect({ write: (frame) => Effect.sync(() => frames.push(JSON.parse(frame))) })
    /** Waits (1 s at most) until `n` frames were written. */
    const written = (n: number) =>
      Effect.gen(function* () {
        for (let i = 0; i < 200 && frames.length < n; i++) yield* Effect.sleep("5 millis")
        return frames
      })
    return { connection, frames, scope, written }
  })

describe("a guarded connection", () => {
  it.live("closing it interrupts its requests under way, and answers none of them", () =>
    Effect.gen(function* () {
      let stopped = 0
      const started = yield* Deferred.make<void>()
      const { connection, frames, scope } = yield* withConnection({
        getThread: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.zipRight(Effect.never),
            Effect.onInterrupt(() => Effect.sync(() => stopped++))
          )
      })
      yield* connection.onFrame(request("1", "thread.get", { threadId: thread }))
      yield* Deferred.await(started)
      yield* connection.close
      expect(stopped).toBe(1)
      expect(frames).toEqual([])
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.live("an Interrupt answers its request once, as interrupted; the id is free again; a Ping gets a Pong", () =>
    Effect.gen(function* () {
      const { connection, scope, written } = yield* withConnection({
        getThread: () => Effect.never,
        listProviders: Effect.succeed([])
      })
      yield* connection.onFrame(request("1", "thread.get", { threadId: thread }))
      yield* Effect.sleep("10 millis")
      yield* connection.onFrame(JSON.stringify({ _tag: "Interrupt", requestId: "1" }))
      // An Interrupt of a request that is not under way says nothing.
      yield* connection.onFrame(JSON.stringify({ _tag: "Interrupt", requestId: "9" }))
      yield* connection.onFrame(request("1", "provider.list", {}))
      yield* connection.onFrame(JSON.stringify({ _tag: "Ping" }))
      const frames = yield* written(3)
      yield* Effect.sleep("20 millis")
      expect(frames).toHaveLength(3)
      expect(frames[0]).toMatchObject({
        _tag: "Exit",
        requestId: "1",
        exit: { _tag: "Failure", cause: { _tag: "Interrupt" } }
      })
      expect(frames.slice(1)).toEqual(
        expect.arrayContaining([
          { _tag: "Exit", requestId: "1", exit: { _tag: "Success", value: [] } },
          { _tag: "Pong" }
        ])
      )
      yield* connection.close
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.live("a request whose id is under way is refused with InvalidInput, and the first one is still answered", () =>
    Effect.gen(function* () {
      const release = yield* Deferred.make<void>()
      const { connection, scope, written } = yield* withConnection({
        listProviders: Deferred.await(release).pipe(Effect.as([]))
      })
      yield* connection.onFrame(request("4", "provider.list", {}))
      yield* connection.onFrame(request("4", "provider.list", {}))
      const [refused] = yield* written(1)
      expect(refused).toMatchObject({
        _tag: "Exit",
        requestId: "4",
        exit: { _tag: "Failure", cause: { _tag: "Fail", error: { _tag: "InvalidInput" } } }
      })
      yield* Deferred.succeed(release, undefined)
      const frames = yield* written(2)
      expect(frames[1]).toEqual({ _tag: "Exit", requestId: "4", exit: { _tag: "Success", value: [] } })
      yield* connection.close
      yield* Scope.close(scope, Exit.void)
    })
  )
})
