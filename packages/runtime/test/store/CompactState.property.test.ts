/**
 * Property: a thread actor deciding on its compact state decides exactly as it would on
 * the complete state. Random threads are driven through the actor's own pure core
 * (ContextPlanning, ThreadPlanner, Rollback) and appended through the store: runs on
 * providers with different capabilities that complete, fail, are interrupted or lose
 * their turn, with items of every kind, clean contexts, model changes, rollbacks and
 * their native settlements. Before each step, the decision (and the run's end, and a
 * rollback's plan) is taken three ways: on the complete state read from storage, on a
 * compact state freshly read (activation), and on a compact state kept up to date the
 * way the actor keeps it (events folded in, trimmed after each message); all read what
 * they lack through `EventStore.demand`. All three must agree, down to the handoff
 * material.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderCapabilities, RunId, ThreadEvent, ThreadId, TurnItemContent } from "@skein/domain"
import { ApprovalId, defaultCapabilities, ProviderName, ThreadCreated, ThreadId as ThreadIdSchema } from "@skein/domain"
import { Effect, Option } from "effect"
import fc from "fast-check"
import { decideContext, localHandoff } from "../../src/actors/ContextPlanning.js"
import type { ProviderInfo } from "../../src/actors/ThreadPlanner.js"
import { planBindNativeThread, planFinish, planItems, planRunStart } from "../../src/actors/ThreadPlanner.js"
import { planRollback, planRollbackSettled } from "../../src/lineage/Rollback.js"
import { runtimeOptions } from "../../src/RuntimeConfig.js"
import { EventStore } from "../../src/store/EventStore.js"
import { applyEvent } from "../../src/store/Projection.js"
import type { ThreadState } from "../../src/store/ThreadState.js"
import { itemsOf, runById, trimThread } from "../../src/store/ThreadState.js"
import { storeLayer } from "./support.js"

const provider = (name: string, capabilities: ProviderCapabilities): ProviderInfo => ({
  name: ProviderName.make(name),
  driver: "scripted",
  capabilities,
  runtimeMode: "default",
  model: null
})

const providers = [
  provider("alpha", defaultCapabilities({ fork: "at_turn", rollback: "native" })),
  provider("beta", defaultCapabilities({ handoffDelivery: ["preamble", "developer"] })),
  provider("gamma", defaultCapabilities({ resume: false })),
  provider("mute", defaultCapabilities({ handoffDelivery: [] }))
]

const itemKinds: ReadonlyArray<(n: number) => TurnItemContent> = [
  (n) => ({ type: "assistant_message", text: `done ${n}\nDecision: keep step ${n}` }),
  (n) => ({ type: "reasoning", text: `secret thought ${n}` }),
  (n) => ({ type: "command_execution", command: `npm test -- ${n % 3}`, exitCode: n % 4 === 0 ? 1 : 0, output: "ok" }),
  (n) => ({ type: "file_change", path: `src/f${n % 5}.ts`, kind: "modify", summary: "a\nb" }),
  (n) => ({ type: "plan", steps: [{ text: `step ${n}`, status: "in_progress" }] }),
  (n) => ({ type: "approval_request", approvalId: ApprovalId.make(`apr_${n}`), question: "may I?", status: "open" }),
  (n) => ({ type: "error", message: `oops ${n}`, code: null })
]

const runOp = fc.record({
  kind: fc.constant("run" as const),
  provider: fc.integer({ min: 0, max: providers.length - 1 }),
  outcome: fc.constantFrom("completed", "completed", "completed", "failed", "interrupted", "lost"),
  items: fc.array(fc.integer({ min: 0, max: itemKinds.length - 1 }), { maxLength: 4 }),
  cleanContext: fc.boolean().map((b) => b && Math.random() < 0.2),
  model: fc.constantFrom(null, null, null, "other-model"),
  message: fc.constantFrom("please go on", "you must never touch prod. Do it now", "and now?")
})
const rollbackOp = fc.record({
  kind: fc.constant("rollback" as const),
  back: fc.integer({ min: 0, max: 6 }),
  settle: fc.boolean()
})
const scenario = fc.array(fc.oneof({ weight: 9, arbitrary: runOp }, { weight: 1, arbitrary: rollbackOp }), {
  minLength: 5,
  maxLength: 45
})

/** Generated ids differ between two plans of the same thing: number them by first appearance. */
const normalised = (value: unknown): unknown => {
  const seen = new Map<string, string>()
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "string" && /^(run|itm|pth|xfr|hof|chk)_[0-9a-f]{20}$/.test(v)) {
        if (!seen.has(v)) seen.set(v, `id#${seen.size}`)
        return seen.get(v)
      }
      return v
    })
  )
}

const options = runtimeOptions({ staleness: { maxForeignRuns: 6, maxChainedHandoffs: 3, deltaBudgetFraction: 1 } })
const at = "2026-01-01T00:00:00.000Z"

type Op =
  typeof runOp extends fc.Arbitrary<infer R> ? R | (typeof rollbackOp extends fc.Arbitrary<infer B> ? B : never) : never

/**
 * Drives `ops` through the three states. With `lookBack`, after each run's end, every
 * run so far is also read by id with its items (what `run.get` asks of an older run).
 */
