/**
 * Exactly one writer per thread, however many requests race: bursts of run.start,
 * run.interrupt and thread.get on one thread, fresh and passivated, many times. What
 * the callers were told must be exactly what the thread holds, before and after a
 * restart: acknowledged runs = runs in thread.get = RunStarted events, with ordinals
 * 1..n, no gap, no repeat.
 */
import type { ProviderName, Run, SkeinError, ThreadId } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Stream } from "effect"
import type { Orchestrator } from "@skein/runtime"
import { removeDir, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
type O = Orchestrator["Type"]

interface Burst {
  readonly acknowledged: ReadonlyArray<Run["id"]>
  readonly refusals: ReadonlyArray<SkeinError["_tag"]>
}

/** 40 run.start, 10 run.interrupt and 10 thread.get at once, with fibers that yield often. */
const burst = (o: O, threadId: ThreadId, round: number): Effect.Effect<Burst> =>
  Effect.gen(function* () {
    const calls: Array<Effect.Effect<{ readonly started: Run["id"] | null }, SkeinError>> = [
      ...Array.from({ length: 40 }, (_, i) =>
        Effect.map(o.startRun({ threadId, provider: alpha, message: `r${round}.${i} [[sleep:40]]` }), (run) => ({
          started: run.id
        }))
      ),
      ...Array.from({ length: 10 }, () => Effect.map(o.interruptRun({ threadId }), () => ({ started: null }))),
      ...Array.from({ length: 10 }, () => Effect.map(o.getThread(threadId), () => ({ started: null })))
    ]
    // Shuffle deterministically, so interrupts and reads land among the starts.
    const order = calls.map((call, i) => [(i * 7919 + round * 31) % 97, call] as const).sort((a, b) => a[0] - b[0])
    const results = yield* Effect.forEach(order, ([, call]) => Effect.either(call), { concurrency: "unbounded" }).pipe(
      Effect.withMaxOpsBeforeYield(16)
    )
    const acknowledged: Array<Run["id"]> = []
    const refusals: Array<SkeinError["_tag"]> = []
    for (const result of results) {
      if (Either.isRight(result)) {
        if (result.right.started !== null) acknowledged.push(result.right.started)
      } else refusals.push(result.left._tag)
    }
    return { acknowledged, refusals }
  })

/** Until no run of the thread is active. */
const settle = (o: O, threadId: ThreadId) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      const view = yield* o.getThread(threadId)
      if (view.runs.every((r) => r.status !== "running" && r.status !== "queued")) return view
      yield* Effect.sleep("10 millis")
    }
    throw new Error("runs never settled")
  })

const runStartedIds = (o: O, threadId: ThreadId) =>
  o.events(threadId, 0).pipe(
    Stream.takeUntil(() => false),
    Stream.interruptAfter("300 millis"),
    Stream.runCollect,
    Effect.map((events) =>
      Chunk.toReadonlyArray(events).flatMap((e) => (e.event._tag === "RunStarted" ? [e.event.run] : []))
    )
  )

const checkThread = (o: O, threadId: ThreadId, acknowledged: ReadonlyArray<Run["id"]>) =>
  Effect.gen(function* () {
    const view = yield* settle(o, threadId)
    const started = yield* runStartedIds(o, threadId)
    expect(view.runs.map((r) => r.ordinal)).toEqual(view.runs.map((_, i) => i + 1))
    expect([...view.runs.map((r) => r.id)].sort()).toEqual([...acknowledged].sort())
    expect(started.map((r) => r.id)).toEqual(view.runs.map((r) => r.id))
    expect(started.map((r) => r.ordinal)).toEqual(view.runs.map((r) => r.ordinal))
  })

describe("one writer per thread", () => {
  it("bursts of run.start, run.interrupt and thread.get: acknowledged = thread.get = RunStarted, ordinals 1..n", async () => {
    const dir = tempDir("skein-race-")
    const acknowledgedBy = new Map<ThreadId, Array<Run["id"]>>()
    try {
      await withRuntime(
        dir,
        (o, actors) =>
          Effect.gen(function* () {
            for (let round = 0; round < 6; round++) {
              // A fresh thread: its actor is activated by the burst itself.
              const fresh = yield* o.createThread({ title: `fresh ${round}` })
              // A passivated thread: it has history, and its actor has gone idle.
              const idle = yield* o.createThread({ title: `idle ${round}` })
              const first = yield* o.startRun({ threadId: idle.id, provider: alpha, message: "before", wait: true })
              for (let i = 0; i < 200 && (yield* actors.activeThreads).includes(idle.id); i++) {
                yield* Effect.sleep("10 millis")
              }
              expect(yield* actors.activeThreads).not.toContain(idle.id)
              acknowledgedBy.set(fresh.id, [])
              acknowledgedBy.set(idle.id, [first.id])

              const bursts = yield* Effect.all([burst(o, fresh.id, round), burst(o, idle.id, round)], {
                concurrency: "unbounded"
              })
              for (const [threadId, result] of [
                [fresh.id, bursts[0]],
                [idle.id, bursts[1]]
              ] as const) {
                expect(result.acknowledged.length).toBeGreaterThanOrEqual(1)
                // Every refusal is a typed answer a caller can act on.
                for (const tag of result.refusals) expect(["RunAlreadyActive", "NoActiveRun"]).toContain(tag)
                acknowledgedBy.get(threadId)!.push(...result.acknowledged)
                yield* checkThread(o, threadId, acknowledgedBy.get(threadId)!)
              }
            }
          }),
        { passivateAfterMs: 50 }
      )
      // After a restart the same holds: nothing acknowledged vanished.
      await withRuntime(dir, (o) =>
        Effect.forEach([...acknowledgedBy], ([threadId, acknowledged]) => checkThread(o, threadId, acknowledged), {
          discard: true
        })
      )
    } finally {
      removeDir(dir)
    }
  }, 120_000)
})
