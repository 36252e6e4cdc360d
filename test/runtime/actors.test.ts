/**
 * The actor runtime end to end: real thread actors, real SQLite, real scripted
 * provider processes. (`npm test` builds the packages before vitest runs.)
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderName, ThreadId } from "@skein/domain"
import { Chunk, Deferred, Effect, Either, Exit, Fiber, FiberId, Schedule, Scope, Stream } from "effect"
import { inTempRuntime, isAlive, removeDir, tempDir, waitFor, withRuntime, wrapTurns } from "../support/runtime.js"
import { TurnEvents } from "@skein/adapters"
import { makeFaultAdapter, makeFaultPlan } from "../support/FaultAdapter.js"
import { writeFileSync } from "node:fs"
import { join } from "node:path"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

/** The batches live followers see of one run (one per commit): event tags, items by type. */
const batchesOf = (o: Parameters<Parameters<typeof inTempRuntime>[0]>[0], threadId: ThreadId, message: string) =>
  Effect.gen(function* () {
    const batches: Array<ReadonlyArray<string>> = []
    const items = (e: { readonly event: { readonly _tag: string } }) =>
      e.event._tag === "TurnItemRecorded"
        ? `item:${(e.event as unknown as { item: { type: string } }).item.type}`
        : e.event._tag
    yield* Effect.scoped(
      Effect.gen(function* () {
        yield* o.follow(threadId, (yield* o.getThread(threadId)).runs.length === 0 ? 1 : 1e9, (events) =>
          batches.push(events.map(items))
        )
        yield* o.startRun({ threadId, provider: alpha, message, wait: true })
      })
    )
    return batches
  })

