/**
 * Runs the Skein RPC's request-response methods for Skein's own transports (WebSocket,
 * stdio), in place of `RpcServer`'s generic dispatch, with the same handlers
 * (`SkeinRpcHandlers`) and the same frames on the wire.
 *
 * A request reaches this screened, its payload decoded once (`Screening`): `RpcServer`
 * decoded it a second time, ran it through a runtime made for the request and
 * encoded its answer with an Effect per step. Here a request is one fiber and its
 * answer is encoded synchronously when the fiber ends (`WireCodec`).
 *
 * Fibers run in the dispatch's scope: closing it interrupts every request under way.
 */
import { Headers } from "@effect/platform"
import { SkeinRpcs } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Cause, Effect, Exit, FiberSet, Layer } from "effect"
import type { Fiber, Scope } from "effect"
import { SkeinRpcHandlers } from "./RpcHandlers.js"
import { exitFrame, type MethodCodec, wireCodecs } from "./WireCodec.js"

/** A screened request of a request-response method (not `thread.events`), its payload decoded by the method's schema. */
export interface DispatchRequest {
  readonly id: string
  readonly tag: string
  readonly payload: unknown
  readonly headers: ReadonlyArray<readonly [string, string]>
}

export interface RpcDispatch {
  /**
   * Starts the request's handler in a fiber of its own. `answer` gets the request's
   * `Exit` frame once it ends, unless it was interrupted (by its client, or because
   * its connection or the server closed): whoever interrupts it answers, if anyone.
   * A handler that ends at once may answer before `start` returns.
   */
  readonly start: (
    clientId: number,
    request: DispatchRequest,
    answer: (frame: string) => void
  ) => Fiber.RuntimeFiber<unknown, unknown>
}

type Handler = (
  payload: unknown,
  options: { readonly clientId: number; readonly headers: Headers.Headers }
) => Effect.Effect<unknown, unknown>

const answerFrame = (codec: MethodCodec, requestId: string, exit: Exit.Exit<unknown, unknown>): string => {
  try {
    return exitFrame(
      requestId,
      exit._tag === "Success" ? { _tag: "Success", value: codec.encodeSuccess(exit.value) } : codec.encodeExit(exit)
    )
  } catch (cause) {
    // As `RpcServer` answers then: the request dies, saying why.
    const reason = `the answer could not be encoded: ${cause instanceof Error ? cause.message : String(cause)}`
    return exitFrame(requestId, codec.encodeExit(Exit.die(reason)))
  }
}

/** The dispatch of `SkeinRpcHandlers`, for as long as the scope lasts. */
export const makeRpcDispatch: Effect.Effect<RpcDispatch, never, Orchestrator | Scope.Scope> = Effect.gen(function* () {
  const handlers = yield* Layer.build(SkeinRpcHandlers)
  const runFork = yield* FiberSet.makeRuntime<never>()
  const methods = new Map<string, { readonly handler: Handler; readonly codec: MethodCodec }>()
  for (const codec of wireCodecs.values()) {
    if (codec.stream) continue
    const handler = yield* Effect.provide(SkeinRpcs.accessHandler(codec.tag as never), handlers)
    methods.set(codec.tag, { handler: handler as unknown as Handler, codec })
  }

  const start: RpcDispatch["start"] = (clientId, request, answer) => {
    const { codec, handler } = methods.get(request.tag)!
    const headers = Headers.fromInput(request.headers as ReadonlyArray<[string, string]>)
    const fiber = runFork(Effect.interruptible(Effect.suspend(() => handler(request.payload, { clientId, headers }))))
    fiber.addObserver((exit) => {
      if (exit._tag === "Failure" && Cause.isInterruptedOnly(exit.cause)) return
      answer(answerFrame(codec, request.id, exit))
    })
    return fiber
  }

  return { start }
})
