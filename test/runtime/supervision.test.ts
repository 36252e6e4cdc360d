/**
 * The thread actor under its own faults: a defect while it handles a message fails
 * that message's caller with a typed error (ActorFailed), is logged with its cause,
 * and the actor reloads from storage with nothing acknowledged lost; the thread then
 * takes its next run.
 */
import type { ProviderAdapter, ProviderEvent, ProviderName } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, Stream } from "effect"
import { Orchestrator } from "@skein/runtime"
import { makeFaultAdapter, makeFaultPlan } from "../support/FaultAdapter.js"
import { captureLogs, removeDir, runtimeLayer, tempDir, wrapTurns } from "../support/runtime.js"

const alpha = "alpha" as ProviderName

/** alpha, except that while `broken.now` reading its capabilities throws (an adapter bug). */
const brittle =
  (broken: { now: boolean }) =>
  (adapter: ProviderAdapter): ProviderAdapter => {
    if (adapter.name !== alpha) return adapter
    const wrapped = { ...adapter }
    Object.defineProperty(wrapped, "capabilities", {
      get: () => {
        if (broken.now) throw new Error("capabilities are unreadable")
        return adapter.capabilities
      }
    })
    return wrapped
  }

/** alpha, its events rewritten by `rewrite` on turns whose message holds `marker` (an adapter bug). */
const faultyTurns = (marker: string, rewrite: (events: ReadonlyArray<ProviderEvent>) => ReadonlyArray<ProviderEvent>) =>
  wrapTurns(
    alpha,
    (runTurn) => (input, onEvents) =>
      input.message.includes(marker) ? runTurn(input, (events) => onEvents(rewrite(events))) : runTurn(input, onEvents)
  )

/** A malformed item (not a TurnItem at all) after the turn's start. */
const malformed = faultyTurns("[[malformed]]", (events) =>
  events.flatMap((event) =>
    event._tag === "TurnStarted"
      ? [event, { _tag: "Item", item: { type: "plan", steps: "not a list" } } as unknown as ProviderEvent]
      : [event]
  )
)

/** The turn's end with a turn ref that is not a string. */
const badTurnRef = faultyTurns("[[badref]]", (events) =>
  events.map((event) =>
    event._tag === "TurnCompleted" ? ({ ...event, turnRef: 42 } as unknown as ProviderEvent) : event
  )
)

const inRuntime = async <A>(
  options: Parameters<typeof runtimeLayer>[1],
  program: (o: Orchestrator["Type"]) => Effect.Effect<A, unknown>
) => {
  const dir = tempDir("skein-supervision-")
  const logs = captureLogs()
  try {
    const result = await Effect.runPromise(
      Effect.flatMap(Orchestrator, program).pipe(
        Effect.provide(Layer.merge(runtimeLayer(dir, options), logs.layer))
      ) as Effect.Effect<A>
    )
    return { result, logs: logs.lines }
  } finally {
    removeDir(dir)
  }
}

describe("thread actor supervision", () => {
  it("a defect in a command's handler answers ActorFailed, is logged, and the thread carries on from storage", async () => {
    const broken = { now: false }
    const { logs } = await inRuntime({ mapAdapter: brittle(broken) }, (o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const first = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        broken.now = true
        const failed = yield* Effect.either(o.startRun({ threadId: thread.id, provider: alpha, message: "two" }))
        broken.now = false
        expect(Either.isLeft(failed) && failed.left).toMatchObject({ _tag: "ActorFailed", command: "StartRun" })
        expect(Either.isLeft(failed) && failed.left.message).toContain("capabilities are unreadable")
        // Nothing acknowledged is lost, nothing half-done appears.
        const view = yield* o.getThread(thread.id)
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([[first.id, "completed"]])
        const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "three", wait: true })
        expect([next.ordinal, next.status]).toEqual([2, "completed"])
      })
    )
    const logged = logs.find((l) => l.includes("StartRun died"))
    expect(logged).toContain("ERROR")
    expect(logged).toContain("capabilities are unreadable")
  })

  it("a defect while recording a run's events ends that run, not the thread", async () => {
    const { logs } = await inRuntime({ mapAdapter: malformed }, (o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const first = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        const bad = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "two [[malformed]]",
          wait: true
        })
        expect(bad.status).toBe("failed")
        expect(bad.failure?.reason).toBe("runtime_error")
        expect(bad.failure?.message).toMatch(/failed while handling (RecordItems|FinishRun)/)
        const view = yield* o.getThread(thread.id)
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([
          [first.id, "completed"],
          [bad.id, "failed"]
        ])
        // No malformed item was ever stored.
        expect(view.runs[1]!.items.some((i) => i.type === "plan")).toBe(false)
        const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "three", wait: true })
        expect([next.ordinal, next.status]).toEqual([3, "completed"])
      })
    )
    expect(logs.some((l) => l.includes("ERROR") && /(RecordItems|FinishRun) died/.test(l))).toBe(true)
  })
})

describe("what a provider reports is checked before it is stored", () => {
  it("a turn ref that is not a string is left out of the run's end, and the thread still reads back", async () => {
    await inRuntime({ mapAdapter: badTurnRef }, (o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const bad = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one [[badref]]", wait: true })
        expect(bad.status).toBe("completed")
        // Read back from the log: every event the run's end wrote decodes.
        const logged = yield* Stream.runCollect(
          o.events(thread.id, 0).pipe(Stream.takeUntil((e) => e.event._tag === "RunEnded" && e.event.run.id === bad.id))
        )
        expect(Chunk.toReadonlyArray(logged).at(-1)?.event._tag).toBe("RunEnded")
        const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "two", wait: true })
        expect([next.ordinal, next.status]).toEqual([2, "completed"])
      })
    )
  })
})

describe("nothing slow runs inside the thread's handlers", () => {
  it("while a provider writes a handoff summary, the thread answers reads and an interrupt at once", async () => {
    const plan = makeFaultPlan()
    const { result } = await inRuntime(
      {
        extraAdapters: [makeFaultAdapter("faulty", plan)],
        summarySource: { _tag: "entering" },
        deadlines: { summaryMs: 20_000 }
      },
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "first", wait: true })
          // faulty enters and is asked to write the summary: it never answers.
          plan.arm("summarise", "hang")
          const started = yield* o.startRun({
            threadId: thread.id,
            provider: "faulty" as ProviderName,
            message: "second"
          })
          expect(started.status).toBe("running")
          // Until the provider is actually writing.
          for (let i = 0; i < 500 && plan.fired.length === 0; i++) yield* Effect.sleep("10 millis")
          expect(plan.fired).toEqual(["summarise/hang"])
          const t0 = Date.now()
          const view = yield* o.getThread(thread.id)
          expect(view.handoffs.at(-1)?.status).toBe("pending")
          const readMs = Date.now() - t0
          const interrupted = yield* o.interruptRun({ threadId: thread.id })
          const interruptMs = Date.now() - t0
          return { readMs, interruptMs, interrupted, handoffs: (yield* o.getThread(thread.id)).handoffs }
        })
    )
    expect(plan.fired).toEqual(["summarise/hang"])
    expect(result.readMs).toBeLessThan(1_000)
    expect(result.interruptMs).toBeLessThan(2_000)
    expect(result.interrupted.status).toBe("interrupted")
    // The summary never came: its handoff reached no provider.
    expect(result.handoffs.at(-1)?.status).toBe("failed")
  })
})