describe("thread actors", () => {
  it("runs 100 threads x 5 runs in parallel; every thread's events are in order", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const threads = yield* Effect.forEach(
          Array.from({ length: 100 }),
          (_, i) => o.createThread({ title: `t${i}` }),
          {
            concurrency: 20
          }
        )
        yield* Effect.forEach(
          threads,
          (thread, i) =>
            Effect.forEach(
              [1, 2, 3, 4, 5],
              (n) =>
                o.startRun({
                  threadId: thread.id,
                  provider: (i + n) % 2 === 0 ? alpha : beta,
                  message: `run ${n}`,
                  wait: true
                }),
              { discard: true }
            ),
          { concurrency: "unbounded", discard: true }
        )
        for (const thread of threads) {
          const view = yield* o.getThread(thread.id)
          expect(view.runs.map((r) => [r.ordinal, r.status])).toEqual([1, 2, 3, 4, 5].map((n) => [n, "completed"]))
          for (const run of view.runs) {
            expect(run.items.find((i) => i.type === "assistant_message")).toBeDefined()
          }
          const events = yield* o.events(thread.id, 0).pipe(
            Stream.takeUntil((e) => e.event._tag === "CheckpointRecorded" && e.event.checkpoint.runOrdinal === 5),
            Stream.runCollect,
            Effect.map(Chunk.toReadonlyArray)
          )
          expect(events.map((e) => e.threadSequence)).toEqual(events.map((_, i) => i + 1))
          const globals = events.map((e) => e.sequence)
          expect([...globals].sort((a, b) => a - b)).toEqual(globals)
        }
      })
    )
  }, 120_000)

  it("interrupts a [[sleep:10000]] run in under 1 s; the thread accepts the next run", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const started = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "wait [[sleep:10000]]" })
        expect(started.status).toBe("running")
        yield* Effect.sleep("200 millis") // the turn may or may not have reached the provider yet
        const t0 = Date.now()
        const interrupted = yield* o.interruptRun({ threadId: thread.id })
        const elapsed = Date.now() - t0
        expect(interrupted.status).toBe("interrupted")
        expect(interrupted.failure?.reason).toBe("user_interrupt")
        expect(elapsed).toBeLessThan(1000)
        const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "again", wait: true })
        expect(next.status).toBe("completed")
        expect(next.ordinal).toBe(2)
      })
    )
  })

  it("fails a [[crash]] run with a provider-crash reason; the next run succeeds on a new session", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const first = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "remember KIWI", wait: true })
        expect(first.status).toBe("completed")
        const pidBefore = (yield* o.listProviders).find((p) => p.name === "alpha")!.sessions[0]!.pid
        const crashed = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "boom [[crash]]",
          wait: true
        })
        expect(crashed.status).toBe("failed")
        expect(crashed.failure?.reason).toBe("provider_crash")
        const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[recall:KIWI]]", wait: true })
        expect(next.status).toBe("completed")
        // Resumed natively in a new process: the earlier turn is still in its history.
        const reply = next.items.find((i) => i.type === "assistant_message")
        expect(reply && "text" in reply ? reply.text : "").toContain("recall:KIWI=yes")
        const pidAfter = (yield* o.listProviders).find((p) => p.name === "alpha")!.sessions[0]!.pid
        expect(pidAfter).not.toBe(pidBefore)
      })
    )
  })

  it("whenBusy: interrupt stops the run in the way and starts this one; refuse (the default) refuses", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "busy" })
        const slow = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "slow [[sleep:20000]]" })
        const refused = yield* Effect.either(
          o.startRun({ threadId: thread.id, provider: beta, message: "next", whenBusy: "refuse" })
        )
        expect(Either.isLeft(refused) && refused.left._tag).toBe("RunAlreadyActive")
        const started = Date.now()
        const next = yield* o.startRun({
          threadId: thread.id,
          provider: beta,
          message: "instead [[decide:PEAR]]",
          whenBusy: "interrupt",
          wait: true
        })
        expect(next.status).toBe("completed")
        expect(Date.now() - started).toBeLessThan(15_000)
        const view = yield* o.getThread(thread.id)
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([
          [slow.id, "interrupted"],
          [next.id, "completed"]
        ])
        // On an idle thread it is a plain start.
        const idle = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "calm",
          whenBusy: "interrupt",
          wait: true
        })
        expect(idle.status).toBe("completed")
      })
    )
  })

  it("whenBusy: queue answers at once with the run queued and starts each in order", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "queue" })
        const threadId = thread.id
        const slow = yield* o.startRun({ threadId, provider: alpha, message: "slow [[sleep:20000]]" })
        const first = { threadId, provider: alpha, message: "first in line", whenBusy: "queue" as const }
        const q1 = yield* o.startRun({ ...first, commandId: "cmd_q_1" as never })
        expect([q1.status, q1.ordinal, q1.items]).toEqual(["queued", 2, []])
        const q2 = yield* o.startRun({ threadId, provider: beta, message: "second in line", whenBusy: "queue" })
        expect([q2.status, q2.ordinal]).toEqual(["queued", 3])
        // A start that does not queue does not cut in, and the log holds only what ran.
        const cut = yield* Effect.either(o.startRun({ threadId, provider: beta, message: "cut in" }))
        expect(Either.isLeft(cut) && cut.left._tag).toBe("RunAlreadyActive")
        expect((yield* o.getThread(threadId)).runs.map((r) => r.id)).toEqual([slow.id])
        // The acknowledged command answers with its queued run.
        const again = yield* o.startRun({ ...first, commandId: "cmd_q_1" as never })
        expect([again.id, again.status]).toEqual([q1.id, "queued"])
        yield* o.interruptRun({ threadId })
        const ended = yield* o.startRun({ ...first, commandId: "cmd_q_1" as never, wait: true })
        expect([ended.id, ended.status]).toEqual([q1.id, "completed"])
        const last = yield* o.startRun({ threadId, provider: alpha, message: "last", whenBusy: "queue", wait: true })
        expect(last.status).toBe("completed")
        const view = yield* o.getThread(threadId)
        expect(view.runs.map((r) => [r.id, r.ordinal, r.status, r.provider])).toEqual([
          [slow.id, 1, "interrupted", alpha],
          [q1.id, 2, "completed", alpha],
          [q2.id, 3, "completed", beta],
          [last.id, 4, "completed", alpha]
        ])
        // On an idle thread it is a plain start.
        const idle = yield* o.startRun({ threadId, provider: beta, message: "calm", whenBusy: "queue" })
        expect(idle.status).toBe("running")
      })
    )
  })

  it("whenBusy: steer adds the message to the running turn where the provider can; else ifCannotSteer", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "steer" })
        const threadId = thread.id
        // On an idle thread it is a plain start.
        const first = yield* o.startRun({ threadId, provider: alpha, message: "hello", whenBusy: "steer", wait: true })
        expect(first.status).toBe("completed")
        const slow = yield* o.startRun({ threadId, provider: alpha, message: "slow [[sleep:1500]]" })
        const steer = {
          threadId,
          provider: alpha,
          message: "also, the fruit is KIWI",
          whenBusy: "steer" as const,
          commandId: "cmd_steer_1" as never
        }
        const joined = yield* o.startRun(steer)
        expect([joined.id, joined.status]).toEqual([slow.id, "running"])
        // Another provider's turn, or a clean context, cannot take it: the reason, typed.
        const elsewhere = yield* Effect.either(o.startRun({ ...steer, provider: beta, commandId: undefined }))
        expect(Either.isLeft(elsewhere) && elsewhere.left._tag).toBe("CannotSteer")
        expect(Either.isLeft(elsewhere) && elsewhere.left.message).toContain("alpha's, not beta's")
        const ended = yield* o.startRun({ ...steer, wait: true })
        expect([ended.id, ended.status]).toEqual([slow.id, "completed"])
        expect(ended.items.filter((i) => i.type === "user_message").map((i) => i.text)).toEqual([
          "also, the fruit is KIWI"
        ])
        expect(ended.items.find((i) => i.type === "assistant_message")?.text).toContain(
          "steered: also, the fruit is KIWI"
        )
        expect((yield* o.getThread(threadId)).runs).toHaveLength(2)
        // The steered words are the conversation's: natively, and in a handoff to another provider.
        const native = yield* o.startRun({ threadId, provider: alpha, message: "[[recall:KIWI]]", wait: true })
        expect(native.items.find((i) => i.type === "assistant_message")?.text).toContain("recall:KIWI=yes")
        const handedOff = yield* o.startRun({ threadId, provider: beta, message: "[[recall:KIWI]]", wait: true })
        expect(handedOff.items.find((i) => i.type === "assistant_message")?.text).toContain("recall:KIWI=yes")
        // A provider that cannot steer: refused with the reason, or the caller's second choice.
        const busyBeta = yield* o.startRun({ threadId, provider: beta, message: "slow [[sleep:1500]]" })
        const toBeta = { threadId, provider: beta, message: "and PLUM", whenBusy: "steer" as const }
        const refused = yield* Effect.either(o.startRun(toBeta))
        expect(Either.isLeft(refused) && refused.left.message).toContain("beta cannot steer a running turn")
        const queued = yield* o.startRun({ ...toBeta, ifCannotSteer: "queue" })
        expect(queued.status).toBe("queued")
        const instead = yield* o.startRun({ ...toBeta, message: "now [[decide:PLUM]]", ifCannotSteer: "interrupt" })
        expect(instead.status).not.toBe("queued")
        const view = yield* o.getThread(threadId)
        expect(view.runs.find((r) => r.id === busyBeta.id)?.status).toBe("interrupted")
      })
    )
  })

  it("thread.get lists the queued runs; run.interrupt naming one takes it out, and it ends interrupted", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ title: "queue view" })
        const threadId = thread.id
        const slow = yield* o.startRun({ threadId, provider: alpha, message: "slow [[sleep:20000]]" })
        const a = yield* o.startRun({ threadId, provider: alpha, message: "a", whenBusy: "queue" })
        const b = yield* o.startRun({ threadId, provider: beta, message: "b", whenBusy: "queue" })
        const listed = (yield* o.getThread(threadId)).queued ?? []
        expect(listed.map((r) => [r.id, r.ordinal, r.status, r.message])).toEqual([
          [a.id, 2, "queued", "a"],
          [b.id, 3, "queued", "b"]
        ])
        // A page of the runs lists them too.
        expect((yield* o.getThread(threadId, { runs: { limit: 1 } })).queued?.map((r) => r.id)).toEqual([a.id, b.id])
        const cancelled = yield* o.interruptRun({ threadId, runId: a.id })
        expect([cancelled.id, cancelled.status, cancelled.failure?.reason]).toEqual([
          a.id,
          "interrupted",
          "user_interrupt"
        ])
        expect((yield* o.getThread(threadId)).queued?.map((r) => r.id)).toEqual([b.id])
        // Naming a run that is neither going nor queued nor recorded: RunNotFound.
        const unknown = yield* Effect.either(o.interruptRun({ threadId, runId: "run_nope" as never }))
        expect(Either.isLeft(unknown) && unknown.left._tag).toBe("RunNotFound")
        // The running one still goes; once stopped, the one left in the queue runs.
        expect((yield* o.getThread(threadId)).runs.find((r) => r.id === slow.id)?.status).toBe("running")
        yield* o.interruptRun({ threadId })
        const last = yield* o.startRun({ threadId, provider: alpha, message: "last", whenBusy: "queue", wait: true })
        expect(last.status).toBe("completed")
        const view = yield* o.getThread(threadId)
        expect(view.queued).toBeUndefined()
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([
          [slow.id, "interrupted"],
          [a.id, "interrupted"],
          [b.id, "completed"],
          [last.id, "completed"]
        ])
      })
    )
  })

  it("a stop for shutdown leaves queued runs queued; the next start-up runs them", async () => {
    const dir = tempDir()
    try {
      const first = await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ title: "held" })
            const slow = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "slow [[sleep:20000]]" })
            const queued = yield* o.startRun({
              threadId: thread.id,
              provider: beta,
              message: "after the restart",
              whenBusy: "queue",
              commandId: "cmd_q_held" as never
            })
            // Queued on a provider the next start-up will not have.
            const orphan = yield* o.startRun({
              threadId: thread.id,
              provider: "faulty" as ProviderName,
              message: "nowhere to run",
              whenBusy: "queue",
              commandId: "cmd_q_orphan" as never
            })
            return { threadId: thread.id, slow: slow.id, queued: queued.id, orphan: orphan.id }
          }),
        { extraAdapters: [makeFaultAdapter("faulty", makeFaultPlan())] }
      )
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const ended = yield* o.startRun({
            threadId: first.threadId,
            provider: beta,
            message: "after the restart",
            whenBusy: "queue",
            wait: true,
            commandId: "cmd_q_held" as never
          })
          expect([ended.id, ended.status]).toEqual([first.queued, "completed"])
          // The one whose provider is gone is recorded as failed, so that its caller hears.
          const orphan = yield* o.startRun({
            threadId: first.threadId,
            provider: "faulty" as ProviderName,
            message: "nowhere to run",
            whenBusy: "queue",
            wait: true,
            commandId: "cmd_q_orphan" as never
          })
          expect([orphan.id, orphan.status, orphan.failure?.message]).toEqual([
            first.orphan,
            "failed",
            expect.stringContaining("could not start")
          ])
          const view = yield* o.getThread(first.threadId)
          expect(view.runs.map((r) => [r.id, r.status, r.failure?.reason ?? null])).toEqual([
            [first.slow, "interrupted", "shutdown"],
            [first.queued, "completed", null],
            [first.orphan, "failed", "runtime_error"]
          ])
        })
      )
    } finally {
      removeDir(dir)
    }
  })

  it("rejects bad input with typed errors and writes nothing", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const unknownThread = yield* Effect.either(
          o.startRun({ threadId: "thr_nope" as ThreadId, provider: alpha, message: "hi" })
        )
        expect(Either.isLeft(unknownThread) && unknownThread.left._tag).toBe("ThreadNotFound")
        const thread = yield* o.createThread({ title: "bad input" })
        const before = yield* o.getThread(thread.id)
        const unknownProvider = yield* Effect.either(
          o.startRun({ threadId: thread.id, provider: "gamma" as ProviderName, message: "hi" })
        )
        expect(Either.isLeft(unknownProvider) && unknownProvider.left._tag).toBe("ProviderNotFound")
        expect(Either.isLeft(unknownProvider) && unknownProvider.left.message).toContain("alpha, beta")
        expect(yield* o.getThread(thread.id)).toEqual(before)
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "slow [[sleep:3000]]" })
        const during = yield* o.getThread(thread.id)
        const busy = yield* Effect.either(o.startRun({ threadId: thread.id, provider: beta, message: "second" }))
        expect(Either.isLeft(busy) && busy.left._tag).toBe("RunAlreadyActive")
        expect((yield* o.getThread(thread.id)).runs.length).toBe(during.runs.length)
        const noRun = yield* Effect.either(o.interruptRun({ threadId: "thr_nope" as ThreadId }))
        expect(Either.isLeft(noRun) && noRun.left._tag).toBe("ThreadNotFound")
        yield* o.interruptRun({ threadId: thread.id })
        const idle = yield* Effect.either(o.interruptRun({ threadId: thread.id }))
        expect(Either.isLeft(idle) && idle.left._tag).toBe("NoActiveRun")
      })
    )
  })

  it("makes commands idempotent by commandId and rejects a reused id with another payload", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const a = yield* o.createThread({ title: "once", commandId: "cmd_create_1" as never })
        const b = yield* o.createThread({ title: "once", commandId: "cmd_create_1" as never })
        expect(b.id).toBe(a.id)
        const conflict = yield* Effect.either(o.createThread({ title: "other", commandId: "cmd_create_1" as never }))
        expect(Either.isLeft(conflict) && conflict.left._tag).toBe("CommandConflict")
        const r1 = yield* o.startRun({
          threadId: a.id,
          provider: alpha,
          message: "hi",
          wait: true,
          commandId: "cmd_run_1" as never
        })
        const r2 = yield* o.startRun({
          threadId: a.id,
          provider: alpha,
          message: "hi",
          wait: true,
          commandId: "cmd_run_1" as never
        })
        expect(r2.id).toBe(r1.id)
        expect((yield* o.getThread(a.id)).runs.length).toBe(1)
        const runConflict = yield* Effect.either(
          o.startRun({ threadId: a.id, provider: alpha, message: "different", commandId: "cmd_run_1" as never })
        )
        expect(Either.isLeft(runConflict) && runConflict.left._tag).toBe("CommandConflict")
        expect((yield* o.listThreads({})).length).toBe(1)
      })
    )
  })

  it("streams a thread's events from a sequence number, then live, with no gap or duplicate", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        const follower = yield* o.events(thread.id, 3).pipe(
          Stream.takeUntil((e) => e.event._tag === "RunEnded" && e.event.run.ordinal === 3),
          Stream.runCollect,
          Effect.fork
        )
        yield* o.startRun({ threadId: thread.id, provider: beta, message: "two", wait: true })
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "three", wait: true })
        const seen = Chunk.toReadonlyArray(yield* Fiber.join(follower))
        expect(seen[0]!.threadSequence).toBe(4)
        expect(seen.map((e) => e.threadSequence)).toEqual(seen.map((_, i) => i + 4))
      })
    )
  })

  it("kills a provider that ignores an interrupt after the grace period; the run ends interrupted", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "warm up", wait: true })
          const pid = (yield* o.listProviders).find((p) => p.name === "alpha")!.sessions[0]!.pid!
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "stubborn [[sleep:10000]]" })
          yield* Effect.sleep("300 millis")
          const t0 = Date.now()
          const run = yield* o.interruptRun({ threadId: thread.id })
          expect(run.status).toBe("interrupted")
          expect(Date.now() - t0).toBeLessThan(2000)
          expect(yield* Effect.promise(() => waitFor(() => !isAlive(pid), 3000))).toBe(true)
          const next = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "after", wait: true })
          expect(next.status).toBe("completed")
        }),
      {
        interruptGraceMs: 300,
        // A provider whose interrupt request is lost on the way.
        mapAdapter: (adapter) => ({
          ...adapter,
          openSession: (options) =>
            Effect.map(adapter.openSession(options), (handle) => ({ ...handle, interrupt: () => Effect.void }))
        })
      }
    )
  })

  it("passivates idle thread actors and reactivates them from storage", async () => {
    await inTempRuntime(
      (o, actors) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "remember FIG", wait: true })
          expect(yield* actors.activeThreads).toContain(thread.id)
          yield* Effect.sleep("400 millis")
          expect(yield* actors.activeThreads).not.toContain(thread.id)
          const again = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "[[recall:FIG]]",
            wait: true
          })
          expect(again.ordinal).toBe(2)
          expect(again.contextResolution).toBe("none")
          const reply = again.items.find((i) => i.type === "assistant_message")
          expect(reply && "text" in reply ? reply.text : "").toContain("recall:FIG=yes")
        }),
      { passivateAfterMs: 100 }
    )
  })

  it("records an approval decision after the provider accepts it; a second answer is refused", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const run = yield* o.startRun({
          threadId: thread.id,
          provider: alpha,
          message: "[[ask:may I delete build/?]]",
          wait: true
        })
        const request = run.items.find((i) => i.type === "approval_request")
        if (request?.type !== "approval_request") throw new Error("no approval request")
        expect(request.status).toBe("open")
        const answered = yield* o.respondApproval({
          threadId: thread.id,
          approvalId: request.approvalId,
          decision: "decline"
        })
        expect(answered.type === "approval_request" && answered.status).toBe("decline")
        const view = yield* o.getThread(thread.id)
        const stored = view.runs[0]!.items.find((i) => i.id === request.id)
        expect(stored?.type === "approval_request" && stored.status).toBe("decline")
        const again = yield* Effect.either(
          o.respondApproval({ threadId: thread.id, approvalId: request.approvalId, decision: "accept" })
        )
        expect(Either.isLeft(again) && again.left._tag).toBe("ApprovalNotFound")
      })
    )
  })

  it("refuses a decision once the run is over when the provider's approvals end with their turn, without asking it", async () => {
    // A scripted instance that behaves as Codex and Claude Code do: an approval waits in its turn.
    const strict = "strict" as ProviderName
    let asked = 0
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          // Once the run is over, Skein answers for the provider, which is not asked. (A
          // decision while the turn waits still goes to the provider: the real agents'
          // approval tests, test/agents/suite.ts, whose drivers say the same.)
          const done = yield* o.startRun({
            threadId: thread.id,
            provider: strict,
            message: "[[ask:may I?]]",
            wait: true
          })
          expect(done.status).toBe("completed")
          const request = done.items.find((i) => i.type === "approval_request")!
          if (request.type !== "approval_request") throw new Error("no approval request")
          const refused = yield* Effect.flip(
            o.respondApproval({ threadId: thread.id, approvalId: request.approvalId, decision: "accept" })
          )
          expect(refused).toMatchObject({ _tag: "ProviderFailure", provider: strict, code: "approval_not_pending" })
          expect(refused.message).toContain("is over")
          expect(asked).toBe(0)
          // The approval is still open, and can be refused again the same way.
          const stored = (yield* o.getThread(thread.id)).runs[0]!.items.find((i) => i.id === request.id)
          expect(stored?.type === "approval_request" && stored.status).toBe("open")
          const again = yield* Effect.flip(
            o.respondApproval({ threadId: thread.id, approvalId: request.approvalId, decision: "decline" })
          )
          expect(again).toMatchObject({ _tag: "ProviderFailure", code: "approval_not_pending" })
          expect(asked).toBe(0)
          // The same instance with the scripted profile's default takes late decisions: the
          // "records an approval decision after the provider accepts it" test above.
        }),
      (dir) => {
        const configFile = join(dir, "providers.json")
        writeFileSync(
          configFile,
          JSON.stringify({
            providers: { strict: { driver: "scripted", capabilities: { approvalsOutliveTurn: false } } }
          })
        )
        return {
          configFile,
          mapAdapter: (adapter) => ({
            ...adapter,
            openSession: (options) =>
              Effect.map(adapter.openSession(options), (handle) => ({
                ...handle,
                respondApproval: (nativeRef, approvalId, decision) =>
                  Effect.suspend(() => {
                    asked++
                    return handle.respondApproval(nativeRef, approvalId, decision)
                  })
              }))
          })
        }
      }
    )
  })

  it("records provider events that arrive together in one commit, and events that trickle in as they come", async () => {
    // The whole turn reaches the run's fiber at once (as a provider that answers in one burst).
    const together = await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          const batches = yield* batchesOf(o, thread.id, "burst [[cmd:ls:0]] [[plan:a;b]]")
          const view = yield* o.getThread(thread.id)
          return { batches, items: view.runs[0]!.items.map((i) => [i.seq, i.type]) }
        }),
      {
        mapAdapter: (adapter) => ({
          ...adapter,
          openSession: (options) =>
            Effect.map(adapter.openSession(options), (handle) => ({
              ...handle,
              // Every event of the turn in one batch, at its end.
              runTurn: (input, onEvents) =>
                Effect.flatMap(
                  TurnEvents.collect((sink) => handle.runTurn(input, sink)),
                  onEvents
                )
            }))
        })
      }
    )
    const ending = together.batches.find((b) => b.includes("RunEnded"))!
    expect(ending.slice(0, 3)).toEqual(["item:command_execution", "item:plan", "item:assistant_message"])
    expect(
      together.batches.filter((b) => b.some((tag) => tag.startsWith("item:") && tag !== "item:user_message"))
    ).toEqual([ending])
    // Numbered after the user's message (seq 0), which the view shows once, as the run's `message`.
    expect(together.items.map(([seq]) => seq)).toEqual(together.items.map((_, i) => i + 1))
    expect(together.items.map(([, type]) => type)).toContain("plan")

    // Each command's item is committed while the turn still runs (once itemDelayMs has
    // passed), not held back for its end.
    const trickle = await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        return yield* batchesOf(o, thread.id, "slow [[cmd:ls:0]] [[sleep:300]] [[cmd:pwd:0]] [[sleep:300]]")
      })
    )
    const commands = trickle.flatMap((b, i) => (b.includes("item:command_execution") ? [i] : []))
    const endAt = trickle.findIndex((b) => b.includes("RunEnded"))
    expect(commands).toHaveLength(2)
    expect(commands[1]!).toBeLessThan(endAt)
    expect(trickle[commands[0]!]!.filter((tag) => tag === "item:command_execution")).toHaveLength(1)
  })

  it("records an item in the turn's end commit when the end follows within itemDelayMs, and alone when it does not", async () => {
    const run = (itemDelayMs: number) =>
      inTempRuntime(
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({})
            return yield* batchesOf(o, thread.id, "close [[cmd:ls:0]] [[sleep:40]]")
          }),
        { itemDelayMs }
      )
    const held = await run(2000)
    const ending = held.find((b) => b.includes("RunEnded"))!
    expect(ending.slice(0, 2)).toEqual(["item:command_execution", "item:assistant_message"])
    expect(held.filter((b) => b.includes("item:command_execution"))).toEqual([ending])
    // Without the delay, the same turn commits the command on its own, before the end.
    const atOnce = await run(0)
    const commandAt = atOnce.findIndex((b) => b.includes("item:command_execution"))
    expect(commandAt).toBeGreaterThanOrEqual(0)
    expect(commandAt).toBeLessThan(atOnce.findIndex((b) => b.includes("RunEnded")))
  })

  it("records an approval request at once, whatever itemDelayMs says", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[ask:may I?]] [[sleep:3000]]" })
          const t0 = Date.now()
          let seen = false
          while (!seen && Date.now() - t0 < 2500) {
            const view = yield* o.getThread(thread.id)
            seen = view.runs[0]?.items.some((i) => i.type === "approval_request") ?? false
            if (!seen) yield* Effect.sleep("20 millis")
          }
          expect(seen).toBe(true)
          expect((yield* o.getThread(thread.id)).runs[0]!.status).toBe("running")
          yield* o.interruptRun({ threadId: thread.id })
        }),
      { itemDelayMs: 60_000 }
    )
  })

  it("keeps items still held when the turn crashes or is interrupted: they are recorded all the same", async () => {
    // What reached the runtime at the port so far: the turn's start, and items once handed over.
    const reported: Array<string> = []
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          const crashed = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "[[cmd:make:0]] [[sleep:150]] [[crash]]",
            wait: true
          })
          expect(crashed.status).toBe("failed")
          expect(crashed.failure?.reason).toBe("provider_crash")
          expect(crashed.items.map((i) => i.type)).toContain("command_execution")

          reported.length = 0
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[cmd:test:0]] [[sleep:10000]]" })
          expect(yield* Effect.promise(() => waitFor(() => reported.includes("TurnStarted"), 5000))).toBe(true)
          // The command runs at once; the adapter holds its item (the delay is a minute):
          // it has not reached the runtime, and nothing of it is stored.
          yield* Effect.sleep("300 millis")
          expect(reported).toEqual(["TurnStarted"])
          expect((yield* o.getThread(thread.id)).runs[1]!.items.map((i) => i.type)).not.toContain("command_execution")
          const interrupted = yield* o.interruptRun({ threadId: thread.id })
          expect(interrupted.status).toBe("interrupted")
          const stored = (yield* o.getThread(thread.id)).runs[1]!
          expect(stored.items.filter((i) => i.type === "command_execution")).toHaveLength(1)
          expect(reported).toContain("test")
        }),
      {
        itemDelayMs: 60_000,
        mapAdapter: wrapTurns(
          "alpha",
          (runTurn) => (input, onEvents) =>
            runTurn(input, (events) => {
              for (const e of events) {
                if (e._tag === "TurnStarted") reported.push(e._tag)
                if (e._tag === "Item" && e.item.type === "command_execution") reported.push(e.item.command)
              }
              return onEvents(events)
            })
        )
      }
    )
  })

  it("ends a turn that goes silent after its first event at the idle deadline, though the first-event one is longer", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          const t0 = Date.now()
          const run = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "[[sleep:10000]]",
            wait: true
          })
          // At idleMs (300 ms) after the turn's start, not at firstEventMs (20 s).
          expect(Date.now() - t0).toBeLessThan(5_000)
          expect(run.status).toBe("failed")
          expect(run.failure?.reason).toBe("provider_timeout")
          expect(run.failure?.message).toContain("went silent for 300 ms")
        }),
      { deadlines: { firstEventMs: 20_000, idleMs: 300 } }
    )
  })

  it("keeps held items when a deadline stops the turn: they go with the run's failure", async () => {
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          // The command's item is held in the adapter (the delay is a minute) when the turn
          // goes silent past its deadline and the runtime stops it.
          const run = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "[[cmd:build:0]] [[sleep:10000]]",
            wait: true
          })
          expect(run.status).toBe("failed")
          expect(run.failure?.reason).toBe("provider_timeout")
          expect(run.items.filter((i) => i.type === "command_execution")).toHaveLength(1)
          const stored = (yield* o.getThread(thread.id)).runs[0]!
          expect(stored.items.filter((i) => i.type === "command_execution")).toHaveLength(1)
        }),
      { itemDelayMs: 60_000, deadlines: { firstEventMs: 400, idleMs: 400 } }
    )
  })

  it("ends a run at its turn's end event, not when the provider's call returns; a defect after it changes nothing", async () => {
    // The port's call returns only once the test lets it (or, for the third run, dies).
    const unwinding = Deferred.unsafeMake<void>(FiberId.none)
    let pending = 0
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({})
          const first = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
          expect(first.status).toBe("completed")
          expect(first.items.map((i) => i.type)).toContain("assistant_message")
          // Its call has not returned: the caller did not wait for it, nor does the next run.
          expect(pending).toBe(1)
          const second = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "two", wait: true })
          expect(second.status).toBe("completed")
          expect(pending).toBe(2)
          yield* Deferred.succeed(unwinding, undefined)
          expect(yield* Effect.promise(() => waitFor(() => pending === 0, 5000))).toBe(true)
          // A call that dies after its turn's end: the run stays as its end event made it.
          const third = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "three, whose call dies after its end"
          })
          const ended = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "four", wait: true }).pipe(
            Effect.retry({
              while: (error) => error._tag === "RunAlreadyActive",
              times: 50,
              schedule: Schedule.spaced("20 millis")
            })
          )
          expect(ended.status).toBe("completed")
          const runs = (yield* o.getThread(thread.id)).runs
          expect(runs.map((r) => [r.id === third.id ? "third" : r.ordinal, r.status, r.failure])).toEqual([
            [1, "completed", null],
            [2, "completed", null],
            ["third", "completed", null],
            [4, "completed", null]
          ])
        }),
      {
        mapAdapter: wrapTurns(
          "alpha",
          (runTurn) => (input, onEvents) =>
            Effect.suspend(() => {
              pending++
              return runTurn(input, onEvents).pipe(
                Effect.zipRight(
                  input.message.includes("dies after its end")
                    ? Effect.dieMessage("after the end")
                    : Deferred.await(unwinding)
                ),
                Effect.ensuring(Effect.sync(() => void pending--))
              )
            })
        )
      }
    )
  })

  it("follow: replay then live to a callback, in order, no gap or duplicate, until its scope closes", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        const seen: Array<number> = []
        const scope = yield* Scope.make()
        // Runs race the replay: a second run starts while the follower is attaching.
        const racing = yield* Effect.fork(
          o.startRun({ threadId: thread.id, provider: beta, message: "two", wait: true })
        )
        yield* o
          .follow(thread.id, 2, (events) => {
            for (const e of events) seen.push(e.threadSequence)
          })
          .pipe(Scope.extend(scope))
        yield* Fiber.join(racing)
        const total = (yield* o.events(thread.id, 0).pipe(
          Stream.takeUntil((e) => e.event._tag === "CheckpointRecorded" && e.event.checkpoint.runOrdinal === 2),
          Stream.runCollect
        )).length
        expect(seen).toEqual(Array.from({ length: total - 2 }, (_, i) => i + 3))
        yield* Scope.close(scope, Exit.void)
        const before = seen.length
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "three", wait: true })
        expect(seen.length).toBe(before)
        const missing = yield* Effect.either(Effect.scoped(o.follow("thr_nope" as ThreadId, 0, () => {})))
        expect(Either.isLeft(missing) && missing.left._tag).toBe("ThreadNotFound")
      })
    )
  })
})
