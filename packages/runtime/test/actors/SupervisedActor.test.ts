import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Schema } from "effect"
import * as SupervisedActor from "../../src/actors/SupervisedActor.js"

class Stopped extends Schema.TaggedError<Stopped>()("Stopped", {}) {}
class Failed extends Schema.TaggedError<Failed>()("Failed", { tag: Schema.String, detail: Schema.String }) {}
class TooBig extends Schema.TaggedError<TooBig>()("TooBig", { n: Schema.Number }) {}

const Double = Rpc.make("Double", { payload: { n: Schema.Number }, success: Schema.Number, error: TooBig })
const Explode = Rpc.make("Explode", { payload: { why: Schema.String } })
const Wait = Rpc.make("Wait", { payload: { n: Schema.Number }, success: Schema.Number })
type Protocol = typeof Double | typeof Explode | typeof Wait

const makeActor = (options: {
  readonly restart?: () => Effect.Effect<void, unknown>
  readonly gate?: Deferred.Deferred<void>
}) =>
  SupervisedActor.make<Protocol, Stopped | Failed>({
    name: "test actor",
    handlers: {
      Double: ({ n }) => (n > 100 ? Effect.fail(new TooBig({ n })) : Effect.succeed(n * 2)),
      Explode: ({ why }) => Effect.die(new Error(why)),
      Wait: ({ n }) => (options.gate ? Effect.as(Deferred.await(options.gate), n) : Effect.succeed(n))
    },
    stopped: () => new Stopped(),
    failed: (tag, cause) => new Failed({ tag, detail: String(Cause.squash(cause)) }),
    restart: options.restart ?? (() => Effect.void)
  })

describe("SupervisedActor", () => {
  it.effect("serialises messages: one handler at a time, in arrival order, replies typed by message", () =>
    Effect.gen(function* () {
      const seen: Array<number> = []
      let running = 0
      let maxRunning = 0
      const actor = yield* SupervisedActor.make<typeof Double, Stopped | Failed>({
        name: "order",
        handlers: {
          Double: ({ n }) =>
            Effect.gen(function* () {
              running++
              maxRunning = Math.max(maxRunning, running)
              yield* Effect.yieldNow()
              seen.push(n)
              running--
              return n * 2
            })
        },
        stopped: () => new Stopped(),
        failed: (tag) => new Failed({ tag, detail: "" }),
        restart: () => Effect.void
      })
      const replies = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => actor.ask("Double", { n }), {
        concurrency: "unbounded"
      })
      expect(replies).toEqual([2, 4, 6, 8, 10])
      expect(seen).toEqual([1, 2, 3, 4, 5])
      expect(maxRunning).toBe(1)
    }).pipe(Effect.scoped)
  )

  it.effect("a typed failure reaches its caller as it is", () =>
    Effect.gen(function* () {
      const actor = yield* makeActor({})
      expect(yield* Effect.flip(actor.ask("Double", { n: 500 }))).toEqual(new TooBig({ n: 500 }))
      expect(yield* actor.ask("Double", { n: 2 })).toBe(4)
    }).pipe(Effect.scoped)
  )

  it.effect("a defect fails only its own caller with `failed`, restarts, and the next message is served", () =>
    Effect.gen(function* () {
      let restarts = 0
      const actor = yield* makeActor({ restart: () => Effect.sync(() => void restarts++) })
      expect(yield* actor.ask("Double", { n: 1 })).toBe(2)
      const failed = yield* Effect.flip(actor.ask("Explode", { why: "boom" }))
      expect(failed).toEqual(new Failed({ tag: "Explode", detail: "Error: boom" }))
      expect(restarts).toBe(1)
      expect(yield* actor.ask("Double", { n: 3 })).toBe(6)
    }).pipe(Effect.scoped)
  )

  it.effect("a failed restart stops the actor: waiting and later callers get `stopped`, and `done` completes", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const actor = yield* makeActor({ restart: () => Effect.fail("storage is gone"), gate })
      const blocked = yield* Effect.fork(actor.ask("Wait", { n: 0 }))
      yield* Effect.yieldNow()
      const explode = yield* Effect.fork(actor.ask("Explode", { why: "boom" }))
      const queued = yield* Effect.fork(actor.ask("Double", { n: 1 }))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(blocked)).toBe(0)
      expect(yield* Effect.flip(Fiber.join(explode))).toMatchObject({ _tag: "Failed", tag: "Explode" })
      expect(yield* Fiber.await(queued)).toEqual(Exit.fail(new Stopped()))
      yield* actor.done
      expect(yield* Effect.exit(actor.ask("Double", { n: 1 }))).toEqual(Exit.fail(new Stopped()))
    }).pipe(Effect.scoped)
  )

  it.effect("stopping fails every pending reply with `stopped` instead of dropping it", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const actor = yield* makeActor({ gate })
      const blocked = yield* Effect.fork(actor.ask("Wait", { n: 0 }))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.forEach([1, 2, 3], (n) => Effect.fork(actor.ask("Double", { n })))
      yield* Effect.yieldNow()
      expect(yield* actor.pending).toBe(3)
      yield* actor.stop
      for (const fiber of waiting) expect(yield* Fiber.await(fiber)).toEqual(Exit.fail(new Stopped()))
      expect(yield* Fiber.await(blocked)).toEqual(Exit.fail(new Stopped()))
      expect(yield* Effect.exit(actor.ask("Double", { n: 4 }))).toEqual(Exit.fail(new Stopped()))
      yield* actor.done
    }).pipe(Effect.scoped)
  )
})
