/**
 * What a client may send, checked before anything serves it (pure functions).
 *
 * What serves a message trusts it: a request id that is not a number, a header that
 * is not a pair of strings, or an `Interrupt` without a request id would throw where
 * it is served, and a deeply nested payload overflows the stack of the error
 * formatter. So every message is rebuilt here from fields of the right type, its
 * payload decoded by its method's schema (the only decode it gets), and anything
 * else gets a typed answer:
 * - a request with a usable id gets an `Exit` failing with `InvalidInput` for that
 *   id (a duplicate of an id still in flight, an unknown method, bad headers, a
 *   payload nested too deep or that does not decode);
 * - any other malformed message gets a protocol `Defect` saying what was wrong;
 * - error texts are bounded, and formatting them can never throw.
 */
import { RpcMessage } from "@effect/rpc"
import { boundedText, describeValue, formatParseError, InvalidInput, SkeinError, SkeinRpcs } from "@skein/domain"
import { Schema } from "effect"

type FromClient = RpcMessage.FromClientEncoded
type FromServer = RpcMessage.FromServerEncoded

/** Deepest nesting accepted, counting the message object itself as level 1. */
export const MAX_DEPTH = 64
/** Most values one payload may hold (a 4 MiB frame of `[0,0,…]` holds about 2 million). */
export const MAX_PAYLOAD_VALUES = 4_000_000
export const MAX_HEADERS = 64
const MAX_HEADER_NAME_CHARS = 256
const MAX_HEADER_VALUE_CHARS = 8_192

/** Request ids are what the RPC client generates: canonical decimals (no sign, no leading zero). */
const requestIdPattern = /^(?:0|[1-9][0-9]{0,29})$/
const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const messageTags = ["Request", "Ack", "Interrupt", "Ping", "Eof"]

export const isRequestId = (value: unknown): value is string =>
  typeof value === "string" && requestIdPattern.test(value)

const encodeError = Schema.encodeSync(SkeinError)

export const failureReply = (requestId: string, error: SkeinError): FromServer => ({
  _tag: "Exit",
  requestId,
  exit: { _tag: "Failure", cause: { _tag: "Fail", error: encodeError(error) } }
})

export const invalidInputReply = (requestId: string, detail: string): FromServer =>
  failureReply(requestId, new InvalidInput({ detail: boundedText(detail) }))

export const defectReply = (message: string): FromServer => RpcMessage.ResponseDefectEncoded(boundedText(message))

// ---- frames (text) ------------------------------------------------------------------

/** What a frame's text shows without parsing it: its nesting and its top-level `_tag` and `id`. */
export interface FrameScan {
  /** Nested deeper than the limit somewhere. */
  readonly tooDeep: boolean
  /** The top-level `_tag` and `id` when they are short strings without escapes. */
  readonly tag: string | undefined
  readonly id: string | undefined
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const isOpen = (c: number) => c === 0x7b || c === 0x5b
const isClose = (c: number) => c === 0x7d || c === 0x5d
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * One linear pass over a frame's text, before `JSON.parse` (which would build every
 * level of a 4 MiB `[[[[…` first): how deep it nests, and the top-level `_tag` and
 * `id`, so that a frame refused unparsed can still be answered for its request id.
 * Exact for valid JSON; for invalid JSON `JSON.parse` fails anyway.
 */
