/**
 * Every domain entity and event survives the store's encoding (Schema encode → JSON →
 * decode) unchanged, and garbage decodes to a typed error.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  AppThread,
  Checkpoint,
  ContextHandoff,
  ContextTransfer,
  ProviderThread,
  Run,
  StoredEvent,
  ThreadEvent,
  TurnItem
} from "@skein/domain"
import { Arbitrary, Either, FastCheck, ParseResult, Schema } from "effect"
import { decodeEvent, encodeEvent, storedEventJson } from "../../src/store/EventCodec.js"
import { sampleLog, threadId } from "./builders.js"

const roundTrip = <A, I>(schema: Schema.Schema<A, I>, value: A): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(JSON.stringify(Schema.encodeSync(schema)(value))))

/** A ThreadCreated event whose thread has a numeric title. */
const invalidThreadCreated = (name: string): ThreadEvent => {
  const [created] = sampleLog(threadId(name))
  return {
    ...created!,
    thread: { ...(created as { thread: AppThread }).thread, title: 42 }
  } as unknown as ThreadEvent
}

const entities = {
  AppThread,
  Run,
  TurnItem,
  ProviderThread,
  ContextTransfer,
  ContextHandoff,
  Checkpoint,
  ThreadEvent,
  StoredEvent
}

describe("Schema round trips", () => {
  for (const [name, schema] of Object.entries(entities)) {
    it(`${name}: encode → JSON → decode is the identity`, () => {
      const s = schema as unknown as Schema.Schema<unknown, unknown>
      FastCheck.assert(
        FastCheck.property(Arbitrary.make(s), (value) => {
          expect(roundTrip(s, value)).toEqual(value)
        }),
        { numRuns: 100 }
      )
    })
  }

  it("the store's event codec gives the union's encoding, and decodes it back", () => {
    FastCheck.assert(
      FastCheck.property(Arbitrary.make(ThreadEvent), (event) => {
        const form = Either.getOrThrow(encodeEvent(event))
        const encoded = Schema.encodeSync(ThreadEvent)(event)
        expect(JSON.parse(form.payload)).toEqual(encoded)
        // The data is the event's entity, or, for an event that is not one entity, its fields.
        const { _tag: _, ...fields } = encoded as Record<string, unknown>
        const entity = Object.values(fields).filter((v) => typeof v === "object" && v !== null)
        expect(JSON.parse(form.data)).toEqual(Object.keys(fields).length === 1 ? entity[0] : fields)
        expect(Either.getOrThrow(decodeEvent(form.payload, "event"))).toEqual(event)
      }),
      { numRuns: 200 }
    )
  })

  it("storedEventJson is the StoredEvent encoding, whether or not the codec has seen the event", () => {
    FastCheck.assert(
      FastCheck.property(Arbitrary.make(StoredEvent), (stored) => {
        const expected = Schema.encodeSync(StoredEvent)(stored)
        // Never seen: encoded on the spot.
        expect(JSON.parse(storedEventJson(stored))).toEqual(expected)
        // Encoded for the log, then decoded back from it: the stored text is reused.
        const form = Either.getOrThrow(encodeEvent(stored.event))
        expect(JSON.parse(storedEventJson(stored))).toEqual(expected)
        const decoded = Either.getOrThrow(decodeEvent(form.payload, "event"))
        expect(JSON.parse(storedEventJson({ ...stored, event: decoded }))).toEqual(expected)
      }),
      { numRuns: 200 }
    )
  })

  it("storedEventJson refuses an invalid event with the store's error", () => {
    const bad = invalidThreadCreated("bad-json")
    const stored = {
      sequence: 1,
      threadId: threadId("bad-json"),
      threadSequence: 1,
      commandId: null,
      createdAt: "now",
      event: bad
    }
    expect(() => storedEventJson(stored)).toThrow(/cannot store an invalid ThreadCreated event/)
  })

  it("every event type of a realistic log round-trips through the codec", () => {
    const log = sampleLog(threadId("rt"))
    expect(new Set(log.map((e) => e._tag)).size).toBeGreaterThanOrEqual(7)
    for (const event of log) {
      const form = Either.getOrThrow(encodeEvent(event))
      expect(Either.getOrThrow(decodeEvent(form.payload, "event"))).toEqual(event)
    }
  })

  it("garbage decodes to a typed ParseError", () => {
    const garbage: ReadonlyArray<unknown> = [
      null,
      42,
      "run",
      {},
      { id: "", threadId: "thr_1" },
      { _tag: "RunStarted", run: { id: "run_1" } },
      { _tag: "NoSuchEvent" }
    ]
    for (const value of garbage) {
      for (const schema of [Run, TurnItem, ThreadEvent] as const) {
        const result = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)(value)
        expect(Either.isLeft(result)).toBe(true)
        if (Either.isLeft(result)) expect(ParseResult.isParseError(result.left)).toBe(true)
      }
    }
  })

  it("garbage payloads decode to a StorageError naming the event", () => {
    for (const payload of ["not json", "{}", '{"_tag":"RunStarted","run":{"id":"run_1"}}', '{"_tag":"Nope"}', "[]"]) {
      const result = decodeEvent(payload, "event 7 of thread thr_x")
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left._tag).toBe("StorageError")
        expect(result.left.detail).toContain("event 7 of thread thr_x")
      }
    }
  })

  it("an invalid entity is refused with a StorageError, not a defect", () => {
    const result = encodeEvent(invalidThreadCreated("bad"))
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) expect(result.left.detail).toMatch(/cannot store an invalid ThreadCreated event/)
  })
})
