import { describe, expect, it } from "@effect/vitest"
import type { ProviderThread, StalenessReason } from "@skein/domain"
import { defaultCapabilities, UnsupportedContextTransfer } from "@skein/domain"
import * as fc from "fast-check"
import type { StalenessPolicy } from "../../src/context/index.js"
import {
  defaultStalenessPolicy,
  isLiveRun,
  resolveStartContext,
  unsupportedContextError
} from "../../src/context/index.js"
import type { ThreadState } from "../../src/store/ThreadState.js"
import { fullProviderThread } from "../../src/store/ThreadState.js"
import { putHandoff, putProviderThread, putRun } from "../../src/store/Projection.js"
import type { SimulateOptions } from "./builder.js"
import { coverageMultiplicity, newState, resolveInput, settings, simulateRun } from "./builder.js"

const ptOf = (state: ThreadState, id: string | null | undefined): ProviderThread => {
  const pt = id ? fullProviderThread(state, id as ProviderThread["id"]) : undefined
  if (pt === undefined) throw new Error(`no provider thread ${id}`)
  return pt
}

describe("resolveStartContext: the seed example", () => {
  it("runs 1-5 alpha, 6-8 beta, 9 alpha: H1 full 1-5 into a new L1, H2 delta 6-8 into C1", () => {
    const state = newState()
    const first = simulateRun(state, { provider: "alpha", message: "run 1" })
    expect(first.resolution._tag).toBe("none")
    expect(first.resolution._tag === "none" && first.resolution.providerThread).toBeNull()
    const c1 = first.providerThread!.id
    for (let i = 2; i <= 5; i++) {
      const r = simulateRun(state, { provider: "alpha", message: `run ${i}` })
      expect(r.resolution).toMatchObject({ _tag: "none", providerThread: { id: c1 }, reasons: [] })
    }

    const six = simulateRun(state, { provider: "beta", message: "run 6" })
    expect(six.resolution).toMatchObject({
      _tag: "portable",
      into: "new",
      providerThread: null,
      replaces: null,
      strategy: "full_thread_summary",
      covered: { from: 1, to: 5 },
      reasons: []
    })
    const l1 = six.providerThread!.id
    const h1 = six.handoff!
    expect(h1.coveredRunOrdinals).toEqual({ from: 1, to: 5 })
    expect(h1.strategy).toBe("full_thread_summary")

    for (let i = 7; i <= 8; i++) {
      const r = simulateRun(state, { provider: "beta", message: `run ${i}` })
      expect(r.resolution).toMatchObject({ _tag: "none", providerThread: { id: l1 } })
    }

    const nine = simulateRun(state, { provider: "alpha", message: "run 9" })
    expect(nine.resolution).toMatchObject({
      _tag: "delta",
      providerThread: { id: c1 },
      strategy: "delta_since_target_last_seen",
      covered: { from: 6, to: 8 },
      reasons: []
    })
    const h2 = nine.handoff!
    expect(h2.coveredRunOrdinals).toEqual({ from: 6, to: 8 })
    expect(h2.summaryText).toContain("runs 6-8")
    expect(h2.summaryText).toContain("run 7")
    expect(h2.summaryText).not.toContain("run 5")

    const C1 = ptOf(state, c1)
    const L1 = ptOf(state, l1)
    expect(C1.coverage).toEqual({ nativeRunOrdinals: [1, 2, 3, 4, 5, 9], handoffIds: [h2.id] })
    expect(L1.coverage).toEqual({ nativeRunOrdinals: [6, 7, 8], handoffIds: [h1.id] })
    expect([C1.firstRunOrdinal, C1.lastRunOrdinal, L1.firstRunOrdinal, L1.lastRunOrdinal]).toEqual([1, 9, 6, 8])
    expect(state.providerThreads.size).toBe(2)
    expect(nine.resolution.explanation).toMatch(/delta handoff for runs 6-8/)
    expect(six.resolution.explanation).toMatch(/full summary of runs 1-5/)
  })
})

/** alpha 1, beta 2, alpha 3 (delta 2), beta 4 — then run 5 on alpha. */
const baseline = (run4: Partial<SimulateOptions> = {}): { state: ThreadState; alpha: ProviderThread } => {
  const state = newState()
  simulateRun(state, { provider: "alpha", message: "build the parser" })
  simulateRun(state, { provider: "beta", message: "add tests" })
  const three = simulateRun(state, { provider: "alpha", message: "fix the lexer" })
  expect(three.resolution._tag).toBe("delta")
  simulateRun(state, { provider: "beta", message: "document it", ...run4 })
  return { state, alpha: three.providerThread! }
}

