import { describe, expect, it } from "@effect/vitest"
import type { ProviderEvent, TurnItemContent } from "@skein/domain"
import { ProviderFailure } from "@skein/domain"
import { Effect, Exit, Fiber } from "effect"
import * as TurnEvents from "../src/process/TurnEvents.js"

const item = (text: string): ProviderEvent => ({
  _tag: "Item",
  item: { type: "assistant_message", text }
})
const approval: ProviderEvent = {
  _tag: "Item",
  item: { type: "approval_request", approvalId: "ap_1", question: "may I?", status: "open" } as TurnItemContent
}
const started: ProviderEvent = { _tag: "TurnStarted", turnRef: "t1" }
const completed: ProviderEvent = { _tag: "TurnCompleted", turnRef: "t1" }
const crash = new ProviderFailure({ provider: "p", kind: "crash", detail: "gone" })

/** The batches `deliver` hands over, each as the events' tags (items by their text or type), with when each came. */
const watch = (queue: TurnEvents.TurnQueue) => {
  const batches: Array<{ readonly at: number; readonly events: Array<string> }> = []
  const t0 = performance.now()
  const fiber = Effect.runFork(
    queue.deliver((events) =>
      Effect.sync(() => {
        batches.push({
          at: performance.now() - t0,
          events: events.map((e) =>
            e._tag === "Item" ? ("text" in e.item ? String(e.item.text) : e.item.type) : e._tag
          )
        })
      })
    )
  )
  return { batches, fiber }
}
const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("turn events", () => {
  it("holds plain items until what follows them, and hands over at once what the runtime acts on", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(60_000))
    const { batches, fiber } = watch(queue)
    queue.offer(started)
    await tick(20)
    expect(batches.map((b) => b.events)).toEqual([["TurnStarted"]])
    queue.offer(item("a"))
    queue.offer(item("b"))
    await tick(50)
    // Held: the driver was not woken for them.
    expect(batches).toHaveLength(1)
    // An approval goes at once, after what is held, in the same batch.
    queue.offer(approval)
    await tick(20)
    expect(batches.map((b) => b.events)).toEqual([["TurnStarted"], ["a", "b", "approval_request"]])
    queue.offer(item("c"))
    queue.offer(completed)
    queue.end(Exit.void)
    expect(Exit.isSuccess(await Effect.runPromise(Fiber.await(fiber)))).toBe(true)
    expect(batches.map((b) => b.events).at(-1)).toEqual(["c", "TurnCompleted"])
  })

  it("hands over what it holds once the delay has passed since the oldest item", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(80))
    const { batches, fiber } = watch(queue)
    queue.offer(item("a"))
    await tick(30)
    queue.offer(item("b"))
    await tick(30)
    expect(batches).toHaveLength(0)
    await tick(120)
    expect(batches.map((b) => b.events)).toEqual([["a", "b"]])
    expect(batches[0]!.at).toBeGreaterThanOrEqual(75)
    // The next item starts a new wait.
    queue.offer(item("c"))
    await tick(20)
    expect(batches).toHaveLength(1)
    await tick(120)
    expect(batches.map((b) => b.events)).toEqual([["a", "b"], ["c"]])
    queue.offer(completed)
    queue.end(Exit.void)
    await Effect.runPromise(Fiber.await(fiber))
  })

  it("with no delay, hands every event over as it comes", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(0))
    const { batches, fiber } = watch(queue)
    queue.offer(item("a"))
    await tick(10)
    queue.offer(item("b"))
    await tick(10)
    expect(batches.map((b) => b.events)).toEqual([["a"], ["b"]])
    queue.offer(completed)
    queue.end(Exit.void)
    await Effect.runPromise(Fiber.await(fiber))
  })

  it("hands over what it holds before the turn's failure, and takes nothing after its end", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(60_000))
    const { batches, fiber } = watch(queue)
    queue.offer(started)
    queue.offer(item("a"))
    queue.end(Exit.fail(crash))
    queue.offer(item("late"))
    const exit = await Effect.runPromise(Fiber.await(fiber))
    expect(exit).toStrictEqual(Exit.fail(crash))
    expect(batches.flatMap((b) => b.events)).toEqual(["TurnStarted", "a"])
  })

  it("stopped before the turn's end, still hands over the turn's start and the items it holds", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(60_000))
    const seen: Array<ReadonlyArray<ProviderEvent>> = []
    const fiber = Effect.runFork(queue.deliver((events) => Effect.sync(() => void seen.push(events))))
    await tick(10)
    queue.offer(item("a"))
    queue.offer(item("b"))
    await tick(10)
    expect(seen).toEqual([])
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(seen).toEqual([[item("a"), item("b")]])
  })

  it("leaves a terminal event out of what it hands over when stopped", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(60_000))
    const seen: Array<ReadonlyArray<ProviderEvent>> = []
    // A sink that takes its time, so that the rest waits in the queue when the stop comes.
    const fiber = Effect.runFork(
      queue.deliver((events) =>
        Effect.zipRight(
          Effect.sleep("50 millis"),
          Effect.sync(() => void seen.push(events))
        )
      )
    )
    queue.offer(started)
    await tick(10)
    queue.offer(item("a"))
    queue.offer(completed)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(seen.flat().map((e) => e._tag)).toEqual(["Item"])
  })
  it("reads a report held unread when it hands it over, in its place among the items, and never twice", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(60_000))
    const { batches, fiber } = watch(queue)
    let reads = 0
    queue.offer(item("a"))
    queue.offerLater(() => {
      reads += 1
      return [item("b"), item("c")]
    })
    // A report that comes to nothing adds nothing to the batch.
    queue.offerLater(() => [])
    queue.offer(item("d"))
    await tick(20)
    expect(reads).toBe(0)
    expect(batches).toHaveLength(0)
    queue.offer(completed)
    queue.end(Exit.void)
    await Effect.runPromise(Fiber.await(fiber))
    expect(reads).toBe(1)
    expect(batches.map((b) => b.events)).toEqual([["a", "b", "c", "d", "TurnCompleted"]])
  })

  it("reads a report at once with no delay; one that throws leaves an error item, and the queue goes on", async () => {
    const queue = await Effect.runPromise(TurnEvents.make(0))
    const { batches, fiber } = watch(queue)
    queue.offerLater(() => [item("a")])
    await tick(10)
    expect(batches.map((b) => b.events)).toEqual([["a"]])
    queue.offerLater(() => [])
    await tick(10)
    expect(batches).toHaveLength(1)
    queue.offerLater(() => {
      throw new Error("bad report")
    })
    queue.offer(completed)
    queue.end(Exit.void)
    await Effect.runPromise(Fiber.await(fiber))
    expect(batches.slice(1).flatMap((b) => b.events)).toEqual(["error", "TurnCompleted"])
  })

  it("reads what it holds when the delay passes, and when stopped", async () => {
    const timed = await Effect.runPromise(TurnEvents.make(40))
    const { batches, fiber } = watch(timed)
    timed.offerLater(() => [item("a")])
    await tick(120)
    expect(batches.map((b) => b.events)).toEqual([["a"]])
    timed.offer(completed)
    timed.end(Exit.void)
    await Effect.runPromise(Fiber.await(fiber))

    const stopped = await Effect.runPromise(TurnEvents.make(60_000))
    const seen: Array<ReadonlyArray<ProviderEvent>> = []
    const reader = Effect.runFork(stopped.deliver((events) => Effect.sync(() => void seen.push(events))))
    await tick(10)
    stopped.offerLater(() => [item("b")])
    await Effect.runPromise(Fiber.interrupt(reader))
    expect(seen).toEqual([[item("b")]])
  })
})
