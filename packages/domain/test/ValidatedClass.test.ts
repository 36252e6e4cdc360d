/**
 * ValidatedTaggedClass builds what Schema.TaggedClass builds, with the same checks.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, FastCheck, ParseResult, Schema } from "effect"
import { ContextTransfer, TransferRecorded } from "../src/index.js"
import { ValidatedTaggedClass } from "../src/ValidatedClass.js"

class Plain extends Schema.TaggedClass<Plain>()("TransferRecorded", { transfer: ContextTransfer }) {}
class Point extends ValidatedTaggedClass<Point>()("Point", {
  x: Schema.Int,
  label: Schema.optional(Schema.NonEmptyString)
}) {}

describe("ValidatedTaggedClass", () => {
  it("builds the instance Schema.TaggedClass builds, for any valid props", () => {
    FastCheck.assert(
      FastCheck.property(Arbitrary.make(Plain), (plain) => {
        const props = { transfer: plain.transfer }
        const validated = new TransferRecorded(props)
        expect(validated).toBeInstanceOf(TransferRecorded)
        expect(Object.keys(validated)).toEqual(Object.keys(plain))
        expect(JSON.stringify(validated)).toBe(JSON.stringify(plain))
        expect(Schema.encodeSync(TransferRecorded)(validated)).toEqual(Schema.encodeSync(Plain)(plain))
        const decoded = Schema.decodeUnknownSync(TransferRecorded)(Schema.encodeSync(TransferRecorded)(validated))
        expect(decoded).toBeInstanceOf(TransferRecorded)
        expect(decoded).toEqual(validated)
      }),
      { numRuns: 100 }
    )
  })

  it("refuses bad props with a ParseError that names the constructor and the field", () => {
    const attempt = () => new Point({ x: 1.5 })
    expect(attempt).toThrow(ParseResult.ParseError)
    expect(attempt).toThrow(/Point \(Constructor\)/)
    expect(attempt).toThrow(/\["x"\]/)
    expect(() => new Point({ x: 1, label: "" })).toThrow(/\["label"\]/)
  })

  it("drops unknown props, and skips validation only when asked", () => {
    const point = new Point({ x: 2, extra: true } as unknown as { x: number })
    expect(point).toEqual(new Point({ x: 2 }))
    expect("extra" in point).toBe(false)
    expect(point._tag).toBe("Point")
    expect(new Point({ x: 1.5 }, true).x).toBe(1.5)
    expect(new Point({ x: 1.5 }, { disableValidation: true }).x).toBe(1.5)
    expect(() => new Point({ x: 1.5 }, { disableValidation: false })).toThrow(ParseResult.ParseError)
  })
})
