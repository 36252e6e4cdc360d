/** OneShot: the first completion wins, listeners come and go, and `race` as the driver and guard use it. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as OneShot from "../../src/actors/OneShot.js"

describe("OneShot", () => {
  it("keeps the first completion and tells each listener once", () => {
    const cell = OneShot.make<number, string>()
    const heard: Array<Exit.Exit<number, string>> = []
    const kept = OneShot.listen(cell, (exit) => heard.push(exit))
    const dropped = OneShot.listen(cell, () => heard.push(Exit.succeed(-1)))
    dropped()
    expect(OneShot.succeed(cell, 1)).toBe(true)
    expect(OneShot.fail(cell, "late")).toBe(false)
    expect(heard).toEqual([Exit.succeed(1)])
    kept()
    // A listener on a completed cell hears at once.
    OneShot.listen(cell, (exit) => heard.push(exit))
    expect(heard).toEqual([Exit.succeed(1), Exit.succeed(1)])
  })

  it.effect("wait answers with the cell's result, now or later", () =>
    Effect.gen(function* () {
      const cell = OneShot.make<string, string>()
      const waiting = yield* Effect.fork(OneShot.wait(cell))
      yield* Effect.yieldNow()
      OneShot.fail(cell, "no")
      expect(yield* Effect.flip(Fiber.join(waiting))).toBe("no")
      expect(yield* Effect.flip(OneShot.wait(cell))).toBe("no")
    })
  )

  it.effect("race: the effect's result when nothing else comes first", () =>
    Effect.gen(function* () {
      let disarmed = 0
      const result = yield* OneShot.race(Effect.succeed(7), () => Effect.sync(() => void disarmed++))
      expect(result).toBe(7)
      expect(disarmed).toBe(1)
    })
  )

  it.effect("race: a watcher's result wins and the effect's fiber is interrupted", () =>
    Effect.gen(function* () {
      let interrupted = false
      const slow = Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))))
      const result = yield* OneShot.race<string, never>(slow, (cell) => {
        const timer = setTimeout(() => OneShot.succeed(cell, "watcher"), 5)
        return Effect.sync(() => clearTimeout(timer))
      })
      expect(result).toBe("watcher")
      expect(interrupted).toBe(true)
    })
  )

  it.effect("race: interrupting the caller interrupts the effect's fiber", () =>
    Effect.gen(function* () {
      let interrupted = false
      const caller = yield* Effect.fork(
        OneShot.race(
          Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true)))),
          () => Effect.void
        )
      )
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(caller)
      expect(interrupted).toBe(true)
    })
  )

  it.effect("race: the effect starts at once, ahead of fibers already queued", () =>
    Effect.gen(function* () {
      const order: Array<string> = []
      // Forked first: queued on the scheduler, not yet run.
      yield* Effect.fork(Effect.sync(() => order.push("queued fiber")))
      yield* OneShot.race(
        Effect.sync(() => order.push("race body")),
        () => Effect.void
      )
      yield* Effect.yieldNow()
      expect(order).toEqual(["race body", "queued fiber"])
    })
  )
})
