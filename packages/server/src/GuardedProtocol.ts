/**
 * The server side of the RPC wire, shared by every transport (WebSocket, stdio).
 *
 * Every frame is screened before anything serves it (`FrameReader`, `Screening`), so that a
 * bad client gets a typed answer and everyone else keeps being served:
 * - a frame over the size limit, or nested deeper than the limit, is answered
 *   unparsed: `InvalidInput` for the request id it carries, else a protocol defect;
 * - a frame that is not JSON, or not an RPC message, is answered with a defect;
 * - a request whose id is still in flight on the connection, or whose method,
 *   headers or payload are wrong, gets `InvalidInput` for that id;
 * - nothing a client sends reaches a handler except messages rebuilt from fields of
 *   the right type, and no failure while handling a frame escapes it.
 *
 * A screened request is served here, as a fiber of the connection's `InFlight` (keyed
 * by request id; a client's `Interrupt` interrupts it, closing the connection interrupts
 * them all): `thread.events` by a callback per follower, every other method by
 * `RpcDispatch` (its handler from `SkeinRpcHandlers`). The frames are `@effect/rpc`'s,
 * so its client speaks to this.
 *
 * Who may connect at all is decided before a connection exists (the WebSocket
 * handshake, see `Handshake`; the parent process for stdio).
 */
import { RpcMessage, RpcSerialization } from "@effect/rpc"
import type { StoredEvent, ThreadId } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Cause, Effect, Exit, FiberId, Option, Schema, Scope } from "effect"
import { FanOutFrame, makeConnectionOutput } from "./ConnectionOutput.js"
import { makeEventFrames } from "./EventFrames.js"
import { makeInFlight } from "./InFlight.js"
import type { DispatchRequest, RpcDispatch } from "./RpcDispatch.js"
import { makeFrameReader } from "./FrameReader.js"
import { failureReply, type Screened } from "./Screening.js"

export { FanOutFrame }

export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024

export interface GuardedProtocolOptions {
  /** Largest accepted frame in bytes (default 4 MiB). */
  readonly maxFrameBytes?: number | undefined
  /**
   * Serves `thread.events`, here rather than through its handler's stream: each
   * follower is a callback that writes frames as events commit, with no stream per
   * follower (see `Orchestrator.follow`).
   */
  readonly follow: Orchestrator["Type"]["follow"]
  /** Serves every other method. */
  readonly dispatch: RpcDispatch
}

/** One client connection as the transport sees it. */
export interface Connection {
  readonly id: number
  /** Feed one complete frame (a WebSocket message, a stdio line). */
  readonly onFrame: (frame: string | Uint8Array) => Effect.Effect<void>
  /**
   * A frame over the limit that the transport did not keep whole (a stdio line): its
   * size and first bytes, to answer it for its request id.
   */
  readonly onOversizedFrame: (bytes: number, prefix: string) => Effect.Effect<void>
  /** The transport closed: interrupts the client's in-flight requests. */
  readonly close: Effect.Effect<void>
}

export interface ConnectOptions {
  /** Writes one encoded frame to the client. */
  readonly write: (frame: string) => Effect.Effect<void>
  /**
   * Writes one frame synchronously, for transports that can (then `write` must not
   * wait either): answers and event fan-out then leave at once, from the callback
   * that produced them. A fan-out frame is shared by every connection that follows
   * the same commit (its bytes must not be modified). Without it, every frame goes
   * through `write`, one at a time, in order.
   */
  readonly writeNow?: ((frame: FanOutFrame) => void) | undefined
  /**
   * Headers of the transport (e.g. the HTTP upgrade request), passed to handlers.
   * They win over headers of the same name that a request carries.
   */
  readonly headers?: ReadonlyArray<[string, string]> | undefined
}

export interface GuardedProtocol {
  readonly connect: (options: ConnectOptions) => Effect.Effect<Connection>
}

type FromServer = RpcMessage.FromServerEncoded
type Request = Extract<RpcMessage.FromClientEncoded, { readonly _tag: "Request" }>

const encodeExit = Schema.encodeSync(
  Schema.Exit({ success: Schema.Unknown, failure: Schema.Unknown, defect: Schema.Defect })
)
const interrupted = (requestId: string): FromServer => ({
  _tag: "Exit",
  requestId,
  exit: encodeExit(Exit.interrupt(FiberId.none)) as never
})

export const makeGuardedProtocol = (options: GuardedProtocolOptions): Effect.Effect<GuardedProtocol> =>
  Effect.sync(() => {
    const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    const { dispatch, follow } = options
    const parser = RpcSerialization.json.unsafeMake()
    const eventFrames = makeEventFrames()
    const encodeFrame = (response: FromServer): string => parser.encode(response) as string
    let nextId = 0

    const connect = (connection: ConnectOptions): Effect.Effect<Connection> =>
      Effect.gen(function* () {
        const id = nextId++
        const transportHeaders = connection.headers ?? []
        // Closed by `close`: interrupts what is under way, then writes what is queued.
        const scope = yield* Scope.make()
        const output = yield* makeConnectionOutput(connection).pipe(Scope.extend(scope))
        const inFlight = yield* makeInFlight((frame) => output.send(new FanOutFrame(frame))).pipe(Scope.extend(scope))
        const screenContext = { inFlight: inFlight.has }
        /** An answer given here, not by a handler. */
        const reply = (response: FromServer): Effect.Effect<void> =>
          Effect.suspend(() => output.reply(encodeFrame(response)))

        /** Follows a thread: its fiber holds the subscription until it is interrupted; a failure is its answer. */
        const startFollow = (request: Request) => {
          const payload = request.payload as { readonly threadId: ThreadId; readonly fromSequence?: number }
          const onEvents = (events: ReadonlyArray<StoredEvent>) => {
            // Synchronous, so frames leave in commit order.
            if (events.length > 0 && inFlight.wanted(request.id)) output.send(eventFrames(request.id, events))
          }
          const following = Effect.zipRight(follow(payload.threadId, payload.fromSequence ?? 0, onEvents), Effect.never)
          return inFlight.run(request.id, Effect.interruptible(Effect.scoped(following)), (exit) => {
            const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
            return Option.isSome(failure) ? encodeFrame(failureReply(request.id, failure.value)) : undefined
          })
        }

        /** Starts a request of any other method; its answer is written as soon as it ends. */
        const startRequest = (message: Request) => {
          // The transport's headers come last, so a client cannot pose as its transport.
          const request: DispatchRequest = {
            id: message.id,
            tag: message.tag,
            payload: message.payload,
            headers: message.headers.concat(transportHeaders)
          }
          return inFlight.run(request.id, dispatch.handle(id, request), (exit) => dispatch.answer(request, exit))
        }

        const handle = (screened: Screened): Effect.Effect<void> => {
          switch (screened._tag) {
            case "Ignore":
              return Effect.void
            case "Reply":
              return reply(screened.reply)
          }
          const message = screened.message
          switch (message._tag) {
            case "Request":
              return message.tag === "thread.events" ? startFollow(message) : startRequest(message)
            case "Interrupt":
              // One that already ended (and was answered), or never was, or is being
              // interrupted already: nothing to say.
              return inFlight.interrupt(message.requestId, reply(interrupted(message.requestId)))
            case "Ping":
              return reply(RpcMessage.constPong)
            default:
              return Effect.void
          }
        }

        const reader = makeFrameReader({ maxFrameBytes, screenContext, reply, handle })
        return { id, ...reader, close: Scope.close(scope, Exit.void) }
      })

    return { connect }
  })