const check = (ops: ReadonlyArray<Op>, lookBack = false) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const threadId: ThreadId = ThreadIdSchema.make("thr_compact")
    yield* store.append({
      threadId,
      expectedSequence: 0,
      events: [
        new ThreadCreated({
          thread: {
            id: threadId,
            title: "t",
            workspace: null,
            lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: threadId },
            createdAt: at,
            updatedAt: at
          }
        })
      ]
    })
    // What the actor keeps: loaded once, then events folded in and trimmed after each step.
    let actor: ThreadState = Option.getOrThrow(yield* store.loadThread(threadId))
    const complete = () => Effect.map(store.loadCompleteThread(threadId), Option.getOrThrow)
    const fresh = () => Effect.map(store.loadThread(threadId), Option.getOrThrow)
    /** `f` on the complete state, a freshly read compact one and the actor's: all equal. */
    const agreed = <A>(f: (state: ThreadState) => A) =>
      Effect.gen(function* () {
        const whole = yield* complete()
        const expected = f(whole)
        const justRead = yield* fresh()
        const kept = actor
        const fromFresh = yield* store.demand(justRead, () => f(justRead))
        const fromActor = yield* store.demand(kept, () => f(kept))
        expect(normalised(fromFresh)).toEqual(normalised(expected))
        expect(normalised(fromActor)).toEqual(normalised(expected))
        trimThread(kept)
        return { expected, whole }
      })
    const commit = (events: ReadonlyArray<ThreadEvent>) =>
      Effect.gen(function* () {
        if (events.length === 0) return
        const stored = yield* store.append({ threadId, events, expectedSequence: actor.lastThreadSequence })
        for (const e of stored) actor = applyEvent(actor, e.event)
        trimThread(actor)
      })

    const runIds: Array<RunId> = []
    let n = 0
    for (const op of ops) {
      n++
      if (op.kind === "rollback") {
        const last = (yield* complete()).runCount
        const to = Math.max(0, last - op.back)
        const { expected: plan } = yield* agreed((s) =>
          planRollback(s, {
            toRunOrdinal: to,
            capabilitiesOf: (name) => providers.find((p) => p.name === name)?.capabilities,
            now: at
          })
        )
        yield* commit(plan.events)
        if (op.settle && plan.native.length > 0) {
          const results = plan.native.map((r, i) => ({
            providerThreadId: r.providerThreadId,
            detail: i % 2 === 0 ? null : "no"
          }))
          const { expected: settled } = yield* agreed((s) =>
            planRollbackSettled(s, { toRunOrdinal: to, results, now: at })
          )
          yield* commit(settled)
        }
        continue
      }
      const target = providers[op.provider]!
      const input = {
        provider: target,
        model: op.model,
        cleanContext: op.cleanContext,
        resumeFailed: false,
        budgetTokens: 2_000,
        options,
        inherited: null,
        incoming: []
      }
      const { expected: decision } = yield* agreed((s) => decideContext(s, input))
      if (decision._tag === "unsupported") continue
      const draft = localHandoff(decision, 2_000)
      const { expected: plan } = yield* agreed((s) =>
        planRunStart(s, {
          message: op.message,
          model: op.model,
          commandId: null,
          provider: target,
          decision,
          draft,
          extras: [],
          summaryBy: null,
          now: at
        })
      )
      yield* commit(plan.events)
      const pt = plan.context.providerThread
      if (pt.nativeRef === null && op.outcome !== "lost") {
        const { expected: bound } = yield* agreed((s) =>
          planBindNativeThread(s, {
            runId: plan.run.id,
            providerThreadId: pt.id,
            nativeRef: `native-${n}`,
            strength: "strong",
            forked: false,
            now: at
          })
        )
        yield* commit(bound)
      }
      const contents = op.items.map((k, i) => itemKinds[k]!(n * 10 + i))
      if (contents.length > 1) {
        const { expected: items } = yield* agreed((s) => planItems(s, plan.run.id, contents.slice(0, 1), at))
        yield* commit(items)
      }
      const { expected: finish } = yield* agreed((s) =>
        planFinish(s, {
          runId: plan.run.id,
          outcome: op.outcome === "lost" ? "failed" : op.outcome,
          failure: op.outcome === "completed" ? null : { reason: "provider_error", message: "no" },
          turnRef: op.outcome === "lost" || op.outcome === "failed" ? null : `turn-${n}`,
          items: contents.length > 1 ? contents.slice(1) : contents,
          checkpoint: null,
          now: at
        })
      )
      yield* commit(finish)
      runIds.push(plan.run.id)
      if (lookBack) yield* agreed((s) => runIds.map((id) => [runById(s, id), itemsOf(s, id)]))
    }
    // However it got there, the actor's compact state is what a fresh read gives.
    expect(actor).toEqual(yield* fresh())
  })

describe("compact thread state", () => {
  it("decides, plans and ends runs exactly as the complete state does", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, (ops) => Effect.runPromise(check(ops).pipe(Effect.provide(storeLayer())))),
      { numRuns: 60 }
    )
  }, 300_000)

  it("reads any earlier run by id, with its items, as the complete state holds them", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, (ops) => Effect.runPromise(check(ops, true).pipe(Effect.provide(storeLayer())))),
      { numRuns: 20 }
    )
  }, 300_000)
})