export const scanFrame = (text: string, maxDepth = MAX_DEPTH): FrameScan => {
  let depth = 0
  let tooDeep = false
  let tag: string | undefined
  let id: string | undefined
  // At depth 1: the last string read (a key if a colon follows), and the key whose value comes next.
  let lastString: string | undefined
  let valueOf: string | undefined
  const n = text.length
  let i = 0
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const start = i + 1
      let escaped = false
      i = start
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d === BACKSLASH) {
          escaped = true
          i += 2
        } else if (d === QUOTE) break
        else i++
      }
      if (depth === 1) {
        const value = escaped || i - start > 40 ? undefined : text.slice(start, i)
        if (valueOf !== undefined) {
          if (valueOf === "_tag") tag = value
          else id = value
          valueOf = undefined
          lastString = undefined
        } else lastString = value ?? ""
      }
      i++
      continue
    }
    if (isOpen(c)) {
      depth++
      if (depth > maxDepth) tooDeep = true
      if (depth === 2 && valueOf !== undefined) {
        // A nested value for `_tag` or `id`: not a string.
        if (valueOf === "_tag") tag = undefined
        else id = undefined
        valueOf = undefined
      }
    } else if (isClose(c)) {
      depth--
    } else if (depth === 1 && !isSpace(c)) {
      if (c === COLON && lastString !== undefined) {
        valueOf = lastString === "_tag" || lastString === "id" ? lastString : undefined
      } else if (valueOf !== undefined && c !== COMMA) {
        // A number, true, false or null for `_tag` or `id`.
        if (valueOf === "_tag") tag = undefined
        else id = undefined
        valueOf = undefined
      }
      lastString = undefined
    }
    i++
  }
  return { tooDeep, tag, id }
}

/**
 * The answer to a frame refused before parsing (too large, too deep): `InvalidInput`
 * for its request id when the scan found one, else a protocol defect.
 */
export const refuseFrame = (scan: FrameScan, detail: string): FromServer =>
  scan.tag === "Request" && isRequestId(scan.id)
    ? invalidInputReply(scan.id, detail)
    : defectReply(`Invalid input: ${detail}`)

// ---- values -----------------------------------------------------------------------

/**
 * Whether `value` nests deeper than `maxDepth` (counting `value` as level `level`) or
 * holds more than `maxValues` values. Iterative, so no depth can overflow the stack;
 * stops at the first excess.
 */
export const exceedsNesting = (
  value: unknown,
  level: number,
  maxDepth = MAX_DEPTH,
  maxValues = MAX_PAYLOAD_VALUES
): "depth" | "size" | undefined => {
  const stack: Array<unknown> = [value]
  const levels: Array<number> = [level]
  let seen = 0
  while (stack.length > 0) {
    const current = stack.pop()
    const depth = levels.pop()!
    if (++seen > maxValues) return "size"
    if (typeof current !== "object" || current === null) continue
    if (depth > maxDepth) return "depth"
    const children: ArrayLike<unknown> = Array.isArray(current) ? current : Object.values(current)
    for (let k = 0; k < children.length; k++) {
      const child = children[k]
      if (typeof child === "object" && child !== null) {
        stack.push(child)
        levels.push(depth + 1)
      } else if (++seen > maxValues) return "size"
    }
  }
  return undefined
}

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

/** The headers of a request as string pairs, or what is wrong with them. */
const screenHeaders = (
  headers: unknown
): { readonly ok: ReadonlyArray<[string, string]> } | { readonly problem: string } => {
  if (headers === undefined) return { ok: [] }
  if (!Array.isArray(headers))
    return { problem: `headers must be an array of [name, value] pairs, not ${describeValue(headers)}` }
  if (headers.length > MAX_HEADERS) return { problem: `${headers.length} headers; at most ${MAX_HEADERS}` }
  const pairs: Array<[string, string]> = []
  for (let k = 0; k < headers.length; k++) {
    const entry: unknown = headers[k]
    if (!Array.isArray(entry) || entry.length !== 2) {
      return { problem: `headers[${k}] must be a [name, value] pair of strings, not ${describeValue(entry)}` }
    }
    const [name, value] = entry as [unknown, unknown]
    if (typeof name !== "string" || !headerNamePattern.test(name) || name.length > MAX_HEADER_NAME_CHARS) {
      return { problem: `headers[${k}][0] must be a header name (letters, digits, -), not ${describeValue(name)}` }
    }
    if (typeof value !== "string" || value.length > MAX_HEADER_VALUE_CHARS) {
      return {
        problem: `headers[${k}][1] must be a string of at most ${MAX_HEADER_VALUE_CHARS} characters, not ${describeValue(value)}`
      }
    }
    pairs.push([name, value])
  }
  return { ok: pairs }
}

