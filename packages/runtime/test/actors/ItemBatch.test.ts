/** ItemBatch: a batch the turn goes on after is recorded at once; the end's items, and any after a failure, are held. */
import type { SkeinError, TurnItemContent } from "@skein/domain"
import { InvalidInput } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as ItemBatch from "../../src/actors/ItemBatch.js"

const say = (text: string): TurnItemContent => ({ type: "assistant_message", text })

describe("ItemBatch", () => {
  it.effect("records each batch the turn goes on after as one recording, and holds the end's items", () =>
    Effect.gen(function* () {
      const recorded: Array<ReadonlyArray<TurnItemContent>> = []
      const batch = yield* ItemBatch.make((items) => Effect.sync(() => void recorded.push(items)))
      yield* batch.add([say("a"), say("b")])
      yield* batch.add([])
      yield* batch.add([say("c")])
      yield* batch.end([say("d")])
      expect(recorded).toEqual([[say("a"), say("b")], [say("c")]])
      expect(yield* batch.held).toEqual([say("d")])
    })
  )

  it.effect("a failed recording keeps its items and all later ones for the run's end, and fails with why", () =>
    Effect.gen(function* () {
      const refused = new InvalidInput({ detail: "the store refused them" }) as SkeinError
      const recorded: Array<ReadonlyArray<TurnItemContent>> = []
      const batch = yield* ItemBatch.make((items) =>
        items[0]!.type === "assistant_message" && items[0]!.text === "bad"
          ? Effect.fail(refused)
          : Effect.sync(() => void recorded.push(items))
      )
      yield* batch.add([say("ok")])
      expect(yield* Effect.flip(batch.add([say("bad")]))).toBe(refused)
      expect(yield* Effect.flip(batch.add([say("later")]))).toBe(refused)
      expect(yield* Effect.flip(batch.end([say("last")]))).toBe(refused)
      expect(recorded).toEqual([[say("ok")]])
      expect(yield* batch.held).toEqual([say("bad"), say("later"), say("last")])
    })
  )

  it.effect("items handed over while the turn is being interrupted are held, not recorded", () =>
    Effect.gen(function* () {
      const recorded: Array<ReadonlyArray<TurnItemContent>> = []
      const batch = yield* ItemBatch.make((items) => Effect.sync(() => void recorded.push(items)))
      const fiber = yield* Effect.fork(Effect.onInterrupt(Effect.never, () => Effect.ignore(batch.add([say("late")]))))
      yield* Effect.yieldNow()
      expect(Exit.isInterrupted(yield* Fiber.interrupt(fiber))).toBe(true)
      expect(recorded).toEqual([])
      expect(yield* batch.held).toEqual([say("late")])
    })
  )
})
