/**
 * Lineage through the Orchestrator, with real thread actors, SQLite and scripted
 * provider processes: forks are lazy and resolve natively or portably at their first
 * run; merge-backs and subagent results reach the source's next run; native child
 * agents become observe-only threads; bad input is refused with typed errors and
 * writes nothing; a fork survives a SIGKILL before its first run.
 */
import type { ProviderName, RunView, SkeinError, ThreadId } from "@skein/domain"
import { makeContextTransfer, ThreadUpdated } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { EventStore, Orchestrator } from "@skein/runtime"
import { startHost } from "../support/hostProcess.js"
import { makeFaultAdapter, makeFaultPlan } from "../support/FaultAdapter.js"
import {
  captureLogs,
  inTempRuntime,
  isAlive,
  removeDir,
  runtimeLayer,
  storeOn,
  tempDir,
  waitFor,
  withRuntime
} from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName
type O = Orchestrator["Type"]

const replyOf = (run: RunView): string =>
  run.items.flatMap((i) => (i.type === "assistant_message" ? [i.text] : [])).join("\n")

const tagOf = <A>(effect: Effect.Effect<A, SkeinError>) =>
  Effect.map(Effect.either(effect), (r) => (Either.isLeft(r) ? r.left._tag : "succeeded"))

/** A source thread: run 1 tells APPLE, run 2 tells BANANA, both on alpha. */
const twoRunSource = (o: O) =>
  Effect.gen(function* () {
    const source = yield* o.createThread({ title: "source" })
    const one = yield* o.startRun({
      threadId: source.id,
      provider: alpha,
      message: "the first word is APPLE",
      wait: true
    })
    yield* o.startRun({ threadId: source.id, provider: alpha, message: "the second word is BANANA", wait: true })
    return { source, one }
  })

