/**
 * Reads the raw frames of one connection: a frame over the size limit, or nested
 * deeper than the limit, is answered unparsed (`InvalidInput` for the request id it
 * carries, else a protocol defect); one that is not JSON gets a defect; every other
 * is screened (`Screening`) and handed on. Whatever goes wrong handling a frame is
 * answered and logged, never passed on to the transport.
 */
import type { RpcMessage } from "@effect/rpc"
import { Cause, Effect } from "effect"
import {
  defectReply,
  MAX_DEPTH,
  refuseFrame,
  scanFrame,
  type ScreenContext,
  type Screened,
  screenMessage
} from "./Screening.js"

export interface FrameReaderOptions {
  readonly maxFrameBytes: number
  readonly screenContext: ScreenContext
  /** Writes an answer given here, not by a handler. */
  readonly reply: (response: RpcMessage.FromServerEncoded) => Effect.Effect<void>
  /** Serves a screened frame. */
  readonly handle: (screened: Screened) => Effect.Effect<void>
}

export interface FrameReader {
  /** One complete frame (a WebSocket message, a stdio line). */
  readonly onFrame: (frame: string | Uint8Array) => Effect.Effect<void>
  /** A frame over the limit that the transport did not keep whole: its size and first bytes. */
  readonly onOversizedFrame: (bytes: number, prefix: string) => Effect.Effect<void>
}

/** How much of an oversized frame is scanned for its request id. */
const OVERSIZED_SCAN_CHARS = 4096

const frameBytes = (frame: string | Uint8Array): number =>
  typeof frame === "string" ? Buffer.byteLength(frame, "utf8") : frame.byteLength

export const makeFrameReader = (options: FrameReaderOptions): FrameReader => {
  const { handle, maxFrameBytes, reply, screenContext } = options

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

  return {
    onFrame: (frame) =>
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
      ),
    onOversizedFrame: (bytes, prefix) => guard(Effect.suspend(() => oversized(bytes, prefix)))
  }
}
