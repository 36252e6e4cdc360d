/**
 * The server side of the RPC wire, shared by every transport (WebSocket, stdio).
 *
 * Every frame is screened before anything serves it (see `Screening`), so that a
 * bad client gets a typed answer and everyone else keeps being served:
 * - a frame over the size limit, or nested deeper than the limit, is answered
 *   unparsed: `InvalidInput` for the request id it carries, else a protocol defect;
 * - a frame that is not JSON, or not an RPC message, is answered with a defect;
 * - a request whose id is still in flight on the connection, or whose method,
 *   headers or payload are wrong, gets `InvalidInput` for that id;
 * - nothing a client sends reaches a handler except messages rebuilt from fields of
 *   the right type, and no failure while handling a frame escapes it.
 *
 * A screened request is served here: `thread.events` by a callback per follower, every
 * other method by `RpcDispatch` (a fiber per request, its handler from
 * `SkeinRpcHandlers`). The frames are `@effect/rpc`'s, so its client speaks to this.
 *
 * Who may connect at all is decided before a connection exists (the WebSocket
 * handshake, see `Handshake`; the parent process for stdio).
 */
import { RpcMessage, RpcSerialization } from "@effect/rpc"
import type { StoredEvent, ThreadId } from "@skein/domain"
import { storedEventJson } from "@skein/runtime"
import type { Orchestrator } from "@skein/runtime"
import { Cause, Effect, Exit, Fiber, FiberId, Schema, Scope } from "effect"
import type { RpcDispatch } from "./RpcDispatch.js"
import {
  defectReply,
  failureReply,
  MAX_DEPTH,
  refuseFrame,
  scanFrame,
  type Screened,
  screenMessage
} from "./Screening.js"

export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024

