/**
 * thread.rollback through the Orchestrator: runs after N become rolled_back, handoffs
 * covering them are superseded, provider threads that saw them are rolled back
 * natively where the provider can (alpha) and otherwise marked divergent or rolled
 * back (beta), so their next use starts fresh from a full summary. Pending transfers
 * sourced from rolled-back runs are superseded; a source's rollback never changes its
 * forks. Refused while a run is active or past the last run; idempotent by commandId.
 */
import type { ProviderName, RunView, SkeinError } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { inTempRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

const replyOf = (run: RunView): string =>
  run.items.flatMap((i) => (i.type === "assistant_message" ? [i.text] : [])).join("\n")
const tagOf = <A>(effect: Effect.Effect<A, SkeinError>) =>
  Effect.map(Effect.either(effect), (r) => (Either.isLeft(r) ? r.left._tag : "succeeded"))

describe("rollback", () => {
  it("rolls runs back, supersedes their handoffs, rolls provider threads back natively or retires them", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const start = (provider: ProviderName, message: string) =>
          o.startRun({ threadId: thread.id, provider, message, wait: true })
        yield* start(alpha, "the word is ONE")
        yield* start(beta, "the word is TWO")
        yield* start(alpha, "the word is THREE")
        const before = yield* o.getThread(thread.id)
        expect(before.handoffs.map((h) => h.status)).toEqual(["ready", "ready"])

        const view = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1, commandId: "cmd_rb" as never })
        expect(view.runs.map((r) => r.status)).toEqual(["completed", "rolled_back", "rolled_back"])
        expect(view.runs[1]!.rolledBackAt).toBeDefined()
        expect(view.handoffs.map((h) => h.status)).toEqual(["superseded", "superseded"])
        const byProvider = (p: ProviderName) => view.providerThreads.find((pt) => pt.provider === p)!
        expect(byProvider(alpha)).toMatchObject({
          status: "idle",
          coverage: { nativeRunOrdinals: [1], handoffIds: [] }
        })
        expect(byProvider(alpha).statusReason).toContain("natively")
        expect(byProvider(beta).status).toBe("rolled_back")
        // Idempotent: the same command again changes nothing.
        const again = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1, commandId: "cmd_rb" as never })
        expect(again.runs.map((r) => r.status)).toEqual(view.runs.map((r) => r.status))

        // alpha's own thread no longer holds runs 2 and 3, and needs no handoff.
        const onAlpha = yield* start(alpha, "[[recall:ONE]] [[recall:TWO]] [[recall:THREE]]")
        expect(onAlpha.contextResolution).toBe("none")
        expect(replyOf(onAlpha)).toMatch(/recall:ONE=yes[\s\S]*recall:TWO=no[\s\S]*recall:THREE=no/)
        // beta starts a fresh thread from a summary of what is live.
        const onBeta = yield* start(beta, "[[recall:ONE]] [[recall:TWO]]")
        expect(onBeta.contextResolution).toBe("portable")
        expect(replyOf(onBeta)).toMatch(/recall:ONE=yes[\s\S]*recall:TWO=no/)
      })
    )
  }, 60_000)

  it("a provider thread that cannot roll back but keeps earlier runs becomes divergent, and its next use starts fresh", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        const start = (provider: ProviderName, message: string) =>
          o.startRun({ threadId: thread.id, provider, message, wait: true })
        yield* start(beta, "keep KIWI")
        yield* start(beta, "drop LIME")
        const view = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1 })
        expect(view.providerThreads.map((pt) => pt.status)).toEqual(["divergent"])
        const next = yield* start(beta, "[[recall:KIWI]] [[recall:LIME]]")
        expect(next.contextResolution).toBe("portable")
        expect(replyOf(next)).toMatch(/recall:KIWI=yes[\s\S]*recall:LIME=no/)
        const transfer = (yield* o.getThread(thread.id)).transfers.find((t) => t.consumedByRunId === next.id)!
        expect(transfer.reasons).toContain("divergent")
      })
    )
  }, 60_000)

  it("to 0 empties the thread; refused while a run is active and past the last run, writing nothing", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({})
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
        expect(yield* tagOf(o.rollback({ threadId: thread.id, toRunOrdinal: 2 }))).toBe("InvalidInput")
        yield* o.startRun({ threadId: thread.id, provider: alpha, message: "slow [[sleep:3000]]" })
        expect(yield* tagOf(o.rollback({ threadId: thread.id, toRunOrdinal: 0 }))).toBe("RunAlreadyActive")
        expect(yield* tagOf(o.rollback({ threadId: "thr_nope" as never, toRunOrdinal: 0 }))).toBe("ThreadNotFound")
        yield* o.interruptRun({ threadId: thread.id })
        const statuses = (yield* o.getThread(thread.id)).runs.map((r) => r.status)
        expect(statuses).toEqual(["completed", "interrupted"])
        expect(yield* tagOf(o.rollback({ threadId: thread.id, toRunOrdinal: 1, restoreFiles: true }))).toBe(
          "InvalidSourcePoint"
        )
        const empty = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 0 })
        expect(empty.runs.map((r) => r.status)).toEqual(["rolled_back", "rolled_back"])
        const fresh = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "[[recall:one]]", wait: true })
        expect(fresh.ordinal).toBe(3)
        expect(replyOf(fresh)).toContain("recall:one=no")
      })
    )
  }, 60_000)

  it("never changes the source's forks; supersedes a pending merge-back whose fork run was rolled back", async () => {
    await inTempRuntime((o) =>
      Effect.gen(function* () {
        const source = yield* o.createThread({})
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "first FIG", wait: true })
        yield* o.startRun({ threadId: source.id, provider: alpha, message: "second GRAPE", wait: true })
        const { thread: fork } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: "latest_stable" })
        yield* o.rollback({ threadId: source.id, toRunOrdinal: 1 })
        const run = yield* o.startRun({
          threadId: fork.id,
          provider: beta,
          message: "[[recall:FIG]] [[recall:GRAPE]]",
          wait: true
        })
        expect(replyOf(run)).toMatch(/recall:FIG=yes[\s\S]*recall:GRAPE=yes/)

        // The fork's work, merged back, then rolled back in the fork before the source took it in.
        const merged = yield* o.mergeBack({ forkThreadId: fork.id })
        yield* o.rollback({ threadId: fork.id, toRunOrdinal: 0 })
        const transfer = (yield* o.getThread(source.id)).transfers.find((t) => t.id === merged.id)
        expect(transfer?.status).toBe("superseded")
        const next = yield* o.startRun({ threadId: source.id, provider: alpha, message: "go on", wait: true })
        expect(next.items.filter((i) => i.type === "handoff_context")).toEqual([])
      })
    )
  }, 60_000)
})
