import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { boundedText } from "@skein/domain"
import {
  exceedsNesting,
  MAX_DEPTH,
  refuseFrame,
  scanFrame,
  type ScreenContext,
  type Screened,
  screenMessage
} from "../src/Screening.js"

const idle: ScreenContext = { inFlight: () => false }
const screen = (message: unknown, context: ScreenContext = idle) => screenMessage(message, context)

const request = (tag: unknown, payload: unknown, id: unknown = "1", headers: unknown = []) => ({
  _tag: "Request",
  id,
  tag,
  payload,
  headers
})

/** `[[[…0…]]]`, `depth` arrays deep, built without recursion. */
const nested = (depth: number): unknown => {
  let value: unknown = 0
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

const replyOf = (screened: Screened) => {
  expect(screened._tag).toBe("Reply")
  return (screened as Extract<Screened, { _tag: "Reply" }>).reply as any
}

/** The typed error a request was answered with, checking it is an Exit for `id`. */
const failureOf = (screened: Screened, id = "1") => {
  const reply = replyOf(screened)
  expect(reply._tag).toBe("Exit")
  expect(reply.requestId).toBe(id)
  expect(reply.exit._tag).toBe("Failure")
  return reply.exit.cause.error as { _tag: string; detail: string }
}

const defectOf = (screened: Screened): string => {
  const reply = replyOf(screened)
  expect(reply._tag).toBe("Defect")
  return String(reply.defect)
}

describe("screenMessage", () => {
  it("forwards a well-formed request, rebuilt from its known fields only", () => {
    const screened = screen({ ...request("thread.create", { title: "t" }), extra: { junk: 1 }, traceId: 7 })
    expect(screened).toEqual({
      _tag: "Forward",
      message: { _tag: "Request", id: "1", tag: "thread.create", payload: { title: "t" }, headers: [] }
    })
    // headers may be left out
    const { headers: _, ...bare } = request("thread.list", {})
    expect(screen(bare)._tag).toBe("Forward")
  })

  it("answers an unknown method with InvalidInput naming the known ones", () => {
    const error = failureOf(screen(request("thread.nope", {})))
    expect(error._tag).toBe("InvalidInput")
    expect(error.detail).toContain("thread.nope")
    expect(error.detail).toContain("run.start")
  })

  it("answers an undecodable payload with InvalidInput", () => {
    const error = failureOf(screen(request("run.start", { threadId: "thr_1", provider: "bad name!", message: "" })))
    expect(error._tag).toBe("InvalidInput")
    expect(error.detail).toContain("run.start")
  })

  it("answers the eight messages that used to kill the server, each with a typed answer", () => {
    // headers that are not string pairs: InvalidInput for the request's id
    for (const headers of [[[1, 2]], [null], "x-a: b", [["x-a"]], [["bad name", "v"]], [["x-a", { v: 1 }]]]) {
      const error = failureOf(screen(request("thread.list", {}, "5", headers)), "5")
      expect(error._tag).toBe("InvalidInput")
      expect(error.detail).toContain("headers")
    }
    // Interrupt or Ack without a usable requestId: a protocol defect naming the field
    for (const tag of ["Interrupt", "Ack"]) {
      for (const requestId of [undefined, "abc", 12, "-1", "1e3", "01", null, ["1"]]) {
        expect(defectOf(screen({ _tag: tag, requestId }))).toContain(`Malformed ${tag}: requestId`)
      }
    }
    // a payload field nested 10,000 deep: InvalidInput, no stack overflow
    const deepField = failureOf(screen(request("thread.create", { title: nested(10_000) })))
    expect(deepField.detail).toContain(`deeper than ${MAX_DEPTH - 1} levels`)
    // a tag nested 100,000 deep: InvalidInput, described without walking it
    const deepTag = failureOf(screen(request(nested(100_000), {})))
    expect(deepTag._tag).toBe("InvalidInput")
    expect(deepTag.detail).toContain("tag must be a method name")
  })

  it("refuses a request whose id is still in flight, and only that one", () => {
    const context: ScreenContext = { inFlight: (id) => id === "7" }
    const error = failureOf(screen(request("thread.list", {}, "7"), context), "7")
    expect(error._tag).toBe("InvalidInput")
    expect(error.detail).toContain("request id 7 is already in flight")
    expect(screen(request("thread.list", {}, "8"), context)._tag).toBe("Forward")
  })

  it("answers a message that is not an RPC message with a protocol defect", () => {
    for (const message of [42, null, "Request", [1, 2], {}, { _tag: "Bogus" }, { _tag: ["Request"] }]) {
      expect(defectOf(screen(message))).toContain("Malformed message")
    }
    for (const id of [7, "x", "", "-1", "01", "1".repeat(31), null, { n: 1 }]) {
      expect(defectOf(screen(request("thread.list", {}, id)))).toContain("Malformed Request: id")
    }
    expect(defectOf(screen({ _tag: "Request", tag: "thread.list", payload: {} }))).toContain("Malformed Request: id")
  })

  it("passes pings and interrupts on, and ignores acks and eofs", () => {
    expect(screen({ _tag: "Ping", junk: true })).toEqual({ _tag: "Forward", message: { _tag: "Ping" } })
    expect(screen({ _tag: "Interrupt", requestId: "3", interruptors: [{ evil: true }] })).toEqual({
      _tag: "Forward",
      message: { _tag: "Interrupt", requestId: "3" }
    })
    expect(screen({ _tag: "Ack", requestId: "3" })._tag).toBe("Ignore")
    expect(screen({ _tag: "Eof" })._tag).toBe("Ignore")
  })

  it("keeps every error text short, whatever the client sent", () => {
    const huge = "x".repeat(1_000_000)
    const unknown = failureOf(screen(request(huge, {})))
    expect(unknown.detail.length).toBeLessThan(2_000)
    const badPayload = failureOf(screen(request("thread.create", { title: huge })))
    expect(badPayload.detail.length).toBeLessThan(2_000)
    expect(defectOf(screen({ _tag: huge })).length).toBeLessThan(2_000)
  })

  it("never throws, and answers or forwards only well-typed messages, for any value (property)", () => {
    const tags = fc.constantFrom("Request", "Ack", "Interrupt", "Ping", "Eof", "request", "")
    const messages = fc.oneof(
      fc.jsonValue(),
      fc.anything(),
      fc.record(
        {
          _tag: fc.oneof(tags, fc.jsonValue()),
          id: fc.oneof(fc.nat().map(String), fc.jsonValue()),
          requestId: fc.oneof(fc.nat().map(String), fc.jsonValue()),
          tag: fc.oneof(fc.constantFrom("thread.list", "thread.get", "run.start", "provider.list"), fc.jsonValue()),
          payload: fc.oneof(fc.constant({}), fc.jsonValue(), fc.anything()),
          headers: fc.oneof(fc.array(fc.tuple(fc.string(), fc.string())), fc.jsonValue())
        },
        { requiredKeys: ["_tag"] }
      )
    )
    fc.assert(
      fc.property(messages, (message) => {
        const screened = screen(message)
        if (screened._tag === "Forward") {
          const forwarded = screened.message as any
          expect(["Request", "Interrupt", "Ping"]).toContain(forwarded._tag)
          if (forwarded._tag === "Request") {
            expect(forwarded.id).toMatch(/^(0|[1-9][0-9]*)$/)
            expect(typeof forwarded.tag).toBe("string")
            for (const pair of forwarded.headers)
              expect(pair.map((x: unknown) => typeof x)).toEqual(["string", "string"])
          }
          if (forwarded._tag === "Interrupt") expect(forwarded.requestId).toMatch(/^(0|[1-9][0-9]*)$/)
        }
        if (screened._tag === "Reply") expect(JSON.stringify(screened.reply).length).toBeLessThan(4_000)
      }),
      { numRuns: 2_000, seed: 20_251_130 }
    )
  })
})

describe("scanFrame", () => {
  it("finds the top-level _tag and id, wherever they are and whatever the payload holds", () => {
    expect(scanFrame('{"_tag":"Request","id":"12","payload":{"id":"99","_tag":"x"}}')).toEqual({
      tooDeep: false,
      tag: "Request",
      id: "12"
    })
    expect(scanFrame('{ "payload" : [ {"id" : "99"} ], "id" : "3" , "_tag" : "Request" }')).toMatchObject({
      tag: "Request",
      id: "3"
    })
    // values that are not short plain strings are not ids
    expect(scanFrame('{"_tag":"Request","id":5}').id).toBeUndefined()
    expect(scanFrame('{"_tag":"Request","id":["5"]}').id).toBeUndefined()
    expect(scanFrame('{"_tag":"Request","id":"\\u0035"}').id).toBeUndefined()
    // a string value that looks like a key is not one
    expect(scanFrame('{"tag":"id","x":"1"}').id).toBeUndefined()
    expect(scanFrame('["id","1"]').id).toBeUndefined()
    // brackets inside strings do not count
    expect(scanFrame(`{"_tag":"Request","id":"1","payload":"${"[".repeat(1000)}"}`).tooDeep).toBe(false)
  })

  it("measures nesting exactly at the limit", () => {
    const frame = (depth: number) => "[".repeat(depth) + "]".repeat(depth)
    expect(scanFrame(frame(MAX_DEPTH)).tooDeep).toBe(false)
    expect(scanFrame(frame(MAX_DEPTH + 1)).tooDeep).toBe(true)
    expect(scanFrame(frame(1_000_000)).tooDeep).toBe(true)
  })

  it("answers a refused frame for its request id when it has one", () => {
    const deep = `{"_tag":"Request","id":"4","tag":"thread.create","payload":${"[".repeat(500)}${"]".repeat(500)}}`
    const reply = refuseFrame(scanFrame(deep), "too deep") as any
    expect(reply).toMatchObject({ _tag: "Exit", requestId: "4" })
    expect(reply.exit.cause.error).toMatchObject({ _tag: "InvalidInput", detail: "too deep" })
    expect((refuseFrame(scanFrame("[[[[["), "too deep") as any)._tag).toBe("Defect")
  })
})

describe("bounds", () => {
  it("exceedsNesting walks without recursion and stops at the first excess", () => {
    // a payload (level 2) may hold 63 levels of arrays: 64 with the message
    expect(exceedsNesting(nested(63), 2)).toBeUndefined()
    expect(exceedsNesting(nested(64), 2)).toBe("depth")
    expect(exceedsNesting(nested(1_000_000), 2)).toBe("depth")
    expect(exceedsNesting(new Array(100).fill(0), 1, 64, 50)).toBe("size")
    // a cycle (only a direct caller can make one) is too deep, not an endless walk
    const cyclic: Record<string, unknown> = {}
    cyclic["self"] = cyclic
    expect(exceedsNesting(cyclic, 1)).toBe("depth")
  })

  it("boundedText cuts long texts and says by how much", () => {
    expect(boundedText("short")).toBe("short")
    expect(boundedText("x".repeat(1_010))).toMatch(/… \(10 more characters\)$/)
  })
})
