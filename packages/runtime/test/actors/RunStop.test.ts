/** RunStop: the watcher acts on a stop as the run's phase says, and ends quietly once told the run's end is known. */
import type { RunFailure } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref } from "effect"
import { emptyReport } from "../../src/actors/run/RunEnd.js"
import { RunPhase, type TurnEnd } from "../../src/actors/run/RunPhase.js"
import * as RunStop from "../../src/actors/run/RunStop.js"

const interrupt: RunFailure = { reason: "user_interrupt", message: "The user interrupted the run" }

const watched = Effect.gen(function* () {
  const input = {
    stop: yield* Deferred.make<RunFailure | null>(),
    phase: yield* Ref.make<RunPhase>(RunPhase.Preparing()),
    report: yield* Ref.make(emptyReport),
    ended: yield* Deferred.make<TurnEnd>(),
    graceMs: 10
  }
  return { input, watcher: yield* Effect.fork(RunStop.watch(input)) }
})

describe("RunStop.watch", () => {
  it.effect("a stop before the turn is sent ends the run at once, interrupted", () =>
    Effect.gen(function* () {
      const { input, watcher } = yield* watched
      yield* Deferred.succeed(input.stop, interrupt)
      expect(yield* Fiber.await(watcher)).toEqual(Exit.void)
      expect((yield* Deferred.await(input.ended)).by).toBe("stop")
      expect((yield* Ref.get(input.phase))._tag).toBe("Ended")
    })
  )

  it.effect("told null (the run's end is known), it ends on its own and leaves the run as it is", () =>
    Effect.gen(function* () {
      const { input, watcher } = yield* watched
      yield* Deferred.succeed(input.stop, null)
      expect(yield* Fiber.await(watcher)).toEqual(Exit.void)
      expect(yield* Deferred.isDone(input.ended)).toBe(false)
      expect((yield* Ref.get(input.phase))._tag).toBe("Preparing")
    })
  )
})