const manyFiles = Array.from({ length: 400 }, (_, i) => ({
  type: "file_change" as const,
  path: `src/generated/module_${i}/component_with_a_long_name_${i}.ts`,
  kind: "add" as const,
  summary: `generated component number ${i} with its own descriptive summary line`
}))

describe("resolveStartContext: staleness signals, one at a time", () => {
  const cases: ReadonlyArray<{
    reason: StalenessReason
    run4?: Partial<SimulateOptions>
    run5?: Partial<SimulateOptions>
    retire?: ProviderThread["status"]
  }> = [
    { reason: "too_many_foreign_runs", run5: { policy: { ...defaultStalenessPolicy, maxForeignRuns: 0 } } },
    { reason: "too_many_chained_handoffs", run5: { policy: { ...defaultStalenessPolicy, maxChainedHandoffs: 0 } } },
    { reason: "settings_incompatible", run5: { settings: settings("a-different-model") } },
    { reason: "settings_incompatible", run5: { settings: settings(null, "full-access") } },
    { reason: "resume_failed", run5: { resumeFailed: true } },
    { reason: "divergent", retire: "divergent" },
    { reason: "divergent", retire: "rolled_back" },
    { reason: "divergent", retire: "failed" },
    { reason: "clean_context", run5: { cleanContext: true } },
    { reason: "delta_over_budget", run4: { items: manyFiles }, run5: { budgetTokens: 1024 } },
    { reason: "resume_unsupported", run5: { capabilities: defaultCapabilities({ resume: false }) } }
  ]

  it("no signal: a delta for run 4 into the alpha thread", () => {
    const { alpha, state } = baseline()
    const five = simulateRun(state, { provider: "alpha", message: "ship it" })
    expect(five.resolution).toMatchObject({
      _tag: "delta",
      providerThread: { id: alpha.id },
      covered: { from: 4, to: 4 },
      reasons: []
    })
  })

  it.each(cases)(
    "$reason ($retire) alone: full summary into a new provider thread",
    ({ reason, retire, run4, run5 }) => {
      const { alpha, state } = baseline(run4)
      if (retire) putProviderThread(state, { ...fullProviderThread(state, alpha.id)!, status: retire })
      const five = simulateRun(state, { provider: "alpha", message: "ship it", ...run5 })
      expect(five.resolution).toMatchObject({
        _tag: "portable",
        into: "new",
        providerThread: null,
        replaces: { id: alpha.id },
        strategy: "full_thread_summary",
        covered: { from: 1, to: 4 },
        reasons: [reason]
      })
      expect(five.resolution.explanation).toMatch(/stale/)
      expect(five.providerThread!.id).not.toBe(alpha.id)
      expect(five.providerThread!.coverage.nativeRunOrdinals).toEqual([5])
      expect(fullProviderThread(state, alpha.id)!.status).toBe("stale")
    }
  )

  it("a retired (stale) thread is never the target again: the replacement is", () => {
    const { state } = baseline()
    const five = simulateRun(state, { provider: "alpha", message: "restart", cleanContext: true })
    const six = simulateRun(state, { provider: "alpha", message: "go on" })
    expect(six.resolution).toMatchObject({ _tag: "none", providerThread: { id: five.providerThread!.id } })
  })

  it("stale with nothing missed and settings changed still starts fresh", () => {
    const state = newState()
    simulateRun(state, { provider: "alpha", message: "one" })
    const two = simulateRun(state, { provider: "alpha", message: "two", settings: settings("bigger-model") })
    expect(two.resolution).toMatchObject({
      _tag: "portable",
      into: "new",
      covered: { from: 1, to: 1 },
      reasons: ["settings_incompatible"]
    })
  })

  it("without a resume capability but nothing missed, the thread is kept", () => {
    const state = newState()
    const one = simulateRun(state, { provider: "alpha", message: "one" })
    const two = simulateRun(state, {
      provider: "alpha",
      message: "two",
      capabilities: defaultCapabilities({ resume: false })
    })
    expect(two.resolution).toMatchObject({ _tag: "none", providerThread: { id: one.providerThread!.id }, reasons: [] })
  })
})