describe("fork", () => {
  it("is lazy: a thread and a pending transfer, no provider session, thread or handoff until its first run", async () => {
    const dir = tempDir("skein-lineage-")
    try {
      const { sourceId } = await withRuntime(dir, (o) =>
        Effect.map(twoRunSource(o), ({ source }) => ({ sourceId: source.id }))
      )
      // A fresh runtime: no provider session is open yet.
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const { thread, transfer } = yield* o.forkThread({ sourceThreadId: sourceId, sourcePoint: "latest_stable" })
          expect(transfer).toMatchObject({
            type: "fork",
            status: "pending",
            sourceThreadId: sourceId,
            targetThreadId: thread.id
          })
          expect(thread.lineage).toMatchObject({ parentThreadId: sourceId, relationshipToParent: "fork" })
          const view = yield* o.getThread(thread.id)
          expect([view.runs, view.providerThreads, view.handoffs]).toEqual([[], [], []])
          expect((yield* o.listProviders).flatMap((p) => p.sessions)).toEqual([])
          // The source lists its fork, and the fork's transfer.
          const source = yield* o.getThread(sourceId)
          expect(source.children.map((c) => c.id)).toEqual([thread.id])
          expect(source.transfers.map((t) => t.id)).toContain(transfer.id)
          yield* o.startRun({ threadId: thread.id, provider: alpha, message: "go", wait: true })
          expect((yield* o.listProviders).find((p) => p.name === "alpha")!.sessions).toHaveLength(1)
        })
      )
    } finally {
      removeDir(dir)
    }
  })

  it("at run 1 of 2: the fork knows run 1 and not run 2, natively on alpha and portably on beta", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const { one, source } = yield* twoRunSource(o)
        for (const provider of [alpha, beta]) {
          const { thread } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: one.id } })
          const run = yield* o.startRun({
            threadId: thread.id,
            provider,
            message: "[[recall:APPLE]] [[recall:BANANA]]",
            wait: true
          })
          expect(run.status).toBe("completed")
          expect(replyOf(run)).toContain("recall:APPLE=yes")
          expect(replyOf(run)).toContain("recall:BANANA=no")
          const view = yield* o.getThread(thread.id)
          const transfer = view.transfers.find((t) => t.type === "fork")!
          expect(transfer).toMatchObject({ status: "consumed", consumedByRunId: run.id })
          if (provider === alpha) {
            expect(run.contextResolution).toBe("native")
            expect(transfer.resolution?.strategy).toBe("native_fork")
            expect(view.handoffs).toEqual([])
          } else {
            expect(run.contextResolution).toBe("portable")
            expect(transfer.resolution?.strategy).toBe("portable_context")
            expect(view.handoffs).toHaveLength(1)
          }
          // The fork goes on: its next run still knows APPLE.
          const next = yield* o.startRun({ threadId: thread.id, provider, message: "[[recall:APPLE]]", wait: true })
          expect(replyOf(next)).toContain("recall:APPLE=yes")
        }
      })
    )
  }, 60_000)

  it("forks of forks and of subagent threads carry everything they inherited", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const { source } = yield* twoRunSource(o)
        const { thread: f1 } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" })
        yield* o.startRun({ threadId: f1.id, provider: beta, message: "the fork adds CHERRY", wait: true })
        const { thread: f2 } = yield* o.forkThread({ sourceThreadId: f1.id, sourcePoint: "latest_stable" })
        const deep = yield* o.startRun({
          threadId: f2.id,
          provider: beta,
          message: "[[recall:APPLE]] [[recall:BANANA]] [[recall:CHERRY]]",
          wait: true
        })
        expect(replyOf(deep)).toMatch(/recall:APPLE=yes[\s\S]*recall:BANANA=yes[\s\S]*recall:CHERRY=yes/)
        expect(f2.lineage.rootThreadId).toBe(source.id)

        const { run: childRun, thread: child } = yield* o.spawnSubagent({
          parentThreadId: source.id,
          provider: beta,
          prompt: "the child notes DATE"
        })
        yield* waitEnd(o, child.id, childRun.id)
        const { thread: fromChild } = yield* o.forkThread({ sourceThreadId: child.id, sourcePoint: "latest_stable" })
        const run = yield* o.startRun({
          threadId: fromChild.id,
          provider: alpha,
          message: "[[recall:DATE]] [[recall:APPLE]]",
          wait: true
        })
        expect(replyOf(run)).toContain("recall:DATE=yes")
        // The child inherited its parent's context, and the fork of the child inherits it too.
        expect(replyOf(run)).toContain("recall:APPLE=yes")
      })
    )
  }, 60_000)

  it("refuses active, failed and rolled-back source runs, and unknown threads, runs and checkpoints, writing nothing", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({ title: "source" })
        const failed = yield* o.startRun({ threadId: source.id, provider: alpha, message: "[[fail]]", wait: true })
        expect(yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: failed.id } }))).toBe(
          "InvalidSourcePoint"
        )
        expect(yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" }))).toBe(
          "InvalidSourcePoint"
        )
        const done = yield* o.startRun({ threadId: source.id, provider: alpha, message: "fine", wait: true })
        const active = yield* o.startRun({ threadId: source.id, provider: alpha, message: "slow [[sleep:3000]]" })
        expect(yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: active.id } }))).toBe(
          "InvalidSourcePoint"
        )
        yield* o.interruptRun({ threadId: source.id })
        yield* o.rollback({ threadId: source.id, toRunOrdinal: 1 })
        expect(yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: done.id } }))).toBe(
          "InvalidSourcePoint"
        )
        expect(
          yield* tagOf(o.forkThread({ sourceThreadId: "thr_nope" as ThreadId, sourcePoint: "latest_stable" }))
        ).toBe("ThreadNotFound")
        expect(
          yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: "run_nope" as never } }))
        ).toBe("RunNotFound")
        expect(
          yield* tagOf(o.forkThread({ sourceThreadId: source.id, sourcePoint: { checkpointId: "chk_nope" as never } }))
        ).toBe("InvalidSourcePoint")
        expect((yield* o.listThreads({})).map((t) => t.id)).toEqual([source.id])
      })
    )
  }, 60_000)

  it("a side chat is listed with its parent, not among the top-level threads", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const { source } = yield* twoRunSource(o)
        const { thread } = yield* o.forkThread({
          sourceThreadId: source.id,
          sourcePoint: "latest_stable",
          sideChat: true
        })
        expect(thread.lineage.sideChat).toBe(true)
        expect((yield* o.listThreads({})).map((t) => t.id)).toEqual([source.id])
        expect((yield* o.listThreads({ parentThreadId: source.id })).map((t) => t.id)).toEqual([thread.id])
        expect((yield* o.getThread(source.id)).children.map((t) => t.id)).toEqual([thread.id])
      })
    )
  })
})