export interface GuardedProtocolOptions {
  /** Largest accepted frame in bytes (default 4 MiB). */
  readonly maxFrameBytes?: number | undefined
  /**
   * Serves `thread.events`, here rather than through its handler's stream: each
   * follower is a callback that writes frames as events commit, with no fiber or
   * stream per follower (see `Orchestrator.follow`).
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
   * Writes one frame synchronously, for transports that can: event fan-out and the
   * answers of requests then run no fiber per frame. A fan-out frame is shared by
   * every connection that follows the same commit (its bytes must not be modified).
   * Without it, those frames go through `write`.
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

type FromClient = RpcMessage.FromClientEncoded
type FromServer = RpcMessage.FromServerEncoded

const encodeExit = Schema.encodeSync(
  Schema.Exit({ success: Schema.Unknown, failure: Schema.Unknown, defect: Schema.Defect })
)
const interrupted = (requestId: string): FromServer => ({
  _tag: "Exit",
  requestId,
  exit: encodeExit(Exit.interrupt(FiberId.none)) as never
})

const frameBytes = (frame: string | Uint8Array): number =>
  typeof frame === "string" ? Buffer.byteLength(frame, "utf8") : frame.byteLength

/** A request under way on a connection: its fiber, once started, and whether its client interrupted it. */
interface Running {
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  interrupting: boolean
}

/** How much of an oversized frame is scanned for its request id. */
const OVERSIZED_SCAN_CHARS = 4096

/** A fan-out frame: its text, and its UTF-8 bytes encoded on first use. */
export class FanOutFrame {
  #bytes: Uint8Array | undefined
  constructor(readonly text: string) {}
  get bytes(): Uint8Array {
    return (this.#bytes ??= Buffer.from(this.text, "utf8"))
  }
}

export const makeGuardedProtocol = (options: GuardedProtocolOptions): Effect.Effect<GuardedProtocol> =>
  Effect.gen(function* () {
    const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    const follow = options.follow
    const parser = RpcSerialization.json.unsafeMake()
    // A live commit reaches every follower of its thread as the same batch: its frame
    // is built (and encoded to bytes) once per request id, and clients that follow
    // with the same id share it.
    const chunkFrames = new WeakMap<
      ReadonlyArray<StoredEvent>,
      { readonly values: string; readonly frames: Map<string, FanOutFrame> }
    >()
    const chunkFrame = (requestId: string, events: ReadonlyArray<StoredEvent>): FanOutFrame => {
      let batch = chunkFrames.get(events)
      if (batch === undefined) {
        const values = events.map(storedEventJson).join(",")
        batch = { values, frames: new Map() }
        chunkFrames.set(events, batch)
      }
      let frame = batch.frames.get(requestId)
      if (frame === undefined) {
        frame = new FanOutFrame(`{"_tag":"Chunk","requestId":${JSON.stringify(requestId)},"values":[${batch.values}]}`)
        batch.frames.set(requestId, frame)
      }
      return frame
    }
    const encodeFrame = (response: FromServer): string => parser.encode(response) as string
    const dispatch = options.dispatch
    let nextId = 0

    const connect = (connection: ConnectOptions): Effect.Effect<Connection> =>
      Effect.sync(() => {
        const id = nextId++
        const transportHeaders = connection.headers ?? []
        const writeChunk =
          connection.writeNow ?? ((frame: FanOutFrame) => void Effect.runFork(connection.write(frame.text)))
        /** An answer given here, not by a handler. */
        const reply = (response: FromServer): Effect.Effect<void> =>
          Effect.suspend(() => connection.write(encodeFrame(response)))
        // This connection's requests under way, and its thread.events followers, by request
        // id: until answered, a second request with one of their ids is refused rather
        // than queued behind the first.
        const running = new Map<string, Running>()
        const follows = new Map<string, { readonly scope: Scope.CloseableScope; fiber?: Fiber.RuntimeFiber<void> }>()
        const screenContext = { inFlight: (requestId: string) => running.has(requestId) || follows.has(requestId) }
        const unfollow = (requestId: string) =>
          Effect.suspend(() => {
            const entry = follows.get(requestId)
            if (entry === undefined) return Effect.void
            follows.delete(requestId)
            return Scope.close(entry.scope, Exit.void).pipe(
              Effect.zipRight(entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void),
              Effect.asVoid
            )
          })
        const startFollow = (request: Extract<FromClient, { readonly _tag: "Request" }>) =>
          Effect.gen(function* () {
            const payload = request.payload as { readonly threadId: ThreadId; readonly fromSequence?: number }
            const scope = yield* Scope.make()
            const entry: { readonly scope: Scope.CloseableScope; fiber?: Fiber.RuntimeFiber<void> } = { scope }
            follows.set(request.id, entry)
            const onEvents = (events: ReadonlyArray<StoredEvent>) => {
              if (follows.get(request.id) !== entry || events.length === 0) return
              // Synchronous, so frames leave in commit order.
              writeChunk(chunkFrame(request.id, events))
            }
            // The replay reads the log: off the connection's frame loop.
            entry.fiber = yield* follow(payload.threadId, payload.fromSequence ?? 0, onEvents).pipe(
              Scope.extend(scope),
              // Ends the follow from its own fiber (`unfollow` would interrupt that fiber
              // before the answer is written); answered unless the client interrupted it meanwhile.
              Effect.catchAll((error) =>
                Effect.suspend(() => {
                  if (follows.get(request.id) !== entry) return Effect.void
                  follows.delete(request.id)
                  return Scope.close(scope, Exit.void).pipe(Effect.zipRight(reply(failureReply(request.id, error))))
                })
              ),
              Effect.forkDaemon
            )
          })

        const handle = (screened: Screened): Effect.Effect<void> => {
          switch (screened._tag) {
            case "Ignore":
              return Effect.void
            case "Reply":
              return reply(screened.reply)
          }
          const message = screened.message
          switch (message._tag) {
            case "Request": {
              if (message.tag === "thread.events") return startFollow(message)
              return Effect.sync(() => start(message))
            }
            case "Interrupt": {
              const requestId = message.requestId
              if (follows.has(requestId))
                return unfollow(requestId).pipe(Effect.zipRight(reply(interrupted(requestId))))
              const entry = running.get(requestId)
              // A request that already ended (and was answered) or never was, or one being
              // interrupted already: nothing to say.
              if (entry?.fiber === undefined || entry.interrupting) return Effect.void
              // Its id stays taken until the interruption is answered; an answer of its
              // own that comes meanwhile is dropped.
              entry.interrupting = true
              return Fiber.interrupt(entry.fiber).pipe(
                Effect.zipRight(
                  Effect.suspend(() => {
                    running.delete(requestId)
                    return reply(interrupted(requestId))
                  })
                )
              )
            }
            case "Ping":
              return reply(RpcMessage.constPong)
            default:
              return Effect.void
          }
        }

        /** Starts a screened request; its answer is written as soon as it ends. */
        const start = (request: Extract<FromClient, { readonly _tag: "Request" }>) => {
          const requestId = request.id
          // Registered before the handler starts: one that ends at once answers from inside `start`.
          const entry: Running = { fiber: undefined, interrupting: false }
          running.set(requestId, entry)
          entry.fiber = dispatch.start(
            id,
            // The transport's headers come last, so a client cannot pose as its transport.
            {
              id: requestId,
              tag: request.tag,
              payload: request.payload,
              headers: request.headers.concat(transportHeaders)
            },
            (frame) => {
              if (running.get(requestId) !== entry || entry.interrupting) return
              running.delete(requestId)
              writeChunk(new FanOutFrame(frame))
            }
          )
        }

        const onText = (text: string): Effect.Effect<void> => {
          const scan = scanFrame(text)
          if (scan.tooDeep) return reply(refuseFrame(scan, `the frame nests deeper than ${MAX_DEPTH} levels`))
          let message: unknown
          try {
            message = JSON.parse(text)
          } catch (cause) {
            return reply(defectReply(`Malformed frame: not valid JSON (${String(cause)}).`))
          }
          return handle(screenMessage(message, screenContext))
        }

        const oversized = (bytes: number, prefix: string): Effect.Effect<void> =>
          reply(
            refuseFrame(
              scanFrame(prefix.slice(0, OVERSIZED_SCAN_CHARS)),
              `a frame of ${bytes} bytes is over the ${maxFrameBytes}-byte limit; send a smaller payload`
            )
          )

        /** Whatever goes wrong handling a frame is answered and logged, never passed on to the transport. */
        const guard = (effect: Effect.Effect<void>): Effect.Effect<void> =>
          effect.pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause)
                ? Effect.failCause(cause)
                : Effect.logError("skein: a frame could not be handled", cause).pipe(
                    Effect.zipRight(reply(defectReply("Internal error while handling a frame; it was dropped."))),
                    Effect.catchAllCause(() => Effect.void)
                  )
            )
          )

        const onFrame = (frame: string | Uint8Array): Effect.Effect<void> =>
          guard(
            Effect.suspend(() => {
              const size = frameBytes(frame)
              if (size > maxFrameBytes) {
                const prefix =
                  typeof frame === "string"
                    ? frame.slice(0, OVERSIZED_SCAN_CHARS)
                    : new TextDecoder().decode(frame.subarray(0, OVERSIZED_SCAN_CHARS))
                return oversized(size, prefix)
              }
              return onText(typeof frame === "string" ? frame : new TextDecoder().decode(frame))
            })
          )

        const close = Effect.suspend(() => {
          const fibers = Array.from(running.values(), (entry) => entry.fiber).filter((fiber) => fiber !== undefined)
          running.clear()
          return Effect.forEach(Array.from(follows.keys()), unfollow, { discard: true }).pipe(
            Effect.zipRight(Fiber.interruptAll(fibers))
          )
        })
        return {
          id,
          onFrame,
          onOversizedFrame: (bytes: number, prefix: string) => guard(Effect.suspend(() => oversized(bytes, prefix))),
          close
        }
      })

    return { connect }
  })
