/**
 * Long threads for benches and tests, built fast but as real runs build them: each run is
 * decided, planned and ended by the thread actor's own pure core (`ContextPlanning`,
 * `ThreadPlanner`) over the thread's state in memory, and its events are appended
 * through the EventStore with the same fencing as the actor's. Only the provider is
 * missing: it "answers" `ok` with a turn handle, and a new provider thread gets a
 * native ref the scripted provider does not know (a real run that resumes one falls
 * back to a fresh provider thread, as it would after the provider lost it).
 */
import type { ProviderAdapter, ProviderName, ThreadEvent, ThreadId } from "@skein/domain"
import {
  ContextPlanning,
  EventStore,
  applyEvent,
  runtimeOptions,
  ThreadPlanner,
  type RuntimeOverrides,
  type ThreadState
} from "@skein/runtime"
import { Effect, Option } from "effect"

export type ProviderInfo = ThreadPlanner.ProviderInfo

export const infoOf = (adapter: ProviderAdapter): ProviderInfo => ({
  name: adapter.name,
  driver: adapter.driver,
  capabilities: adapter.capabilities,
  runtimeMode: adapter.runtimeMode,
  model: adapter.model
})

/** alpha for nine runs in ten, beta for the tenth: deltas, chains of them, retired provider threads. */
export const mostlyAlpha =
  (alpha: ProviderInfo, beta: ProviderInfo) =>
  (ordinal: number): ProviderInfo =>
    ordinal % 10 === 0 ? beta : alpha

/** Adds `count` completed runs to an existing thread, one provider per ordinal. */
export const seedRuns = (
  threadId: ThreadId,
  count: number,
  providerOf: (ordinal: number) => ProviderInfo,
  overrides: RuntimeOverrides = {}
) =>
  Effect.gen(function* () {
    const options = runtimeOptions(overrides)
    const store = yield* EventStore
    let state: ThreadState = Option.getOrThrow(yield* store.loadCompleteThread(threadId))
    const commit = (events: ReadonlyArray<ThreadEvent>) =>
      Effect.gen(function* () {
        if (events.length === 0) return
        const stored = yield* store.append({ threadId, events, expectedSequence: state.lastThreadSequence })
        for (const e of stored) state = applyEvent(state, e.event)
      })
    const at = new Date().toISOString()
    for (let i = 0; i < count; i++) {
      const ordinal = state.runCount + 1
      const provider = providerOf(ordinal)
      const decision = ContextPlanning.decideContext(state, {
        provider,
        model: null,
        cleanContext: false,
        resumeFailed: false,
        budgetTokens: options.handoffBudgetTokens,
        options,
        inherited: null,
        incoming: []
      })
      if (decision._tag === "unsupported") return yield* Effect.dieMessage(decision.detail)
      const draft = ContextPlanning.localHandoff(decision, options.handoffBudgetTokens)
      const plan = ThreadPlanner.planRunStart(state, {
        message: `Run ${ordinal}: carry on with the importer, step ${ordinal}; keep the tests green.`,
        model: null,
        commandId: null,
        provider,
        decision,
        draft,
        extras: [],
        summaryBy: null,
        now: at
      })
      yield* commit(plan.events)
      const pt = plan.context.providerThread
      if (pt.nativeRef === null) {
        yield* commit(
          ThreadPlanner.planBindNativeThread(state, {
            runId: plan.run.id,
            providerThreadId: pt.id,
            nativeRef: `seeded-${pt.id}`,
            strength: "strong",
            forked: false,
            now: at
          })
        )
      }
      yield* commit(
        ThreadPlanner.planFinish(state, {
          runId: plan.run.id,
          outcome: "completed",
          failure: null,
          turnRef: `seeded-turn-${ordinal}`,
          items: [{ type: "assistant_message", text: `ok: step ${ordinal} done` }],
          checkpoint: null,
          now: at
        })
      )
    }
  })

/** The provider instances of a registry, by name. */
export const providersOf = (adapters: ReadonlyArray<ProviderAdapter>) => {
  const byName = new Map(adapters.map((a) => [a.name as string, infoOf(a)]))
  return (name: string): ProviderInfo => byName.get(name) ?? (undefined as never)
}

export type { ProviderName }
