/**
 * Long threads end to end, with real scripted provider processes and SQLite: a thread
 * of hundreds of runs (built as real runs build them: the actor's own pure core,
 * through the store) whose actor passivates after every message, so that each
 * run.start activates it from its compact state and reads what it lacks on demand.
 */
import { providerRegistryLayer } from "@skein/adapters"
import { describe, expect, it } from "@effect/vitest"
import type { ContextTransfer, ProviderName, RunView, ThreadId } from "@skein/domain"
import { ProviderRegistry } from "@skein/domain"
import { ContextPlanning, Database, EventStore, runtimeOptions } from "@skein/runtime"
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import { join } from "node:path"
import { providersOf, seedRuns } from "../support/seed.js"
import { removeDir, tempDir, withRuntime } from "../support/runtime.js"

const alpha = "alpha" as ProviderName
const beta = "beta" as ProviderName

/** No provider thread is retired for its age here: the seeded ones carry native refs the provider knows. */
const overrides = { staleness: { maxForeignRuns: 100_000, maxChainedHandoffs: 100_000, deltaBudgetFraction: 1 } }
const options = runtimeOptions(overrides)

/** The store beside a runtime on the same database file (reads while the runtime runs). */
const storeOn = (dir: string) =>
  ManagedRuntime.make(
    Layer.mergeAll(EventStore.layer, providerRegistryLayer({ dataDir: dir })).pipe(
      Layer.provideMerge(Database.layer({ filename: join(dir, "skein.db") }))
    )
  )

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
