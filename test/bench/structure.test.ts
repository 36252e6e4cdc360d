/**
 * The bench's structure counts (structure.ts): the fibers a piece of work starts and the
 * tasks it hands Effect's scheduler, per call, with the scheduler as it was afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import * as E from "effect"
import { Effect, Scheduler } from "effect"
import { structureOf } from "./structure.js"

/** A root fiber that forks two children and waits for them: three fibers a call. */
const threeFibers = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const children = [yield* Effect.fork(Effect.yieldNow()), yield* Effect.fork(Effect.void)]
      for (const child of children) yield* child.await
    })
  )

describe("a piece of work's structure", () => {
  it("counts the fibers started per call, and the scheduler's tasks", async () => {
    const counted = await structureOf(E, 20, threeFibers)
    expect(counted.fibers).toBe(3)
    // Each fork starts through the scheduler, and the yield is one more hop.
    expect(counted.tasks).toBeGreaterThanOrEqual(3)
  })

  it("counts none when the work starts no fiber, and puts the scheduler back", async () => {
    const before = Scheduler.defaultScheduler.scheduleTask
    const counted = await structureOf(E, 20, async () => undefined)
    expect(counted).toEqual({ fibers: 0, tasks: 0 })
    expect(Scheduler.defaultScheduler.scheduleTask).toBe(before)
  })
})
