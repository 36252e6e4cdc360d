/**
 * `forkNowIn`: the fiber starts on the forking stack, belongs to the scope (interrupted
 * when it closes, if still running), and an ended fiber costs the scope's closing
 * nothing more.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scheduler, Scope } from "effect"
import { forkNowIn } from "../../src/resources/ForkNow.js"

/** How many tasks `effect` hands Effect's default scheduler while it runs. */
const tasksDuring = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<number, E> =>
  Effect.suspend(() => {
    const scheduler = Scheduler.defaultScheduler
    const schedule = scheduler.scheduleTask
    let tasks = 0
    scheduler.scheduleTask = function (this: typeof scheduler, ...args: Parameters<typeof schedule>) {
      tasks++
      return schedule.apply(this, args)
    }
    return effect.pipe(
      Effect.ensuring(Effect.sync(() => void (scheduler.scheduleTask = schedule))),
      Effect.map(() => tasks)
    )
  })

describe("forkNowIn", () => {
  it.effect("runs the fiber on the forking stack until it first waits", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const steps: Array<string> = []
      yield* forkNowIn(
        Effect.sync(() => void steps.push("forked")),
        scope
      )
      steps.push("after the fork")
      expect(steps).toEqual(["forked", "after the fork"])
      yield* Scope.close(scope, Exit.void)
    })
  )

  it.effect("interrupts the fiber when the scope closes while it runs", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const fiber = yield* forkNowIn(Effect.never, scope)
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
    })
  )

  it.effect("leaves a fiber that has ended alone when the scope closes: no task for the scheduler", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const done = yield* Deferred.make<void>()
      const fiber = yield* forkNowIn(Deferred.succeed(done, undefined), scope)
      yield* Deferred.await(done)
      expect(Exit.isSuccess(yield* Fiber.await(fiber))).toBe(true)
      expect(yield* tasksDuring(Scope.close(scope, Exit.void))).toBe(0)
    })
  )
})
