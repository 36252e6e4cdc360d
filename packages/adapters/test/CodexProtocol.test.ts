import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { envelopeOf } from "../src/codex/CodexProtocol.js"

describe("envelopeOf (what a line from codex app-server is)", () => {
  it("reads the four shapes the server writes", () => {
    expect(envelopeOf({ method: "turn/completed", params: { threadId: "t" } })).toEqual({
      _tag: "Notification",
      method: "turn/completed",
      params: { threadId: "t" }
    })
    expect(envelopeOf({ method: "initialized" })).toEqual({
      _tag: "Notification",
      method: "initialized",
      params: undefined
    })
    expect(envelopeOf({ id: 0, method: "item/commandExecution/requestApproval", params: { x: 1 } })).toEqual({
      _tag: "Request",
      id: 0,
      method: "item/commandExecution/requestApproval",
      params: { x: 1 }
    })
    expect(envelopeOf({ id: "a", method: "m", params: null })).toMatchObject({ _tag: "Request", id: "a" })
    expect(envelopeOf({ id: 7, result: { turn: { id: "u" } } })).toEqual({
      _tag: "Result",
      id: 7,
      result: { turn: { id: "u" } }
    })
    // A null result is a result.
    expect(envelopeOf({ id: 7, result: null })).toEqual({ _tag: "Result", id: 7, result: null })
    expect(envelopeOf({ id: 8, error: { code: -32600, message: "bad" } })).toEqual({
      _tag: "Error",
      id: 8,
      message: "bad"
    })
  })

  it("says what a malformed line looked like", () => {
    const why = (raw: unknown) => {
      const envelope = envelopeOf(raw)
      return envelope._tag === "Malformed" ? envelope.why : envelope._tag
    }
    expect(why(42)).toBe("a message that is not an object")
    expect(why(null)).toBe("a message that is not an object")
    expect(why([1, 2])).toBe("a message that is not an object")
    expect(why({ method: 42, params: {} })).toBe("a malformed notification")
    expect(why({ id: 1, method: 42 })).toBe("a malformed server request")
    expect(why({ id: { nested: true }, method: "m" })).toBe("a malformed server request")
    expect(why({ error: { message: "no id" } })).toBe("a malformed error reply")
    expect(why({ id: 1, error: "no message" })).toBe("a malformed error reply")
    expect(why({ id: 1, error: { message: 5 } })).toBe("a malformed error reply")
    expect(why({ id: { nested: true }, result: {} })).toBe("a malformed reply")
    expect(why({ id: 1 })).toBe("a malformed reply")
    expect(why({})).toBe("a malformed reply")
  })

  /** Any JSON value, and objects made of the envelope's members, each of any type or absent. */
  const line = fc.oneof(
    fc.jsonValue(),
    fc.record(
      {
        id: fc.oneof(fc.integer(), fc.string(), fc.jsonValue()),
        method: fc.oneof(fc.string(), fc.jsonValue()),
        params: fc.jsonValue(),
        result: fc.jsonValue(),
        error: fc.oneof(fc.record({ message: fc.oneof(fc.string(), fc.jsonValue()) }), fc.jsonValue())
      },
      { requiredKeys: [] }
    )
  )

  it("never throws, and whatever it accepts has the members its shape promises", () => {
    fc.assert(
      fc.property(line, (raw) => {
        const envelope = envelopeOf(raw)
        switch (envelope._tag) {
          case "Notification":
            return typeof envelope.method === "string" && !("id" in (raw as object))
          case "Request":
            return typeof envelope.method === "string" && ["number", "string"].includes(typeof envelope.id)
          case "Result":
            return ["number", "string"].includes(typeof envelope.id) && "result" in (raw as object)
          case "Error":
            return ["number", "string"].includes(typeof envelope.id) && typeof envelope.message === "string"
          case "Malformed":
            return envelope.why.length > 0
        }
      }),
      { numRuns: 2000 }
    )
  })
})
