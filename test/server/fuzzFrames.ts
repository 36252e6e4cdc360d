/**
 * Seeded hostile frames for the fuzz test, and what the protocol promises to answer
 * each with (the oracle). Deterministic: the same seed gives the same frames.
 *
 * Frames come from: valid requests of every method with one to three mutations
 * (wrong types at every field, deleted and extra fields, deep nesting, huge strings,
 * bad ids, headers and tags), a sweep of wrong types over every field of every
 * method, every message tag with good and bad fields, and text that is not JSON.
 *
 * Requests name a thread that does not exist, so none of them starts a run or
 * follows a stream; canonical request ids come only from the caller's counter (so
 * no two frames share one), and Interrupt/Ack ids from a range no request uses.
 */

/** mulberry32: a small seeded generator, good enough to pick cases. */
export const seeded = (seed: number) => {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number): number => Math.floor(next() * n)
  const pick = <A>(items: ReadonlyArray<A>): A => items[int(items.length)]!
  return { next, int, pick }
}
export type Random = ReturnType<typeof seeded>

/** The protocol's frame limits (the daemon's defaults). */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024
export const MAX_DEPTH = 64

const GHOST = "thr_fuzz_ghost_thread"

/** A valid payload for every method (on a thread that does not exist). */
export const templates: Record<string, Record<string, unknown>> = {
  "thread.get": { threadId: GHOST },
  "thread.list": { parentThreadId: GHOST },
  "thread.events": { threadId: GHOST, fromSequence: 0 },
  "run.start": { threadId: GHOST, provider: "alpha", message: "hello", wait: true },
  "run.interrupt": { threadId: GHOST },
  "thread.fork": { sourceThreadId: GHOST, sourcePoint: "latest_stable", title: "fork" },
  "thread.mergeBack": { forkThreadId: GHOST },
  "thread.rollback": { threadId: GHOST, toRunOrdinal: 0 },
  "subagent.spawn": { parentThreadId: GHOST, provider: "alpha", prompt: "help" },
  "transfer.list": { status: "pending", rootThreadId: GHOST },
  "handoff.get": { handoffId: "hof_fuzz_ghost" },
  "approval.respond": { threadId: GHOST, approvalId: "apr_fuzz_ghost", decision: "accept" },
  "provider.list": {},
  "thread.locate": { threadId: GHOST }
}
const methods = Object.keys(templates)

/** Values of the wrong type (or shape) for any field. None is a canonical request id string. */
const wrongValues: ReadonlyArray<unknown> = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -0,
  "",
  " ",
  "x",
  "\u0000\u0001",
  "\ud83d\ude00 emoji",
  "a\nb\r\nc",
  "thr_" + "z".repeat(600),
  [],
  {},
  [1, "a", null, { b: [] }],
  { a: { b: { c: [1, 2, 3] } } },
  // own keys named __proto__ and constructor, as JSON.parse makes them
  JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}'),
  [[["nested"]]],
  { _tag: "Request", id: "1" }
]

/** Request ids that are not canonical decimals. */
const badIds: ReadonlyArray<unknown> = [
  1,
  -1,
  1.5,
  "",
  " 1",
  "1 ",
  "01",
  "-1",
  "+1",
  "1e3",
  "0x10",
  "abc",
  "\u0661",
  null,
  true,
  [],
  {},
  ["1"],
  "9".repeat(31),
  "1".padStart(40, "0")
]

const badHeaders: ReadonlyArray<unknown> = [
  [[1, 2]],
  [null],
  "x-a: b",
  { "x-a": "b" },
  [["x-a"]],
  [["x-a", "b", "c"]],
  [["bad name", "v"]],
  [["x-a", 1]],
  [["", "v"]],
  [["x-a", "v".repeat(10_000)]],
  Array.from({ length: 70 }, (_, i) => [`x-${i}`, "v"]),
  [[["x-a"], "v"]]
]

const messageTags: ReadonlyArray<unknown> = [
  "Request",
  "Ack",
  "Interrupt",
  "Ping",
  "Eof",
  "Pong",
  "Exit",
  "Chunk",
  "Defect",
  "request",
  "",
  42,
  null,
  ["Request"]
]

/** `[[[…leaf…]]]`, `depth` levels (as text, to stay cheap at 100,000 levels). */
const deepText = (depth: number, leaf = "0"): string => "[".repeat(depth) + leaf + "]".repeat(depth)