const waitEnd = (o: O, threadId: ThreadId, runId: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      const run = (yield* o.getThread(threadId)).runs.find((r) => r.id === runId)
      if (run && run.status !== "running" && run.status !== "queued") return run
      yield* Effect.sleep("10 millis")
    }
    throw new Error(`run ${runId} never ended`)
  })

describe("merge-back", () => {
  it("brings a fork's work into the source's next run; two forks in creation order, by one run", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({ title: "source" })
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "start here", wait: true })
        const { thread: f1 } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" })
        const { thread: f2 } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" })
        yield* o.startRun({ threadId: f1.id, provider: beta, message: "the first fork found LEMON", wait: true })
        yield* o.startRun({ threadId: f2.id, provider: alpha, message: "the second fork found MANGO", wait: true })
        const m1 = yield* o.mergeBack({ forkThreadId: f1.id, commandId: "cmd_merge_1" as never })
        const m2 = yield* o.mergeBack({ forkThreadId: f2.id })
        expect(m1).toMatchObject({
          type: "merge_back",
          status: "pending",
          sourceThreadId: f1.id,
          targetThreadId: source.id
        })
        expect(m1.basePoint?.threadId).toBe(source.id)
        // Idempotent by commandId.
        expect((yield* o.mergeBack({ forkThreadId: f1.id, commandId: "cmd_merge_1" as never })).id).toBe(m1.id)
        const run = yield* o.startRun({
          threadId: source.id,
          provider: alpha,
          message: "[[recall:LEMON]] [[recall:MANGO]]",
          wait: true
        })
        expect(replyOf(run)).toContain("recall:LEMON=yes")
        expect(replyOf(run)).toContain("recall:MANGO=yes")
        const blocks = run.items.filter((i) => i.type === "handoff_context")
        const view = yield* o.getThread(source.id)
        const handoffOf = (id: string) => view.handoffs.find((h) => h.id === id)!
        expect(blocks.map((b) => (b.type === "handoff_context" ? handoffOf(b.handoffId).transferId : null))).toEqual([
          m1.id,
          m2.id
        ])
        for (const id of [m1.id, m2.id]) {
          expect(view.transfers.find((t) => t.id === id)).toMatchObject({ status: "consumed", consumedByRunId: run.id })
        }
        expect(
          blocks.every((b) => b.type === "handoff_context" && handoffOf(b.handoffId).strategy === "fork_delta")
        ).toBe(true)
        // A later full summary of the source keeps what the merge brought in.
        const later = yield* o.startRun({
          threadId: source.id,
          provider: beta,
          message: "[[recall:LEMON]]",
          wait: true
        })
        expect(replyOf(later)).toContain("recall:LEMON=yes")
      })
    )
  }, 60_000)

  it("transfer.list: a lineage's pending transfers until a run takes them in; bad filters refused", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({ title: "source" })
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "start here", wait: true })
        const { thread: fork, transfer: forked } = yield* o.forkThread({
          sourceThreadId: source.id,
          sourcePoint: "latest_stable"
        })
        const other = yield* o.createThread({ title: "elsewhere" })
        yield* o.startRun({ threadId: other.id, provider: alpha, message: "x", wait: true })
        const { transfer: elsewhere } = yield* o.forkThread({ sourceThreadId: other.id, sourcePoint: "latest_stable" })
        const pending = (rootThreadId?: ThreadId) =>
          Effect.map(
            o.listTransfers(rootThreadId === undefined ? { status: "pending" } : { status: "pending", rootThreadId }),
            (xs) => xs.map((x) => x.id)
          )
        expect(yield* pending(source.id)).toEqual([forked.id])
        expect(yield* pending()).toEqual([forked.id, elsewhere.id])
        yield* o.startRun({ threadId: fork.id, provider: beta, message: "the fork found LEMON", wait: true })
        const merge = yield* o.mergeBack({ forkThreadId: fork.id })
        expect(yield* pending(source.id)).toEqual([merge.id])
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "[[recall:LEMON]]", wait: true })
        expect(yield* pending(source.id)).toEqual([])
        const consumed = yield* o.listTransfers({ rootThreadId: source.id, status: "consumed" })
        expect(consumed.map((x) => x.id)).toEqual([forked.id, merge.id])
        expect(yield* tagOf(o.listTransfers({ status: "waiting" as never }))).toBe("InvalidInput")
      })
    )
  }, 60_000)

  it("refuses a thread that is not a fork, or a fork with nothing to merge, writing nothing", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({})
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "x", wait: true })
        expect(yield* tagOf(o.mergeBack({ forkThreadId: source.id }))).toBe("NotAFork")
        expect(yield* tagOf(o.mergeBack({ forkThreadId: "thr_nope" as ThreadId }))).toBe("ThreadNotFound")
        const { thread } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" })
        expect(yield* tagOf(o.mergeBack({ forkThreadId: thread.id }))).toBe("InvalidSourcePoint")
        expect((yield* o.getThread(source.id)).transfers.filter((t) => t.type === "merge_back")).toEqual([])
      })
    )
  })
})

