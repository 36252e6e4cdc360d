import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Either, Exit, Fiber, FiberId, FiberRef, Schema } from "effect"
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
      // One worker served the burst; one serves a caller that asks again as soon as it
      // has its reply; an idle actor holds none: a message later makes its handlers again.
      expect(made).toBe(1)
      const before = made
      for (let i = 0; i < 5; i++) yield* actor.ask("Double", { n: i })
      expect(made - before).toBeLessThanOrEqual(1)
      const after = made
      yield* Effect.sleep("5 millis")
      expect(yield* actor.ask("Double", { n: 7 })).toBe(14)
      expect(made).toBe(after + 1)
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

  it.live(
    "while keepBehaviour holds, one behaviour serves message after message; once it no longer holds, it goes",
    () =>
      Effect.gen(function* () {
        let keep = true
        let made = 0
        const actor = yield* SupervisedActor.make<typeof Double, Stopped | Failed>({
          name: "kept",
          behaviour: () => {
            made++
            return { handlers: { Double: ({ n }) => Effect.succeed(n * 2) }, restart: () => Effect.void }
          },
          keepBehaviour: () => keep,
          stopped: () => new Stopped(),
          failed: (tag) => new Failed({ tag, detail: "" })
        })
        // Messages well apart (each worker gone before the next), and in place.
        for (let n = 1; n <= 4; n++) {
          yield* Effect.sleep("5 millis")
          expect(yield* n % 2 === 0 ? actor.ask("Double", { n }) : actor.askInPlace("Double", { n })).toBe(n * 2)
        }
        expect(made).toBe(1)
        // Once it no longer holds, the behaviour goes as soon as nobody serves (here, with
        // the last worker): each message makes it again.
        keep = false
        yield* Effect.sleep("5 millis")
        expect(yield* actor.askInPlace("Double", { n: 5 })).toBe(10)
        expect(yield* actor.askInPlace("Double", { n: 6 })).toBe(12)
        yield* Effect.sleep("5 millis")
        expect(yield* actor.ask("Double", { n: 7 })).toBe(14)
        expect(made).toBe(4)
      }).pipe(Effect.scoped)
  )

  it.live(
    "askInPlace: an idle actor's message is handled on the caller's fiber; a busy actor's waits its turn, in order",
    () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const seen: Array<string> = []
        const Where = Rpc.make("Where", { payload: { label: Schema.String }, success: Schema.String })
        const Hold = Rpc.make("Hold", { payload: { label: Schema.String } })
        const actor = yield* SupervisedActor.make<typeof Where | typeof Hold, Stopped | Failed>({
          name: "in place",
          behaviour: () => ({
            handlers: {
              Where: ({ label }) =>
                Effect.map(Effect.fiberId, (id) => {
                  seen.push(label)
                  return FiberId.threadName(id)
                }),
              Hold: ({ label }) =>
                Effect.zipRight(
                  Deferred.await(gate),
                  Effect.sync(() => void seen.push(label))
                )
            },
            restart: () => Effect.void
          }),
          stopped: () => new Stopped(),
          failed: (tag) => new Failed({ tag, detail: "" })
        })
        const here = FiberId.threadName(yield* Effect.fiberId)
        // Idle: on this fiber. Through the mailbox: on a worker.
        expect(yield* actor.askInPlace("Where", { label: "a" })).toBe(here)
        expect(yield* actor.ask("Where", { label: "b" })).not.toBe(here)
        // Held in place by one caller: the others' messages, in place or not, wait in the
        // mailbox and are served after it, in the order they came, by a worker.
        const holding = yield* Effect.fork(actor.askInPlace("Hold", { label: "held" }))
        yield* Effect.yieldNow()
        const later = yield* Effect.fork(actor.askInPlace("Where", { label: "c" }))
        const last = yield* Effect.fork(actor.ask("Where", { label: "d" }))
        yield* Effect.sleep("5 millis")
        expect(yield* actor.pending).toBe(2)
        expect(seen).toEqual(["a", "b"])
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(holding)
        const [c, d] = [yield* Fiber.join(later), yield* Fiber.join(last)]
        expect(seen).toEqual(["a", "b", "held", "c", "d"])
        expect(c).toBe(d)
        expect(c).not.toBe(FiberId.threadName(later.id()))
      }).pipe(Effect.scoped)
  )

  it.live(
    "askInPlace: its caller cannot cut the handler short, and stopping waits for it before failing the rest",
    () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const actor = yield* makeActor({ gate })
        let finished = false
        const caller = yield* Effect.fork(
          Effect.tap(actor.askInPlace("Wait", { n: 1 }), () => Effect.sync(() => void (finished = true)))
        )
        yield* Effect.sleep("2 millis")
        // The caller's interruption waits for the handler, which completes.
        const interrupting = yield* Effect.fork(Fiber.interrupt(caller))
        yield* Effect.sleep("2 millis")
        expect(interrupting.unsafePoll()).toBeNull()
        // Stopping meanwhile fails what waits in the mailbox, and returns once the handler is done.
        const queued = yield* Effect.fork(actor.ask("Double", { n: 2 }))
        yield* Effect.yieldNow()
        const stopping = yield* Effect.fork(actor.stop)
        yield* Effect.sleep("2 millis")
        expect(yield* Fiber.await(queued)).toEqual(Exit.fail(new Stopped()))
        expect(stopping.unsafePoll()).toBeNull()
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(stopping)
        yield* Fiber.join(interrupting)
        yield* actor.done
        // The handler ran to its end; the caller was interrupted only after it.
        expect(finished).toBe(false)
        expect(Exit.isInterrupted(yield* Fiber.await(caller))).toBe(true)
        expect(yield* Effect.exit(actor.askInPlace("Double", { n: 3 }))).toEqual(Exit.fail(new Stopped()))
      }).pipe(Effect.scoped)
  )

  it.effect("askInPlace: a defect fails its caller with `failed` and restarts; a failed restart stops the actor", () =>
    Effect.gen(function* () {
      let restarts = 0
      let failRestart = false
      const actor = yield* makeActor({
        restart: () => (failRestart ? Effect.fail("storage is gone") : Effect.sync(() => void restarts++))
      })
      expect(yield* Effect.flip(actor.askInPlace("Explode", { why: "boom" }))).toEqual(
        new Failed({ tag: "Explode", detail: "Error: boom" })
      )
      expect(restarts).toBe(1)
      expect(yield* actor.askInPlace("Double", { n: 3 })).toBe(6)
      // The caller hears the defect (it is not interrupted); the actor is stopped for good.
      failRestart = true
      expect(yield* Effect.flip(actor.askInPlace("Explode", { why: "again" }))).toEqual(
        new Failed({ tag: "Explode", detail: "Error: again" })
      )
      yield* actor.done
      expect(yield* Effect.exit(actor.ask("Double", { n: 1 }))).toEqual(Exit.fail(new Stopped()))
    }).pipe(Effect.scoped)
  )

  it.live(
    "a defect outside every handler (its behaviour, afterEach) fails the waiting callers and never wedges the actor",
    () =>
      Effect.gen(function* () {
        let breakBehaviour = true
        let breakAfter = false
        let served = 0
        const actor = yield* SupervisedActor.make<typeof Double, Stopped | Failed>({
          name: "fragile",
          behaviour: () => {
            if (breakBehaviour) {
              breakBehaviour = false
              throw new Error("no behaviour")
            }
            return {
              handlers: { Double: ({ n }) => Effect.sync(() => (served++, n * 2)) },
              restart: () => Effect.void
            }
          },
          afterEach: () => {
            if (breakAfter) {
              breakAfter = false
              throw new Error("trim failed")
            }
          },
          stopped: () => new Stopped(),
          failed: (tag, cause) => new Failed({ tag, detail: String(Cause.squash(cause)) })
        })
        // Its worker could not start: the caller hears why, and the next message is served.
        expect(yield* Effect.flip(actor.ask("Double", { n: 1 }))).toEqual(
          new Failed({ tag: "Double", detail: "Error: no behaviour" })
        )
        expect(yield* actor.ask("Double", { n: 2 })).toBe(4)
        // After a message: that message's caller has its reply, later ones are served.
        breakAfter = true
        const replies = yield* Effect.forEach([3, 4, 5], (n) => Effect.either(actor.ask("Double", { n })), {
          concurrency: "unbounded"
        })
        expect(replies[0]).toEqual(Either.right(6))
        expect(yield* actor.ask("Double", { n: 6 })).toBe(12)
        expect(served).toBeGreaterThanOrEqual(3)
        // The same in place, once the worker has gone (and its behaviour with it).
        yield* Effect.sleep("5 millis")
        breakBehaviour = true
        expect(yield* Effect.flip(actor.askInPlace("Double", { n: 7 }))).toEqual(
          new Failed({ tag: "Double", detail: "Error: no behaviour" })
        )
        expect(yield* actor.askInPlace("Double", { n: 8 })).toBe(16)
        breakAfter = true
        expect(yield* actor.askInPlace("Double", { n: 9 })).toBe(18)
        expect(yield* actor.askInPlace("Double", { n: 10 })).toBe(20)
      }).pipe(Effect.scoped)
  )

  it.live("a worker takes its caller's FiberRef values, not their history: nothing piles up from run to run", () =>
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
      // eslint-disable-next-line prefer-const
      let actor: SupervisedActor.SupervisedActor<typeof Read | typeof Relay, Stopped | Failed>
      actor = yield* SupervisedActor.make<typeof Read | typeof Relay, Stopped | Failed>({
        name: "refs",
        behaviour: () => ({
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
      // The caller's values reach the worker (its logger, its services, this mark).
      expect(yield* Effect.locally(actor.ask("Read", undefined), mark, "caller")).toBe("caller")
      yield* actor.ask("Relay", { left: 30 })
      yield* Deferred.await(done)
      expect(depths).toHaveLength(31)
      // Inherited whole, each generation's stacks would be longer than the last.
      expect(Math.max(...depths)).toBeLessThanOrEqual(2)
    }).pipe(Effect.scoped)
  )
})