/** What to do with one parsed message. */
export type Screened =
  /**
   * Serve this rebuilt message: a request carries its payload decoded by the method's
   * schema (decoded once, here), with its other fields checked.
   */
  | { readonly _tag: "Forward"; readonly message: FromClient }
  /** Answer with this, here. */
  | { readonly _tag: "Reply"; readonly reply: FromServer }
  /** A well-formed message that needs nothing (an `Ack`: the server never waits for one; an `Eof`). */
  | { readonly _tag: "Ignore" }

export interface ScreenContext {
  /** Whether a request with this id is still in flight on this connection. */
  readonly inFlight: (requestId: string) => boolean
}

const IGNORE: Screened = { _tag: "Ignore" }
const PING: Screened = { _tag: "Forward", message: { _tag: "Ping" } }
const reply = (answer: FromServer): Screened => ({ _tag: "Reply", reply: answer })

const field = (object: object, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(object, key) ? (object as Record<string, unknown>)[key] : undefined

const screenRequest = (message: object, context: ScreenContext): Screened => {
  const id = field(message, "id")
  if (!isRequestId(id)) {
    return reply(defectReply(`Malformed Request: id must be a decimal string like "1", not ${describeValue(id)}.`))
  }
  if (context.inFlight(id)) {
    return reply(
      invalidInputReply(id, `request id ${id} is already in flight on this connection; use a new id for each request`)
    )
  }
  const tag = field(message, "tag")
  const decode = typeof tag === "string" ? payloadDecoders.get(tag) : undefined
  if (decode === undefined) {
    return reply(
      invalidInputReply(
        id,
        typeof tag === "string"
          ? `unknown method ${describeValue(tag)}; methods are ${methodNames.join(", ")}`
          : `tag must be a method name (one of ${methodNames.join(", ")}), not ${describeValue(tag)}`
      )
    )
  }
  const method = tag as string
  const headers = screenHeaders(field(message, "headers"))
  if ("problem" in headers) return reply(invalidInputReply(id, `${method}: ${headers.problem}`))
  const payload = field(message, "payload")
  const excess = exceedsNesting(payload, 2)
  if (excess !== undefined) {
    return reply(
      invalidInputReply(
        id,
        excess === "depth"
          ? `${method}: the payload nests deeper than ${MAX_DEPTH - 1} levels`
          : `${method}: the payload holds more than ${MAX_PAYLOAD_VALUES} values`
      )
    )
  }
  const decoded = decode(payload)
  if (decoded._tag === "Left") return reply(invalidInputReply(id, `${method}: ${formatParseError(decoded.left)}`))
  return { _tag: "Forward", message: { _tag: "Request", id, tag: method, payload: decoded.right, headers: headers.ok } }
}

/**
 * What to do with one message as `JSON.parse` returned it (any value): forward a
 * rebuilt, well-typed message to be served, answer it here, or ignore it.
 * Never throws.
 */
export const screenMessage = (message: unknown, context: ScreenContext): Screened => {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return reply(
      defectReply(
        `Malformed message: expected a JSON object with a _tag (${messageTags.join(", ")}), not ${describeValue(message)}.`
      )
    )
  }
  const tag = field(message, "_tag")
  switch (tag) {
    case "Request":
      return screenRequest(message, context)
    case "Ping":
      return PING
    case "Eof":
      return IGNORE
    case "Ack":
    case "Interrupt": {
      const requestId = field(message, "requestId")
      if (!isRequestId(requestId)) {
        return reply(
          defectReply(`Malformed ${tag}: requestId must be a decimal string like "1", not ${describeValue(requestId)}.`)
        )
      }
      return tag === "Ack" ? IGNORE : { _tag: "Forward", message: { _tag: "Interrupt", requestId } }
    }
    default:
      return reply(
        defectReply(`Malformed message: _tag must be one of ${messageTags.join(", ")}, not ${describeValue(tag)}.`)
      )
  }
}
