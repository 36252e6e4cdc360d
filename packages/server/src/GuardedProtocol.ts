/**
 * The server side of the RPC wire, shared by every transport (WebSocket, stdio).
 *
 * It screens each frame before `@effect/rpc` sees it, so that a bad client gets a
 * typed answer and everyone else keeps being served:
 * - a frame over the size limit is answered with `InvalidInput` (for the request id
 *   it carries, when one can be read from its first bytes) and dropped unparsed;
 * - a frame that is not JSON, or not an RPC message, is answered with a protocol
 *   defect;
 * - a request on a connection without the right token gets `Unauthorized`;
 * - an unknown method or a payload that does not decode gets `InvalidInput`.
 */
import { RpcMessage, RpcSerialization, RpcServer } from "@effect/rpc"
import { InvalidInput, SkeinError, SkeinRpcs, Unauthorized } from "@skein/domain"
import type { StoredEvent, ThreadId } from "@skein/domain"
import { storedEventJson } from "@skein/runtime"
import type { Orchestrator } from "@skein/runtime"
import { Effect, Exit, Fiber, FiberId, Mailbox, ParseResult, Schema, Scope } from "effect"

export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024

export interface GuardedProtocolOptions {
  /** Largest accepted frame in bytes (default 4 MiB). */
  readonly maxFrameBytes?: number | undefined
  /**
   * Serves `thread.events`, here rather than through the RPC server: each follower is a
   * callback that writes frames as events commit, with no fiber or stream per follower
   * (see `Orchestrator.follow`).
   */
  readonly follow: Orchestrator["Type"]["follow"]
}

/** One client connection as the transport sees it. */
export interface Connection {
  readonly id: number
  /** Feed one complete frame (a WebSocket message, a stdio line). */
  readonly onFrame: (frame: string | Uint8Array) => Effect.Effect<void>
  /** The transport closed: interrupts the client's in-flight requests. */
  readonly close: Effect.Effect<void>
}

export interface ConnectOptions {
  /** Writes one encoded frame to the client. */
  readonly write: (frame: string) => Effect.Effect<void>
  /**
   * Writes one fan-out frame synchronously, for transports that can: event fan-out
   * then runs no fiber per frame. The frame is shared by every connection that
   * follows the same commit (its bytes must not be modified). Without it, fan-out
   * frames go through `write`.
   */
  readonly writeNow?: ((frame: FanOutFrame) => void) | undefined
  /** Whether the connection presented the right token (or none was required). */
  readonly authorized: boolean
  /** Headers of the transport (e.g. the HTTP upgrade request), passed to handlers. */
  readonly headers?: ReadonlyArray<[string, string]> | undefined
}

export interface GuardedProtocol {
  readonly protocol: RpcServer.Protocol["Type"]
  readonly connect: (options: ConnectOptions) => Effect.Effect<Connection>
}

type FromClient = RpcMessage.FromClientEncoded
type FromServer = RpcMessage.FromServerEncoded

const clientTags = new Set(["Request", "Ack", "Interrupt", "Ping", "Eof"])
const encodeError = Schema.encodeSync(SkeinError)
const requestIdPattern = /"id"\s*:\s*"([0-9]{1,30})"/

const failure = (requestId: string, error: SkeinError): FromServer => ({
  _tag: "Exit",
  requestId,
  exit: { _tag: "Failure", cause: { _tag: "Fail", error: encodeError(error) } }
})

const defect = (message: string): FromServer => RpcMessage.ResponseDefectEncoded(message)

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

const framePrefix = (frame: string | Uint8Array): string =>
  typeof frame === "string" ? frame.slice(0, 512) : new TextDecoder().decode(frame.subarray(0, 512))

const payloadDecoders = new Map(
  Array.from(
    SkeinRpcs.requests.values(),
    (rpc) =>
      [
        rpc._tag as string,
        Schema.decodeUnknownEither(rpc.payloadSchema as Schema.Schema<unknown, unknown, never>)
      ] as const
  )
)
const methodNames = Array.from(payloadDecoders.keys())

