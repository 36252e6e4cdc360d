import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { RunNotFound, SkeinRpcs, ThreadId, ThreadNotFound } from "@skein/domain"
import { Arbitrary, Cause, Exit, FastCheck as fc, Option, Schema } from "effect"
import { encodesAsItself, exitFrame, wireCodecs } from "../src/WireCodec.js"

class Point extends Schema.Class<Point>("Point")({ x: Schema.Number }) {}
const Id = Schema.NonEmptyTrimmedString.pipe(Schema.brand("Id"))

describe("encodesAsItself", () => {
  it("holds for structs of strings, numbers, literals, brands, refinements, arrays and unions", () => {
    const plain = Schema.Struct({
      id: Id,
      n: Schema.Int.pipe(Schema.nonNegative()),
      kind: Schema.Literal("a", "b"),
      note: Schema.NullOr(Schema.String),
      tags: Schema.Array(Schema.String),
      maybe: Schema.optional(Schema.Boolean),
      pair: Schema.Tuple(Schema.String, Schema.Number),
      either: Schema.Union(Schema.Struct({ type: Schema.Literal("x") }), Schema.Struct({ type: Schema.Literal("y") })),
      byName: Schema.Record({ key: Schema.String, value: Schema.Number })
    })
    expect(encodesAsItself(plain.ast)).toBe(true)
  })

  it("fails for anything that transforms, however deep: classes, Option, dates, numbers from strings", () => {
    for (const inner of [Point, Schema.Option(Schema.String), Schema.Date, Schema.NumberFromString, Schema.Trim]) {
      expect(encodesAsItself(inner.ast)).toBe(false)
      expect(encodesAsItself(Schema.Struct({ deep: Schema.Array(Schema.NullOr(inner)) }).ast)).toBe(false)
    }
  })

  it("follows recursive schemas without looping", () => {
    interface Tree {
      readonly value: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Schema<Tree> = Schema.Struct({
      value: Schema.String,
      children: Schema.Array(Schema.suspend(() => Tree))
    })
    expect(encodesAsItself(Tree.ast)).toBe(true)
    interface Dated {
      readonly at: Date
      readonly next: ReadonlyArray<Dated>
    }
    const Dated: Schema.Schema<Dated, { readonly at: string; readonly next: ReadonlyArray<unknown> }> = Schema.Struct({
      at: Schema.Date,
      next: Schema.Array(Schema.suspend((): Schema.Schema<Dated, any> => Dated))
    })
    expect(encodesAsItself(Dated.ast)).toBe(false)
  })
})

describe("the codecs of every method", () => {
  const methods = Array.from(SkeinRpcs.requests.values()).filter((rpc) => !wireCodecs.get(rpc._tag)!.stream)

  it("have one codec per method of the contract", () => {
    expect([...wireCodecs.keys()].sort()).toEqual([...SkeinRpcs.requests.keys()].sort())
  })

  it("put on the wire exactly what the method's exit schema does, and read back what it reads", () => {
    for (const rpc of methods) {
      const codec = wireCodecs.get(rpc._tag)!
      const success = rpc.successSchema as unknown as Schema.Schema<unknown, unknown, never>
      const exitSchema = Rpc.exitSchema(rpc) as unknown as Schema.Schema<Exit.Exit<unknown, unknown>, unknown, never>
      const reference = Schema.encodeSync(exitSchema)
      const referenceDecode = Schema.decodeUnknownSync(exitSchema)
      fc.assert(
        fc.property(Arbitrary.make(success), (value) => {
          // The server's frame, byte for byte the one the whole exit schema would give.
          const frame = exitFrame("7", { _tag: "Success", value: codec.encodeSuccess(value) })
          expect(frame).toBe(exitFrame("7", reference(Exit.succeed(value))))
          // The client reads it back as the exit schema would.
          const wire = JSON.parse(frame).exit
          expect(codec.decodeExit(wire)).toEqual(referenceDecode(wire))
        }),
        { numRuns: 25, seed: 20_261_201 }
      )
    }
  })

  it("carry failures and defects as the exit schema does", () => {
    const codec = wireCodecs.get("thread.get")!
    const error = new ThreadNotFound({ threadId: ThreadId.make("thr_x") })
    const back = codec.decodeExit(JSON.parse(JSON.stringify(codec.encodeExit(Exit.fail(error)))))
    expect(Exit.isFailure(back) && Cause.failureOption(back.cause)).toEqual(Option.some(error))
    const died = codec.decodeExit(JSON.parse(JSON.stringify(codec.encodeExit(Exit.die(new Error("boom"))))))
    expect(Exit.isFailure(died) && Cause.isDie(died.cause)).toBe(true)
    expect(Exit.isFailure(died) && String(Cause.squash(died.cause))).toContain("boom")
  })

  it("refuse an answer that does not match the method's schema, naming what is wrong", () => {
    const codec = wireCodecs.get("thread.create")!
    expect(() => codec.decodeExit({ _tag: "Success", value: { id: 7 } })).toThrow(/id/)
    // A failure that is not one of the method's errors is refused too.
    expect(() => codec.decodeExit({ _tag: "Failure", cause: { _tag: "Fail", error: { _tag: "Nope" } } })).toThrow()
    // An error of the contract is read as itself.
    const error = new RunNotFound({ runId: "run_x" })
    const back = codec.decodeExit(JSON.parse(JSON.stringify(codec.encodeExit(Exit.fail(error)))))
    expect(Exit.isFailure(back) && Cause.failureOption(back.cause)._tag).toBe("Some")
  })

  it("encode a payload as its schema does, and refuse one it refuses", () => {
    for (const rpc of methods) {
      const codec = wireCodecs.get(rpc._tag)!
      const payload = rpc.payloadSchema as unknown as Schema.Schema<unknown, unknown, never>
      const reference = Schema.encodeSync(payload)
      fc.assert(
        fc.property(Arbitrary.make(payload), (value) => {
          expect(JSON.stringify(codec.encodePayload(value))).toBe(JSON.stringify(reference(value)))
        }),
        { numRuns: 25, seed: 20_261_202 }
      )
    }
  })

  it("decode a stream's chunk by its element schema, and its end as an exit without a value", () => {
    const events = wireCodecs.get("thread.events")!
    expect(events.stream).toBe(true)
    expect(events.decodeExit({ _tag: "Success" })).toEqual(Exit.void)
    expect(() => events.decodeChunk([])).toThrow()
    expect(() => events.decodeChunk([{ threadSequence: "one" }])).toThrow()
  })

  it("write a void success without a value, as JSON.stringify writes the exit", () => {
    expect(exitFrame("1", { _tag: "Success", value: undefined })).toBe(
      '{"_tag":"Exit","requestId":"1","exit":{"_tag":"Success"}}'
    )
  })
})