describe("subagents", () => {
  it("a subagent on the other provider finishes and the parent's next run recalls its result", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const parent = yield* o.createThread({ title: "parent" })
        yield* o.startRun({ threadId: parent.id, provider: alpha, message: "plan the work", wait: true })
        const { run, thread: child } = yield* o.spawnSubagent({
          parentThreadId: parent.id,
          provider: beta,
          prompt: "look it up [[decide:use PEACH]]",
          commandId: "cmd_spawn" as never
        })
        expect(child.lineage).toMatchObject({ parentThreadId: parent.id, relationshipToParent: "subagent" })
        const again = yield* o.spawnSubagent({
          parentThreadId: parent.id,
          provider: beta,
          prompt: "look it up [[decide:use PEACH]]",
          commandId: "cmd_spawn" as never
        })
        expect([again.thread.id, again.run.id]).toEqual([child.id, run.id])
        yield* waitEnd(o, child.id, run.id)
        // The result is on its way back as a pending transfer into the parent.
        for (let i = 0; i < 200; i++) {
          if ((yield* o.getThread(parent.id)).transfers.some((t) => t.type === "subagent_result")) break
          yield* Effect.sleep("10 millis")
        }
        const pending = (yield* o.getThread(parent.id)).transfers.find((t) => t.type === "subagent_result")
        expect(pending).toMatchObject({ status: "pending", sourceThreadId: child.id })
        const next = yield* o.startRun({
          threadId: parent.id,
          provider: alpha,
          message: "[[recall:PEACH]]",
          wait: true
        })
        expect(replyOf(next)).toContain("recall:PEACH=yes")
        const view = yield* o.getThread(parent.id)
        const result = view.transfers.find((t) => t.type === "subagent_result")!
        expect(result).toMatchObject({ status: "consumed", consumedByRunId: next.id })
        const handoff = view.handoffs.find((h) => h.transferId === result.id)!
        const section = handoff.payload.sections.find((s) => s.kind === "subagent_results")
        expect(section?.lines.join("\n")).toContain("PEACH")
        expect(
          yield* tagOf(o.spawnSubagent({ parentThreadId: parent.id, provider: "gamma" as ProviderName, prompt: "x" }))
        ).toBe("ProviderNotFound")
        expect((yield* o.listThreads({ parentThreadId: parent.id })).map((t) => t.id)).toEqual([child.id])
      })
    )
  }, 60_000)

  it("a result whose way back failed reaches the parent's next run from storage, while the parent's actor lives on", async () => {
    const dir = tempDir()
    const logs = captureLogs()
    // A second writer on the same database: its append makes the parent actor's next commit stale.
    const other = storeOn(dir)
    try {
      await Effect.runPromise(
        Effect.gen(function* () {
          const o = yield* Orchestrator
          const parent = yield* o.createThread({ title: "parent" })
          // The parent's actor has looked in storage for children's results, and found none.
          yield* o.startRun({ threadId: parent.id, provider: alpha, message: "plan the work", wait: true })
          yield* Effect.promise(() =>
            other.runPromise(
              Effect.gen(function* () {
                const store = yield* EventStore
                const loaded = Option.getOrThrow(yield* store.loadThread(parent.id))
                yield* store.append({
                  threadId: parent.id,
                  events: [new ThreadUpdated({ thread: { ...loaded.thread, title: "renamed elsewhere" } })]
                })
              })
            )
          )
          const { run, thread: child } = yield* o.spawnSubagent({
            parentThreadId: parent.id,
            provider: beta,
            prompt: "look it up [[decide:use PEACH]]"
          })
          yield* waitEnd(o, child.id, run.id)
          // Its way back meets the stale actor (SequenceConflict): lost, and logged.
          const lost = `subagent ${child.id}: returning its result failed`
          expect(yield* Effect.promise(() => waitFor(() => logs.lines.some((l) => l.includes(lost)), 5_000))).toBe(true)
          expect((yield* o.getThread(parent.id)).transfers.some((t) => t.type === "subagent_result")).toBe(false)
          // The parent's next run looks in storage again, since a child was spawned meanwhile.
          const next = yield* o.startRun({
            threadId: parent.id,
            provider: alpha,
            message: "[[recall:PEACH]]",
            wait: true
          })
          expect(replyOf(next)).toContain("recall:PEACH=yes")
          const result = (yield* o.getThread(parent.id)).transfers.find((t) => t.type === "subagent_result")
          expect(result).toMatchObject({ status: "consumed", consumedByRunId: next.id, sourceThreadId: child.id })
        }).pipe(Effect.provide(Layer.merge(runtimeLayer(dir), logs.layer)))
      )
    } finally {
      await other.dispose()
      removeDir(dir)
    }
  }, 60_000)

  it("a result sent back after the parent's run took it in from storage is not recorded again", async () => {
    await inTempRuntime((o, actors) =>
      Effect.gen(function* () {
        const parent = yield* o.createThread({ title: "parent" })
        yield* o.startRun({ threadId: parent.id, provider: alpha, message: "plan the work", wait: true })
        const { run, thread: child } = yield* o.spawnSubagent({
          parentThreadId: parent.id,
          provider: beta,
          prompt: "look it up [[decide:use PEACH]]"
        })
        yield* waitEnd(o, child.id, run.id)
        const next = yield* o.startRun({
          threadId: parent.id,
          provider: alpha,
          message: "[[recall:PEACH]]",
          wait: true
        })
        expect(replyOf(next)).toContain("recall:PEACH=yes")
        const taken = (yield* o.getThread(parent.id)).transfers.find((t) => t.type === "subagent_result")!
        expect(taken).toMatchObject({ status: "consumed", sourceThreadId: child.id })
        // The child's watcher, late (as across runners): the same result, as a new transfer.
        const late = makeContextTransfer({
          type: "subagent_result",
          sourceThreadId: child.id,
          targetThreadId: parent.id,
          sourcePoint: taken.sourcePoint,
          sourceProvider: beta,
          createdBy: "agent",
          createdAt: new Date().toISOString()
        })
        const answer = yield* actors.use(parent.id, (actor) =>
          actor.ask("RecordTransfer", { transfer: late, receipt: null })
        )
        expect(answer.id).toBe(taken.id)
        const results = (yield* o.getThread(parent.id)).transfers.filter((t) => t.type === "subagent_result")
        expect(results.map((t) => [t.id, t.status])).toEqual([[taken.id, "consumed"]])
      })
    )
  }, 60_000)

  it("the [[subagent:P:PROMPT]] app tool starts a child whose result the parent's next run receives", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const parent = yield* o.createThread({})
        const run = yield* o.startRun({
          threadId: parent.id,
          provider: alpha,
          message: "delegate [[subagent:beta:find PLUM]]",
          wait: true
        })
        const call = run.items.find((i) => i.type === "tool_call" && i.name === "spawn_subagent")
        expect(call?.type === "tool_call" && JSON.parse(call.output!)).toMatchObject({ threadId: expect.any(String) })
        const child = JSON.parse(call?.type === "tool_call" ? call.output! : "{}") as {
          threadId: ThreadId
          runId: string
        }
        expect((yield* o.getThread(child.threadId)).thread.lineage.relationshipToParent).toBe("subagent")
        yield* waitEnd(o, child.threadId, child.runId)
        const next = yield* o.startRun({ threadId: parent.id, provider: alpha, message: "[[recall:PLUM]]", wait: true })
        expect(replyOf(next)).toContain("recall:PLUM=yes")
      })
    )
  }, 60_000)

  it("the app tool refuses a child on an instance that acts more freely than the calling agent", async () => {
    // An instance whose agent needs no approval and reaches past its workspace.
    const free = {
      ...makeFaultAdapter("free", makeFaultPlan()),
      autonomy: { approvals: "accept", sandbox: "full" } as const
    }
    await inTempRuntime(
      (o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({})
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: alpha,
            message: "delegate [[subagent:free:do anything]]",
            wait: true
          })
          const call = run.items.find((i) => i.type === "tool_call" && i.name === "spawn_subagent")
          const output = JSON.parse(call?.type === "tool_call" ? call.output! : "{}") as { error?: string }
          expect(output.error).toContain("free acts more freely (approvals accept, sandbox full) than you do on alpha")
          expect(yield* o.listThreads({ parentThreadId: parent.id })).toEqual([])
          expect((yield* o.listProviders).find((p) => p.name === "free")?.autonomy).toEqual(free.autonomy)
        }),
      { extraAdapters: [free] }
    )
  }, 60_000)

  it("a child agent the provider runs itself is one node of the run and an observe-only thread", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const parent = yield* o.createThread({})
        const run = yield* o.startRun({
          threadId: parent.id,
          provider: alpha,
          message: "[[child:check the tests]]",
          wait: true
        })
        const nodes = run.items.filter((i) => i.type === "child_agent")
        expect(nodes).toHaveLength(1)
        const node = nodes[0]!
        expect(node).toMatchObject({ status: "completed", result: "done: check the tests" })
        const childId = node.type === "child_agent" ? node.childThreadId! : ("" as ThreadId)
        const observed = yield* o.getThread(childId)
        expect(observed.thread.lineage).toMatchObject({ parentThreadId: parent.id, observeOnly: true })
        expect(observed.runs.map((r) => [r.status, replyOf(r)])).toEqual([["completed", "done: check the tests"]])
        expect(yield* tagOf(o.startRun({ threadId: childId, provider: alpha, message: "go on" }))).toBe(
          "ObserveOnlyThread"
        )
      })
    )
  })
})

describe("crash", () => {
  it("a SIGKILL between thread.fork and the fork's first run leaves the transfer pending; the first run resolves it", async () => {
    const dir = tempDir("skein-lineage-crash-")
    const { host: child, info } = await startHost<{ forkId: ThreadId; transferId: string; pid: number }>(
      [dir, "fork"],
      30_000
    )
    try {
      child.kill("SIGKILL")
      expect(await waitFor(() => !isAlive(info.pid), 5_000)).toBe(true)
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          const before = yield* o.getThread(info.forkId)
          expect(before.transfers.find((t) => t.id === info.transferId)?.status).toBe("pending")
          // The fork command, retried, answers what it answered.
          const fork = yield* o.getThread(info.forkId)
          const run = yield* o.startRun({
            threadId: fork.thread.id,
            provider: beta,
            message: "[[recall:QUINCE]]",
            wait: true
          })
          expect(replyOf(run)).toContain("recall:QUINCE=yes")
          const after = yield* o.getThread(info.forkId)
          expect(after.transfers.find((t) => t.id === info.transferId)?.status).toBe("consumed")
        })
      )
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      removeDir(dir)
    }
  }, 60_000)
})
