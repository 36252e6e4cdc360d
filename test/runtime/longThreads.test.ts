/**
 * Long threads end to end, with real scripted provider processes and SQLite: a thread
 * of hundreds of runs (built as real runs build them: the actor's own pure core,
 * through the store) whose actor passivates after every message, so that each
 * run.start activates it from its compact state and reads what it lacks on demand.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ContextTransfer, ProviderName, RunView, ThreadId } from "@skein/domain"
import { ProviderRegistry, ThreadView } from "@skein/domain"
import { ContextPlanning, EventStore, runtimeOptions } from "@skein/runtime"
import { Effect, Option, Schema } from "effect"
import { providersOf, seedRuns } from "../support/seed.js"
import { removeDir, storeOn, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

/** No provider thread is retired for its age here: the seeded ones carry native refs the provider knows. */
const overrides = { staleness: { maxForeignRuns: 100_000, maxChainedHandoffs: 100_000, deltaBudgetFraction: 1 } }
const options = runtimeOptions(overrides)

describe("long threads", () => {
  it("activated from its compact state for every run, a long thread's actor decides as its complete state does", async () => {
    const dir = tempDir()
    const store = storeOn(dir)
    try {
      // Real first runs on alpha and beta: native threads the scripted provider knows.
      const threadId = await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ title: "long" })
            yield* o.startRun({ threadId: thread.id, provider: alpha, message: "one", wait: true })
            yield* o.startRun({ threadId: thread.id, provider: beta, message: "two", wait: true })
            return thread.id
          }),
        overrides
      )
      const info = providersOf((await store.runPromise(ProviderRegistry)).adapters)
      // 400 more on those two provider threads, in alternating stretches.
      await store.runPromise(seedRuns(threadId, 400, (o) => (o % 7 < 5 ? info("alpha") : info("beta")), overrides))

      const steps: ReadonlyArray<{
        readonly provider: ProviderName
        readonly cleanContext?: boolean
        readonly model?: string
      }> = [
        { provider: beta },
        { provider: beta },
        { provider: alpha },
        { provider: beta, model: "another-model" },
        { provider: alpha, cleanContext: true },
        { provider: beta },
        { provider: alpha }
      ]
      const complete = (id: ThreadId) =>
        Effect.promise(() =>
          store.runPromise(Effect.flatMap(EventStore, (s) => Effect.map(s.loadCompleteThread(id), Option.getOrThrow)))
        )
      await withRuntime(
        dir,
        (o) =>
          Effect.gen(function* () {
            const tags: Array<string> = []
            for (const [i, step] of steps.entries()) {
              const before = yield* complete(threadId)
              const expected = ContextPlanning.decideContext(before, {
                provider: info(step.provider),
                model: step.model ?? null,
                cleanContext: step.cleanContext ?? false,
                resumeFailed: false,
                budgetTokens: options.handoffBudgetTokens,
                options,
                inherited: null,
                incoming: []
              })
              if (expected._tag === "unsupported") throw new Error(expected.detail)
              const run: RunView = yield* o.startRun({
                threadId,
                provider: step.provider,
                message: `step ${i} [[recall:seeded]]`,
                wait: true,
                ...(step.cleanContext ? { cleanContext: true } : {}),
                ...(step.model ? { model: step.model } : {})
              })
              expect(run.status).toBe("completed")
              expect(run.ordinal).toBe(before.runCount + 1)
              expect(run.contextResolution).toBe(expected._tag)
              tags.push(expected._tag)
              const after = yield* complete(threadId)
              if (expected._tag === "delta" || expected._tag === "portable") {
                const handoff = after.handoffs.get(run.contextHandoffId!)!.full!
                expect(handoff.coveredRunOrdinals).toEqual(expected.covered)
                expect(handoff.strategy).toBe(expected.strategy)
                // The same material: the same summary, line for line.
                expect(handoff.summaryText).toBe(
                  ContextPlanning.localHandoff(expected, options.handoffBudgetTokens)!.summaryText
                )
                const transfer: ContextTransfer = after.transfers.get(handoff.transferId)!
                expect(transfer.reasons).toEqual(expected.reasons)
              }
              if (expected.providerThread !== null) expect(run.providerThreadId).toBe(expected.providerThread.id)
              else expect(before.providerThreads.has(run.providerThreadId!)).toBe(false)
              if ("replaces" in expected && expected.replaces !== null) {
                expect(after.providerThreads.get(expected.replaces.id)!.head.status).toBe("stale")
              }
            }
            // The steps went through every kind of decision the actor takes on its own runs.
            expect(new Set(tags)).toEqual(new Set(["delta", "none", "portable"]))
          }),
        { ...overrides, passivateAfterMs: 0 }
      )
    } finally {
      await store.dispose()
      removeDir(dir)
    }
  }, 120_000)
})

