/**
 * The dispatch on its own: the handlers are the real `SkeinRpcHandlers`, over an
 * Orchestrator whose few methods these cases call answer as each case needs (the
 * whole runtime is behind it in test/server).
 */
import { describe, expect, it } from "@effect/vitest"
import { ThreadId, ThreadNotFound } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import { Deferred, Effect, Exit, Fiber, FiberSet, Scope } from "effect"
import { makeRpcDispatch } from "../src/RpcDispatch.js"
import { wireCodecs } from "../src/WireCodec.js"

type Shape = Orchestrator["Type"]

const withDispatch = (orchestrator: Partial<Shape>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const dispatch = yield* makeRpcDispatch.pipe(
      Effect.provideService(Orchestrator, orchestrator as Shape),
      Scope.extend(scope)
    )
    // Each request a fiber of the scope, answered when it ends, as a connection runs it (`InFlight`).
    const fork = yield* FiberSet.makeRuntime<never>().pipe(Scope.extend(scope))
    const answers: Array<{ readonly id: string; readonly frame: any }> = []
    const start = (id: string, tag: string, payload: unknown) => {
      const request = { id, tag, payload, headers: [] }
      const fiber = fork(dispatch.handle(0, request))
      fiber.addObserver((exit) => {
        const frame = dispatch.answer(request, exit)
        if (frame !== undefined) answers.push({ id, frame: JSON.parse(frame) })
      })
      return fiber
    }
    return { dispatch, scope, answers, start }
  })

const thread = ThreadId.make("thr_dispatch")

describe("RpcDispatch", () => {
  it("answers a success once, as the client's codec reads it", () =>
    Effect.gen(function* () {
      const { answers, start } = yield* withDispatch({ listProviders: Effect.succeed([]) })
      const fiber = start("1", "provider.list", undefined)
      yield* Fiber.await(fiber)
      expect(answers).toEqual([
        { id: "1", frame: { _tag: "Exit", requestId: "1", exit: { _tag: "Success", value: [] } } }
      ])
      expect(wireCodecs.get("provider.list")!.decodeExit(answers[0]!.frame.exit)).toEqual(Exit.succeed([]))
    }).pipe(Effect.runPromise))

  it("answers a typed failure as itself, and a defect as the request's own death, with its message", () =>
    Effect.gen(function* () {
      const { answers, start } = yield* withDispatch({
        getThread: (threadId) => Effect.fail(new ThreadNotFound({ threadId })),
        listProviders: Effect.die(new Error("the registry fell over"))
      })
      yield* Fiber.await(start("1", "thread.get", { threadId: thread }))
      yield* Fiber.await(start("2", "provider.list", undefined))
      const [failed, died] = answers
      const failure = wireCodecs.get("thread.get")!.decodeExit(failed!.frame.exit)
      expect(Exit.isFailure(failure) && failure.cause._tag === "Fail" && failure.cause.error).toBeInstanceOf(
        ThreadNotFound
      )
      expect(died!.frame.exit).toMatchObject({ _tag: "Failure", cause: { _tag: "Die" } })
      expect(JSON.stringify(died!.frame)).toContain("the registry fell over")
    }).pipe(Effect.runPromise))

  it("answers a success its schema refuses as the request's death, saying it could not be encoded", () =>
    Effect.gen(function* () {
      const { answers, start } = yield* withDispatch({ listProviders: Effect.succeed([{ name: 7 }] as never) })
      yield* Fiber.await(start("1", "provider.list", undefined))
      expect(answers[0]!.frame.exit).toMatchObject({ _tag: "Failure", cause: { _tag: "Die" } })
      expect(JSON.stringify(answers[0]!.frame)).toContain("could not be encoded")
    }).pipe(Effect.runPromise))

  it("does not answer a request that was interrupted: its interrupter does", () =>
    Effect.gen(function* () {
      const stopped = yield* Deferred.make<void>()
      const { answers, start } = yield* withDispatch({
        getThread: () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(stopped, undefined)))
      })
      const fiber = start("1", "thread.get", { threadId: thread })
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(stopped)
      expect(answers).toEqual([])
    }).pipe(Effect.runPromise))

  it("interrupts every request under way when its scope closes", () =>
    Effect.gen(function* () {
      let stopped = 0
      const { answers, scope, start } = yield* withDispatch({
        getThread: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => stopped++)))
      })
      const fibers = [start("1", "thread.get", { threadId: thread }), start("2", "thread.get", { threadId: thread })]
      yield* Effect.yieldNow()
      yield* Scope.close(scope, Exit.void)
      for (const fiber of fibers) expect(Exit.isInterrupted(yield* Fiber.await(fiber))).toBe(true)
      expect(stopped).toBe(2)
      expect(answers).toEqual([])
    }).pipe(Effect.runPromise))
})