/** What to do with one decoded message: forward it to the server, or answer it here. */
export const screenMessage = (
  message: unknown,
  authorized: boolean
):
  | { readonly _tag: "Forward"; readonly message: FromClient }
  | { readonly _tag: "Reply"; readonly reply: FromServer } => {
  if (
    typeof message !== "object" ||
    message === null ||
    !clientTags.has((message as { _tag?: unknown })._tag as string)
  ) {
    return { _tag: "Reply", reply: defect("Malformed message: expected an RPC message object with a known _tag.") }
  }
  const msg = message as FromClient
  if (msg._tag !== "Request") return { _tag: "Forward", message: msg }
  if (typeof msg.id !== "string" || !/^[0-9]{1,30}$/.test(msg.id)) {
    return { _tag: "Reply", reply: defect("Malformed request: id must be a decimal string.") }
  }
  if (!authorized) return { _tag: "Reply", reply: failure(msg.id, new Unauthorized()) }
  const decode = typeof msg.tag === "string" ? payloadDecoders.get(msg.tag) : undefined
  if (decode === undefined) {
    return {
      _tag: "Reply",
      reply: failure(
        msg.id,
        new InvalidInput({ detail: `unknown method ${JSON.stringify(msg.tag)}; methods are ${methodNames.join(", ")}` })
      )
    }
  }
  const decoded = decode(msg.payload)
  if (decoded._tag === "Left") {
    return {
      _tag: "Reply",
      reply: failure(
        msg.id,
        new InvalidInput({ detail: `${msg.tag}: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}` })
      )
    }
  }
  const headers = Array.isArray(msg.headers) ? msg.headers : []
  return { _tag: "Forward", message: { ...msg, headers } }
}

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
    const disconnects = yield* Mailbox.make<number>()
    const clients = new Map<number, (response: FromServer) => Effect.Effect<void>>()
    let nextId = 0
    let writeRequest!: (clientId: number, message: FromClient) => Effect.Effect<void>

    const protocol = yield* RpcServer.Protocol.make((write) => {
      writeRequest = write
      return Effect.succeed({
        disconnects,
        send: (clientId, response) => clients.get(clientId)?.(response) ?? Effect.void,
        end: () => Effect.void,
        clientIds: Effect.sync(() => new Set(clients.keys())),
        initialMessage: Effect.succeedNone,
        // No per-chunk acknowledgements: a follower would wait a round trip per chunk,
        // which dominated fan-out latency. Frames of one connection stay in order.
        supportsAck: false,
        supportsTransferables: false,
        supportsSpanPropagation: true
      })
    })

    const connect = (connection: ConnectOptions): Effect.Effect<Connection> =>
      Effect.sync(() => {
        const id = nextId++
        const transportHeaders = connection.headers ?? []
        const writeChunk =
          connection.writeNow ?? ((frame: FanOutFrame) => void Effect.runFork(connection.write(frame.text)))
        const send = (response: FromServer): Effect.Effect<void> =>
          Effect.suspend(() => connection.write(encodeFrame(response)))
        clients.set(id, send)

        // thread.events followers of this connection, by request id.
        const follows = new Map<string, { readonly scope: Scope.CloseableScope; fiber?: Fiber.RuntimeFiber<void> }>()
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
              Effect.catchAll((error) => unfollow(request.id).pipe(Effect.zipRight(send(failure(request.id, error))))),
              Effect.forkDaemon
            )
          })

        const onFrame = (frame: string | Uint8Array): Effect.Effect<void> =>
          Effect.suspend(() => {
            const size = frameBytes(frame)
            if (size > maxFrameBytes) {
              const detail = `a frame of ${size} bytes is over the ${maxFrameBytes}-byte limit; send a smaller payload`
              const requestId = requestIdPattern.exec(framePrefix(frame))?.[1]
              return send(
                requestId === undefined
                  ? defect(`Invalid input: ${detail}`)
                  : failure(requestId, new InvalidInput({ detail }))
              )
            }
            let decoded: ReadonlyArray<unknown>
            try {
              decoded = parser.decode(typeof frame === "string" ? frame : new TextDecoder().decode(frame))
            } catch (cause) {
              return send(defect(`Malformed frame: not valid JSON (${String(cause)}).`))
            }
            return Effect.forEach(
              decoded,
              (message) => {
                const screened = screenMessage(message, connection.authorized)
                if (screened._tag === "Reply") return send(screened.reply)
                const forwarded = screened.message
                if (forwarded._tag === "Request" && forwarded.tag === "thread.events") return startFollow(forwarded)
                if (forwarded._tag === "Ack" && follows.has(forwarded.requestId)) return Effect.void
                if (forwarded._tag === "Interrupt" && follows.has(forwarded.requestId)) {
                  return unfollow(forwarded.requestId).pipe(Effect.zipRight(send(interrupted(forwarded.requestId))))
                }
                return writeRequest(
                  id,
                  forwarded._tag === "Request"
                    ? { ...forwarded, headers: transportHeaders.concat(forwarded.headers) }
                    : forwarded
                )
              },
              { discard: true }
            )
          })

        const close = Effect.suspend(() => {
          const ending = Effect.forEach(Array.from(follows.keys()), unfollow, { discard: true })
          if (!clients.delete(id)) return ending
          return ending.pipe(Effect.zipRight(disconnects.offer(id)), Effect.asVoid)
        })
        return { id, onFrame, close }
      })

    return { protocol, connect }
  })

/** Runs the Skein RPC server over a guarded protocol until the scope closes. */
export const runSkeinRpcServer = (protocol: RpcServer.Protocol["Type"]) =>
  RpcServer.make(SkeinRpcs, { disableTracing: true, concurrency: "unbounded" }).pipe(
    Effect.provideService(RpcServer.Protocol, protocol),
    Effect.interruptible,
    Effect.forkScoped
  )