describe("long thread views", () => {
  it("pages hold the whole view's runs, a window at a time; a 1 MiB message appears once", async () => {
    const dir = tempDir()
    const store = storeOn(dir)
    try {
      const threadId = await withRuntime(dir, (o) =>
        Effect.map(o.createThread({ title: "paged" }), (thread) => thread.id)
      )
      const info = providersOf((await store.runPromise(ProviderRegistry)).adapters)
      await store.runPromise(seedRuns(threadId, 230, (o) => (o % 10 === 0 ? info("beta") : info("alpha"))))
      // As long as a message may be (1 MiB of characters, the `Message` schema's limit).
      const big = `big-${"0123456789abcdef".repeat(65_536)}`.slice(0, 1_048_576)
      await withRuntime(dir, (o) =>
        Effect.gen(function* () {
          yield* o.startRun({ threadId, provider: beta, message: big, wait: true })
          yield* o.startRun({ threadId, provider: alpha, message: "after it", wait: true })
          const whole = yield* o.getThread(threadId)
          expect(whole.runs.length).toBe(232)
          expect(whole.page).toBeUndefined()
          const pages = []
          for (let after = 0; after < 232; after += 50) {
            const page = yield* o.getThread(threadId, { runs: { after, limit: 50 } })
            expect(page.page).toMatchObject({
              runCount: 232,
              from: after + 1,
              to: Math.min(232, after + 50),
              items: true
            })
            const ids = new Set(page.runs.map((r) => r.id))
            expect(page.handoffs).toEqual(
              whole.handoffs.filter((h) => h.targetRunId !== null && ids.has(h.targetRunId))
            )
            expect(page.checkpoints).toEqual(whole.checkpoints.filter((c) => ids.has(c.runId)))
            // Provider threads with their per-run lists cut to the page.
            for (const pt of page.providerThreads) {
              const all = whole.providerThreads.find((p) => p.id === pt.id)!
              const inPage = (o: number) => o > after && o <= after + 50
              expect(pt.coverage.nativeRunOrdinals).toEqual(all.coverage.nativeRunOrdinals.filter(inPage))
              expect(pt.nativeTurns).toEqual(all.nativeTurns.filter((t) => inPage(t.runOrdinal)))
              expect({ ...pt, coverage: null, nativeTurns: null }).toEqual({
                ...all,
                coverage: null,
                nativeTurns: null
              })
            }
            pages.push(...page.runs)
          }
          expect(pages).toEqual(whole.runs)
          const newest = yield* o.getThread(threadId, { runs: { limit: 2 }, items: false })
          expect(newest.runs.map((r) => [r.ordinal, r.items.length])).toEqual([
            [231, 0],
            [232, 0]
          ])
          const json = (view: unknown) => JSON.stringify(Schema.encodeSync(ThreadView)(view as ThreadView))
          expect(json(whole).split(big).length - 1).toBe(1)
          const around = yield* o.getThread(threadId, { runs: { before: 232, limit: 1 } })
          expect(around.runs.map((r) => r.message === big)).toEqual([true])
          expect(json(around).split(big).length - 1).toBe(1)
        })
      )
    } finally {
      await store.dispose()
      removeDir(dir)
    }
  }, 120_000)
})
