/**
 * Serves the Skein RPC's request-response methods for Skein's own transports (WebSocket,
 * stdio), in place of `RpcServer`'s generic dispatch, with the same handlers
 * (`SkeinRpcHandlers`) and the same frames on the wire.
 *
 * A request reaches this screened, its payload decoded once (`Screening`), so it is not
 * decoded again here; its answer is encoded synchronously from the handler's exit
 * (`WireCodec`). Who runs the handler, and for how long, is the connection's business
 * (`InFlight`): this module only says what a request runs and how its end is answered.
 */
import { Headers } from "@effect/platform"
import { SkeinRpcs } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Telemetry } from "@skein/runtime"
import { Cause, Effect, Exit, Layer } from "effect"
import type { Scope } from "effect"
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
  /** The request's handler, to run as the request's own (interruptible) fiber. */
  readonly handle: (clientId: number, request: DispatchRequest) => Effect.Effect<unknown, unknown>
  /**
   * The `Exit` frame that answers the request with how its handler ended; none when
   * it was interrupted (by its client, or because its connection or the server
   * closed): whoever interrupts it answers, if anyone.
   */
  readonly answer: (request: DispatchRequest, exit: Exit.Exit<unknown, unknown>) => string | undefined
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
  const methods = new Map<string, { readonly handler: Handler; readonly codec: MethodCodec }>()
  for (const codec of wireCodecs.values()) {
    if (codec.stream) continue
    const handler = yield* Effect.provide(SkeinRpcs.accessHandler(codec.tag as never), handlers)
    methods.set(codec.tag, { handler: handler as unknown as Handler, codec })
  }

  const handle: RpcDispatch["handle"] = (clientId, request) => {
    const { handler } = methods.get(request.tag)!
    const headers = Headers.fromInput(request.headers as ReadonlyArray<[string, string]>)
    return Effect.interruptible(
      Effect.suspend(() => handler(request.payload, { clientId, headers })).pipe(
        Telemetry.traced(`rpc ${request.tag}`, {
          kind: "server",
          attributes: { "rpc.system": "skein", "rpc.method": request.tag }
        })
      )
    )
  }

  const answer: RpcDispatch["answer"] = (request, exit) =>
    exit._tag === "Failure" && Cause.isInterruptedOnly(exit.cause)
      ? undefined
      : answerFrame(methods.get(request.tag)!.codec, request.id, exit)

  return { handle, answer }
})