describe("resolveStartContext: unsupported and the other shapes", () => {
  const mute = defaultCapabilities({ handoffDelivery: [] })

  it("a handoff is needed but delivery is empty: unsupported with an actionable detail", () => {
    const state = newState()
    simulateRun(state, { provider: "alpha", message: "one" })
    const two = simulateRun(state, { provider: "beta", message: "two", capabilities: mute })
    expect(two.resolution._tag).toBe("unsupported")
    if (two.resolution._tag !== "unsupported") return
    expect(two.resolution.detail).toContain("run 1")
    expect(two.resolution.detail).toContain("handoffDelivery is empty")
    const error = unsupportedContextError(two.resolution)
    expect(error).toBeInstanceOf(UnsupportedContextTransfer)
    expect(error.message).toContain('Provider "beta"')
    // A delta would be needed too.
    const state2 = newState()
    simulateRun(state2, { provider: "alpha", message: "one" })
    simulateRun(state2, { provider: "beta", message: "two" })
    const three = simulateRun(state2, { provider: "alpha", message: "three", capabilities: mute })
    expect(three.resolution._tag).toBe("unsupported")
  })

  it("no handoff needed: empty delivery is fine", () => {
    const state = newState()
    const one = simulateRun(state, { provider: "alpha", message: "one", capabilities: mute })
    expect(one.resolution).toMatchObject({ _tag: "none", providerThread: null, reasons: [] })
    const two = simulateRun(state, { provider: "alpha", message: "two", capabilities: mute })
    expect(two.resolution._tag).toBe("none")
  })

  it("rolled-back and in-flight runs are not history", () => {
    const state = newState()
    simulateRun(state, { provider: "alpha", message: "one" })
    simulateRun(state, { provider: "beta", message: "two", status: "rolled_back" })
    const three = simulateRun(state, { provider: "alpha", message: "three" })
    expect(three.resolution).toMatchObject({ _tag: "none", reasons: [] })
    const four = simulateRun(state, { provider: "beta", message: "four" })
    expect(four.resolution).toMatchObject({ _tag: "delta", covered: { from: 3, to: 3 } })
  })

  it("missed runs in two stretches: a full summary into the existing thread", () => {
    const state = newState()
    simulateRun(state, { provider: "alpha", message: "one" })
    simulateRun(state, { provider: "beta", message: "two" })
    const three = simulateRun(state, { provider: "alpha", message: "three" }) // delta 2
    simulateRun(state, { provider: "beta", message: "four" })
    // The delta that told alpha about run 2 is superseded (e.g. regenerated elsewhere).
    const h = three.handoff!
    putHandoff(state, { ...h, status: "superseded" })
    const five = resolveStartContext(resolveInput(state, { provider: "alpha" }))
    expect(five).toMatchObject({
      _tag: "portable",
      into: "existing",
      providerThread: { id: three.providerThread!.id },
      covered: { from: 1, to: 4 },
      reasons: []
    })
  })

  it("is deterministic", () => {
    const { state } = baseline()
    const input = resolveInput(state, { provider: "alpha" })
    expect(resolveStartContext(input)).toEqual(resolveStartContext(input))
  })
})

describe("resolveStartContext: coverage property", () => {
  const step = fc.record({
    provider: fc.constantFrom("alpha", "beta", "gamma"),
    status: fc.constantFrom("completed", "completed", "completed", "failed", "interrupted", "rolled_back"),
    cleanContext: fc.constantFrom(false, false, false, false, true),
    model: fc.constantFrom(null, null, null, "m2"),
    resumeFailed: fc.constantFrom(false, false, false, false, true)
  })

  it("after each run, its provider thread covers every earlier live run exactly once", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 4 }),
        (steps, maxForeignRuns, maxChainedHandoffs) => {
          const policy: StalenessPolicy = { ...defaultStalenessPolicy, maxForeignRuns, maxChainedHandoffs }
          const state = newState()
          for (const s of steps) {
            const r = simulateRun(state, {
              provider: s.provider,
              message: `message on ${s.provider}`,
              status: s.status === "rolled_back" ? "completed" : s.status,
              cleanContext: s.cleanContext,
              resumeFailed: s.resumeFailed,
              settings: settings(s.model),
              policy
            })
            const pt = r.providerThread!
            const counts = coverageMultiplicity(state, pt)
            for (const run of state.runs.values()) {
              if (run.ordinal >= r.run.ordinal || !isLiveRun(run)) continue
              if (counts.get(run.ordinal) !== 1) {
                throw new Error(
                  `run ${run.ordinal} covered ${counts.get(run.ordinal) ?? 0} times by ${pt.id} (${r.resolution._tag})`
                )
              }
            }
            expect(counts.get(r.run.ordinal)).toBe(1)
            // A rollback of the newest run (what rollback to N-1 does to runs and handoffs).
            if (s.status === "rolled_back") {
              putRun(state, { ...r.run, status: "rolled_back" })
              for (const { full: pt2 } of [...state.providerThreads.values()]) {
                if (pt2!.coverage.nativeRunOrdinals.includes(r.run.ordinal)) {
                  putProviderThread(state, { ...pt2!, status: "divergent" })
                }
              }
            }
          }
        }
      ),
      { numRuns: 300 }
    )
  })
})
