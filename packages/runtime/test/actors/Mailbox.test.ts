import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import * as Mailbox from "../../src/actors/Mailbox.js"

class Stopped {
  readonly _tag = "Stopped"
}

describe("Mailbox", () => {
  it.effect("serialises messages: one handler at a time, in arrival order", () =>
    Effect.gen(function* () {
      const seen: Array<number> = []
      let running = 0
      let maxRunning = 0
      const box = yield* Mailbox.make({
        handle: (n: number) =>
          Effect.gen(function* () {
            running++
            maxRunning = Math.max(maxRunning, running)
            yield* Effect.yieldNow()
            seen.push(n)
            running--
            return n * 2
          }),
        stopped: () => new Stopped()
      })
      const replies = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => box.ask(n), { concurrency: "unbounded" })
      expect(replies).toEqual([2, 4, 6, 8, 10])
      expect(seen).toEqual([1, 2, 3, 4, 5])
      expect(maxRunning).toBe(1)
    }).pipe(Effect.scoped)
  )

  it.effect("a defect fails only its own reply, runs the restart hook, and the next message is served", () =>
    Effect.gen(function* () {
      let restarts = 0
      const box = yield* Mailbox.make({
        handle: (n: number) => (n === 2 ? Effect.die(new Error("boom")) : Effect.succeed(n)),
        stopped: () => new Stopped(),
        onDefect: () => Effect.sync(() => void restarts++)
      })
      expect(yield* box.ask(1)).toBe(1)
      const failed = yield* Effect.exit(box.ask(2))
      expect(Exit.isFailure(failed) && Cause.isDie(failed.cause)).toBe(true)
      expect(restarts).toBe(1)
      expect(yield* box.ask(3)).toBe(3)
    }).pipe(Effect.scoped)
  )

  it.effect("stopping fails every pending reply with the stopped error instead of dropping it", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const box = yield* Mailbox.make({
        handle: (n: number) => (n === 0 ? Effect.as(Deferred.await(gate), n) : Effect.succeed(n)),
        stopped: () => new Stopped()
      })
      const blocked = yield* Effect.fork(box.ask(0))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.forEach([1, 2, 3], (n) => Effect.fork(box.ask(n)))
      yield* Effect.yieldNow()
      expect(yield* box.pending).toBe(3)
      yield* box.stop
      for (const fiber of waiting) {
        const exit = yield* Fiber.await(fiber)
        expect(exit).toEqual(Exit.fail(new Stopped()))
      }
      expect(yield* Fiber.await(blocked)).toEqual(Exit.fail(new Stopped()))
      expect(yield* Effect.exit(box.ask(4))).toEqual(Exit.fail(new Stopped()))
    }).pipe(Effect.scoped)
  )
})
