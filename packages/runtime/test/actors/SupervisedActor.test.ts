import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Either, Exit, Fiber, FiberRef, Schema, Scope } from "effect"
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
    behaviour: () => ({
      handlers: {
        Double: ({ n }) => (n > 100 ? Effect.fail(new TooBig({ n })) : Effect.succeed(n * 2)),
        Explode: ({ why }) => Effect.die(new Error(why)),
        Wait: ({ n }) => (options.gate ? Effect.as(Deferred.await(options.gate), n) : Effect.succeed(n))
      },
      restart: options.restart ?? (() => Effect.void)
    }),
    stopped: () => new Stopped(),
    failed: (tag, cause) => new Failed({ tag, detail: String(Cause.squash(cause)) })
  })

describe("SupervisedActor", () => {
  it.live("serialises messages: one handler at a time, in arrival order, replies typed by message", () =>
    Effect.gen(function* () {
      const seen: Array<number> = []
      let made = 0
      let running = 0
      let maxRunning = 0
      const actor = yield* SupervisedActor.make<typeof Double, Stopped | Failed>({
        name: "order",
        behaviour: () => {
          made++
          return {
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
            restart: () => Effect.void
          }
        },
        stopped: () => new Stopped(),
        failed: (tag) => new Failed({ tag, detail: "" })
      })
      const replies = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => actor.ask("Double", { n }), {
        concurrency: "unbounded"
      })
      expect(replies).toEqual([2, 4, 6, 8, 10])
      expect(seen).toEqual([1, 2, 3, 4, 5])
      expect(maxRunning).toBe(1)
      // The behaviour is made once, with the actor, and serves every message after.
      for (let i = 0; i < 5; i++) yield* actor.ask("Double", { n: i })
      yield* Effect.sleep("5 millis")
      expect(yield* actor.ask("Double", { n: 7 })).toBe(14)
      expect(made).toBe(1)
    }).pipe(Effect.scoped)
  )

  it.live("an idle actor holds no fiber: its worker ends when no message waits, the next message starts one", () =>
    Effect.gen(function* () {
      const before = (yield* Fiber.roots).length
      const actors = yield* Effect.forEach(Array.from({ length: 50 }), () => makeActor({}))
      for (const actor of actors) expect(yield* actor.ask("Double", { n: 2 })).toBe(4)
      yield* Effect.sleep("10 millis")
      // At most as many as before (a root of an earlier test may have ended meanwhile).
      expect((yield* Fiber.roots).length).toBeLessThanOrEqual(before)
      expect(yield* actors[0]!.ask("Double", { n: 3 })).toBe(6)
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
      // Until the worker has taken it (the mailbox wakes its taker on a later turn).
      yield* Effect.repeatN(Effect.yieldNow(), 2)
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

  it.live("a caller interrupted while it waits leaves the actor serving: its message runs, the next is answered", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const actor = yield* makeActor({ gate })
      const blocked = yield* Effect.fork(actor.ask("Wait", { n: 1 }))
      yield* Effect.sleep("2 millis")
      const impatient = yield* Effect.fork(actor.ask("Double", { n: 2 }))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(impatient)
      expect(Exit.isInterrupted(yield* Fiber.await(impatient))).toBe(true)
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(blocked)).toBe(1)
      expect(yield* actor.ask("Double", { n: 3 })).toBe(6)
      expect(yield* actor.pending).toBe(0)
    }).pipe(Effect.scoped)
  )

  it.live("closing its scope interrupts the handler mid-message: its caller hears `stopped`, onStopped runs once", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      let stoppedCalls = 0
      let handlerEnded = false
      const scope = yield* Scope.make()
      const actor = yield* SupervisedActor.make<typeof Wait, Stopped | Failed>({
        name: "closing",
        behaviour: () => ({
          handlers: {
            Wait: ({ n }) =>
              Effect.as(
                Effect.ensuring(
                  Deferred.await(gate),
                  Effect.sync(() => void (handlerEnded = true))
                ),
                n
              )
          },
          restart: () => Effect.void
        }),
        onStopped: Effect.sync(() => void stoppedCalls++),
        stopped: () => new Stopped(),
        failed: (tag) => new Failed({ tag, detail: "" })
      }).pipe(Scope.extend(scope))
      const held = yield* Effect.fork(actor.ask("Wait", { n: 1 }))
      yield* Effect.sleep("2 millis")
      const queued = yield* Effect.fork(actor.ask("Wait", { n: 2 }))
      yield* Effect.yieldNow()
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.await(held)).toEqual(Exit.fail(new Stopped()))
      expect(yield* Fiber.await(queued)).toEqual(Exit.fail(new Stopped()))
      expect(handlerEnded).toBe(true)
      yield* actor.done
      yield* actor.stop
      expect(stoppedCalls).toBe(1)
      expect(yield* Effect.exit(actor.ask("Wait", { n: 3 }))).toEqual(Exit.fail(new Stopped()))
    })
  )

  it.effect("a failed restart calls onStopped once, and the actor answers nobody after", () =>
    Effect.gen(function* () {
      let stoppedCalls = 0
      const actor = yield* SupervisedActor.make<Protocol, Stopped | Failed>({
        name: "stops",
        behaviour: () => ({
          handlers: {
            Double: ({ n }) => Effect.succeed(n * 2),
            Explode: ({ why }) => Effect.die(new Error(why)),
            Wait: ({ n }) => Effect.succeed(n)
          },
          restart: () => Effect.fail("storage is gone")
        }),
        onStopped: Effect.sync(() => void stoppedCalls++),
        stopped: () => new Stopped(),
        failed: (tag, cause) => new Failed({ tag, detail: String(Cause.squash(cause)) })
      })
      expect(yield* Effect.flip(actor.ask("Explode", { why: "again" }))).toEqual(
        new Failed({ tag: "Explode", detail: "Error: again" })
      )
      yield* actor.done
      expect(stoppedCalls).toBe(1)
      expect(yield* Effect.exit(actor.ask("Double", { n: 1 }))).toEqual(Exit.fail(new Stopped()))
    }).pipe(Effect.scoped)
  )

  it.live("a defect after a message (afterEach) is logged; its caller has its reply, later ones are served", () =>
    Effect.gen(function* () {
      let breakAfter = false
      const actor = yield* SupervisedActor.make<typeof Double, Stopped | Failed>({
        name: "fragile",
        behaviour: () => ({
          handlers: { Double: ({ n }) => Effect.succeed(n * 2) },
          restart: () => Effect.void,
          afterEach: Effect.sync(() => {
            if (breakAfter) {
              breakAfter = false
              throw new Error("trim failed")
            }
          })
        }),
        stopped: () => new Stopped(),
        failed: (tag, cause) => new Failed({ tag, detail: String(Cause.squash(cause)) })
      })
      breakAfter = true
      const replies = yield* Effect.forEach([3, 4, 5], (n) => Effect.either(actor.ask("Double", { n })), {
        concurrency: "unbounded"
      })
      expect(replies).toEqual([Either.right(6), Either.right(8), Either.right(10)])
      expect(yield* actor.ask("Double", { n: 6 })).toBe(12)
    }).pipe(Effect.scoped)
  )

  it.live("the one worker's FiberRef stacks do not grow as handlers' forks ask again, run after run", () =>
    Effect.gen(function* () {
      const mark = FiberRef.unsafeMake("made")
      /** The deepest FiberRef stack this fiber has (Effect keeps one per FiberRef, for joins). */
      const deepest = Effect.map(Effect.getFiberRefs, (refs) => {
        const locals = (refs as unknown as { readonly locals: Map<unknown, ReadonlyArray<unknown>> }).locals
        return Math.max(...[...locals.values()].map((stack) => stack.length))
      })
      const Read = Rpc.make("Read", { success: Schema.String })
      const Relay = Rpc.make("Relay", { payload: { left: Schema.Number } })
      const depths: Array<number> = []
      const done = yield* Deferred.make<void>()
      const actor = yield* SupervisedActor.make<typeof Read | typeof Relay, Stopped | Failed>({
        name: "refs",
        behaviour: (actor) => ({
          handlers: {
            Read: () => FiberRef.get(mark),
            // As a run's driver does: a fiber the handler starts (changing a FiberRef on
            // the way) asks the actor again later, waking the next worker.
            Relay: ({ left }) =>
              Effect.gen(function* () {
                depths.push(yield* deepest)
                if (left === 0) return yield* Deferred.succeed(done, undefined)
                // Later, once this worker has left (the next message wakes a new one).
                yield* Effect.forkDaemon(
                  Effect.locally(
                    Effect.zipRight(Effect.sleep("2 millis"), Effect.ignore(actor.ask("Relay", { left: left - 1 }))),
                    mark,
                    `relay ${left}`
                  )
                )
              })
          },
          restart: () => Effect.void
        }),
        stopped: () => new Stopped(),
        failed: (tag) => new Failed({ tag, detail: "" })
      })
      // The worker keeps the values it was started with, whoever asks.
      expect(yield* Effect.locally(actor.ask("Read", undefined), mark, "caller")).toBe("made")
      yield* actor.ask("Relay", { left: 30 })
      yield* Deferred.await(done)
      expect(depths).toHaveLength(31)
      // A worker started per message, inheriting its sender's stacks, would see them grow.
      expect(new Set(depths)).toEqual(new Set([depths[0]]))
    }).pipe(Effect.scoped)
  )
})
