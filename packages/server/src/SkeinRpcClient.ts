/**
 * The typed Skein client over any client protocol (a WebSocket, a child's stdio):
 * `@effect/rpc`'s request bookkeeping (`RpcClient.makeNoSerialization`: ids,
 * interruption, streams as mailboxes) with Skein's synchronous codecs (`WireCodec`)
 * in place of `RpcClient.make`'s, which decode every answer through the method's
 * `Schema.Exit` with an Effect per step. Every answer is still decoded by its schema
 * before a caller sees it.
 */
import { RpcClient, RpcMessage } from "@effect/rpc"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import type { RpcGroup } from "@effect/rpc"
import { SkeinRpcs } from "@skein/domain"
import { Effect, Exit, Schema } from "effect"
import type { Scope } from "effect"
import { type MethodCodec, wireCodecs } from "./WireCodec.js"

export type SkeinClientShape = RpcClient.RpcClient<RpcGroup.Rpcs<typeof SkeinRpcs>, RpcClientError>

const decodeDefect = Schema.decodeSync(Schema.Defect)

/** A client over the protocol in context, for as long as the scope lasts. */
export const makeSkeinRpcClient: Effect.Effect<SkeinClientShape, never, RpcClient.Protocol | Scope.Scope> = Effect.gen(
  function* () {
    const protocol = yield* RpcClient.Protocol
    // Requests sent and not answered yet, by id, with the codecs of their method.
    const pending = new Map<string, MethodCodec>()
    const { client, write } = yield* RpcClient.makeNoSerialization(SkeinRpcs, {
      // A span per call (`SkeinClient.run.start`), local to the caller: no trace ids go on the wire.
      spanPrefix: "SkeinClient",
      supportsAck: protocol.supportsAck,
      onFromClient: ({ message }) => {
        switch (message._tag) {
          case "Request": {
            const id = String(message.id)
            const codec = wireCodecs.get(message.tag)!
            let payload: unknown
            try {
              payload = codec.encodePayload(message.payload)
            } catch (error) {
              return Effect.die(error)
            }
            pending.set(id, codec)
            return protocol.send({
              _tag: "Request",
              id,
              tag: message.tag,
              payload: payload as never,
              headers: Object.entries(message.headers)
            })
          }
          case "Ack":
          case "Interrupt": {
            const requestId = String(message.requestId)
            if (!pending.has(requestId)) return Effect.void
            if (message._tag === "Interrupt") pending.delete(requestId)
            return protocol.send({ _tag: message._tag, requestId })
          }
          default:
            return Effect.void
        }
      }
    })
    const exit = (requestId: string, value: Exit.Exit<unknown, unknown>) =>
      write({ _tag: "Exit", clientId: 0, requestId: RpcMessage.RequestId(requestId), exit: value as never })
    yield* protocol
      .run((message) => {
        switch (message._tag) {
          case "Chunk": {
            const codec = pending.get(message.requestId)
            if (codec === undefined) return Effect.void
            let values: ReadonlyArray<unknown>
            try {
              values = codec.decodeChunk(message.values)
            } catch (error) {
              pending.delete(message.requestId)
              return exit(message.requestId, Exit.die(error))
            }
            return write({
              _tag: "Chunk",
              clientId: 0,
              requestId: RpcMessage.RequestId(message.requestId),
              values: values as never
            })
          }
          case "Exit": {
            const codec = pending.get(message.requestId)
            if (codec === undefined) return Effect.void
            pending.delete(message.requestId)
            let decoded: Exit.Exit<unknown, unknown>
            try {
              decoded = codec.decodeExit(message.exit)
            } catch (error) {
              decoded = Exit.die(error)
            }
            return exit(message.requestId, decoded)
          }
          case "Defect":
            pending.clear()
            return write({ _tag: "Defect", clientId: 0, defect: decodeDefect(message.defect) })
          case "ClientProtocolError": {
            const failed = Exit.fail(message.error)
            const ids = Array.from(pending.keys())
            pending.clear()
            return Effect.forEach(ids, (requestId) => exit(requestId, failed), { discard: true })
          }
          default:
            return Effect.void
        }
      })
      .pipe(Effect.catchAllCause(Effect.logError), Effect.interruptible, Effect.forkScoped)
    return client
  }
)