/** A value as JSON text; `raw` wraps text to splice in unchanged. */
class Raw {
  constructor(readonly text: string) {}
}
const toText = (value: unknown): string => {
  if (value instanceof Raw) return value.text
  if (Array.isArray(value)) return `[${value.map(toText).join(",")}]`
  if (typeof value === "object" && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toText(v)}`)
      .join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

const randomText = (random: Random, length: number): string => {
  const alphabet = 'abcXYZ019 {}[]":,\\\u00e9\u4e2d\ud83d\ude00\t'
  let text = ""
  for (let i = 0; i < length; i++) text += alphabet[random.int(alphabet.length)]
  return text
}

/** A wrong value for one field: a listed one, deep nesting, or a long string. */
const wrongValue = (random: Random, big: boolean): unknown => {
  const roll = random.next()
  if (roll < 0.1) return new Raw(deepText(random.pick([MAX_DEPTH, MAX_DEPTH + 1, 100, 1_000, 10_000, 100_000])))
  if (big && roll < 0.11) return "s".repeat(random.pick([100_000, 1_000_000, 3_000_000, MAX_FRAME_BYTES + 10]))
  if (roll < 0.2) return randomText(random, random.int(64))
  // A copy: later mutations change it in place.
  const value = random.pick(wrongValues)
  return typeof value === "object" && value !== null ? JSON.parse(JSON.stringify(value)) : value
}

export interface FuzzFrame {
  readonly text: string
  /** What the case is, for failure messages. */
  readonly label: string
}

/** One frame of the fuzz stream. `nextId` hands out canonical request ids. */
export const fuzzFrame = (random: Random, nextId: () => string, options: { readonly big: boolean }): FuzzFrame => {
  const roll = random.next()
  // Mutated valid requests.
  if (roll < 0.55) {
    const method = random.pick(methods)
    const message: Record<string, unknown> = {
      _tag: "Request",
      id: nextId(),
      tag: method,
      payload: { ...templates[method] },
      headers: []
    }
    const mutations = 1 + random.int(3)
    const applied: Array<string> = []
    for (let m = 0; m < mutations; m++) {
      const payload = message["payload"]
      const op = random.int(10)
      if (
        op <= 3 &&
        typeof payload === "object" &&
        payload !== null &&
        !Array.isArray(payload) &&
        !(payload instanceof Raw)
      ) {
        const keys = Object.keys(payload)
        const key =
          keys.length > 0 && random.next() < 0.8
            ? random.pick(keys)
            : random.pick(["extra", "__proto__", "constructor", "x".repeat(200)])
        if (random.next() < 0.2) delete (payload as Record<string, unknown>)[key]
        else {
          // An own property even for "__proto__", as in parsed JSON.
          Object.defineProperty(payload, key, {
            value: wrongValue(random, options.big),
            enumerable: true,
            writable: true,
            configurable: true
          })
        }
        applied.push(`payload.${key.slice(0, 20)}`)
      } else if (op === 4) {
        message["payload"] = wrongValue(random, options.big)
        applied.push("payload")
      } else if (op === 5) {
        message["id"] = random.pick(badIds)
        applied.push("id")
      } else if (op === 6) {
        message["headers"] = random.pick(badHeaders)
        applied.push("headers")
      } else if (op === 7) {
        message["tag"] =
          random.next() < 0.5 ? wrongValue(random, options.big) : random.pick(["thread.nope", "run", "", "THREAD.GET"])
        applied.push("tag")
      } else if (op === 8) {
        message["_tag"] = random.pick(messageTags)
        applied.push("_tag")
      } else {
        message[random.pick(["junk", "traceId", "spanId", "sampled", "interruptors"])] = wrongValue(random, false)
        applied.push("extra field")
      }
    }
    const text = toText(message)
    // A mutation may cut or double it, as a broken client would.
    const cut = random.next()
    if (cut < 0.03) return { text: text.slice(0, random.int(text.length)), label: `truncated ${method}` }
    if (cut < 0.05) return { text: `[${text},${text}]`, label: `batched ${method}` }
    return { text, label: `${method} with ${applied.join(", ")}` }
  }
  // Every message tag, with good and bad fields.
  if (roll < 0.75) {
    const tag = random.pick(messageTags)
    const message: Record<string, unknown> = { _tag: tag }
    const fields = random.int(4)
    for (let f = 0; f < fields; f++) {
      const name = random.pick(["requestId", "id", "interruptors", "payload", "values", "exit"])
      message[name] =
        name === "requestId" && random.next() < 0.5
          ? String(900_000_000_000_000 + random.int(1_000_000))
          : name === "requestId" || name === "id"
            ? random.pick(badIds)
            : wrongValue(random, false)
    }
    return { text: toText(message), label: `tag ${String(tag)}` }
  }
  // Huge requests: a valid method with one enormous string field.
  if (roll < 0.755 && options.big) {
    const size = random.pick([500_000, 2_000_000, MAX_FRAME_BYTES - 200, MAX_FRAME_BYTES + 100, 6_000_000])
    const message = {
      _tag: "Request",
      id: nextId(),
      tag: "thread.get",
      payload: { threadId: "t".repeat(size) },
      headers: []
    }
    return { text: JSON.stringify(message), label: `huge ${size}` }
  }
  // Deep nesting at the top or in the payload.
  if (roll < 0.85) {
    const depth = random.pick([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 500, 10_000, 100_000])
    const text =
      random.next() < 0.5
        ? deepText(depth)
        : `{"_tag":"Request","id":"${nextId()}","tag":"thread.create","payload":{"title":${deepText(depth, '"t"')}},"headers":[]}`
    return { text, label: `depth ${depth}` }
  }
  // Not JSON, or not an object.
  const garbage = random.pick([
    () => randomText(random, 1 + random.int(200)),
    () =>
      random.pick(["null", "1", "-0", "1e999", '"Request"', "[]", "{}", "[{}]", "true", '{"_tag"}', "{,}", "\u0000"]),
    () => `{"_tag":"Request","id":"${nextId()}"`,
    () => " ".repeat(1 + random.int(10)) + "{}"
  ])()
  return { text: garbage, label: "not a message" }
}

/** What the protocol promises for a frame. */
export type Expected =
  | { readonly kind: "exit"; readonly id: string }
  | { readonly kind: "defect" }
  | { readonly kind: "pong" }
  | { readonly kind: "none" }

const canonicalId = /^(?:0|[1-9][0-9]{0,29})$/
const isId = (value: unknown): value is string => typeof value === "string" && canonicalId.test(value)

/** The deepest nesting of brackets outside strings in a frame's text (whether or not it is valid JSON). */
const textDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === "\\") i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === "{" || c === "[") deepest = Math.max(deepest, ++depth)
    else if (c === "}" || c === "]") depth--
  }
  return deepest
}

/** The request id of a frame that starts as a request does, read off its text. */
const leadingRequestId = (text: string): string | undefined =>
  /^\{"_tag":"Request","id":"(0|[1-9][0-9]{0,29})"[,}]/.exec(text)?.[1]

/**
 * The oracle, from the protocol's rules rather than the server's code: a request
 * with a canonical id gets an Exit for that id; a well-formed Ping a Pong; a
 * well-formed Ack or Eof, or an Interrupt of an id not in flight, nothing; anything
 * else a Defect. A frame over the size or nesting limit (brackets counted in its
 * text) is answered unparsed, valid JSON or not: an Exit when it starts as a request
 * with a canonical id (as every request this generator writes does), else a Defect.
 */
export const expectedAnswer = (text: string, transport: "websocket" | "stdio"): Expected => {
  if (transport === "stdio" && text.trim() === "") return { kind: "none" }
  if (Buffer.byteLength(text) > MAX_FRAME_BYTES || textDepth(text) > MAX_DEPTH) {
    // Refused unparsed, so parsed or not: an Exit when it reads as a request.
    const id = leadingRequestId(text)
    return id === undefined ? { kind: "defect" } : { kind: "exit", id }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { kind: "defect" }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { kind: "defect" }
  const message = value as Record<string, unknown>
  const own = (key: string) => (Object.prototype.hasOwnProperty.call(message, key) ? message[key] : undefined)
  const tag = own("_tag")
  if (tag === "Request") return isId(own("id")) ? { kind: "exit", id: own("id") as string } : { kind: "defect" }
  if (tag === "Ping") return { kind: "pong" }
  if (tag === "Eof") return { kind: "none" }
  if (tag === "Ack" || tag === "Interrupt") return isId(own("requestId")) ? { kind: "none" } : { kind: "defect" }
  return { kind: "defect" }
}
