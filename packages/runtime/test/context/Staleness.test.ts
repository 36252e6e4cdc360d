import { describe, expect, it } from "@effect/vitest"
import { defaultCapabilities, ProviderThreadId } from "@skein/domain"
import { Schema } from "effect"
import type { StalenessInput } from "../../src/context/index.js"
import {
  defaultStalenessPolicy,
  newProviderThread,
  StalenessPolicy,
  stalenessReasons
} from "../../src/context/index.js"
import { AT, p, settings, THREAD } from "./builder.js"

const pt = newProviderThread({
  id: ProviderThreadId.make("pth_a"),
  threadId: THREAD,
  provider: p("alpha"),
  driver: "scripted",
  settings: settings("m1"),
  at: AT
})

const quiet: StalenessInput = {
  providerThread: pt,
  capabilities: defaultCapabilities(),
  settings: settings("m1"),
  missingRuns: 3,
  chainedHandoffs: 2,
  deltaTokens: 500,
  budgetTokens: 16_000,
  cleanContext: false,
  resumeFailed: false,
  policy: defaultStalenessPolicy
}

describe("StalenessPolicy", () => {
  it("decodes defaults and config overrides, and rejects nonsense", () => {
    expect(defaultStalenessPolicy).toEqual({ maxForeignRuns: 50, maxChainedHandoffs: 8, deltaBudgetFraction: 1 })
    expect(Schema.decodeUnknownSync(StalenessPolicy)({ maxForeignRuns: 5 })).toEqual({
      maxForeignRuns: 5,
      maxChainedHandoffs: 8,
      deltaBudgetFraction: 1
    })
    expect(() => Schema.decodeUnknownSync(StalenessPolicy)({ maxChainedHandoffs: -1 })).toThrow()
    expect(() => Schema.decodeUnknownSync(StalenessPolicy)({ deltaBudgetFraction: 0 })).toThrow()
  })

  it("no signal, no reason", () => {
    expect(stalenessReasons(quiet)).toEqual([])
    expect(stalenessReasons({ ...quiet, settings: settings(null) })).toEqual([])
    expect(stalenessReasons({ ...quiet, missingRuns: 50, chainedHandoffs: 8, deltaTokens: 16_000 })).toEqual([])
    expect(
      stalenessReasons({
        ...quiet,
        missingRuns: 0,
        capabilities: defaultCapabilities({ resume: false }),
        deltaTokens: 99_999
      })
    ).toEqual([])
  })

  it.each([
    ["too_many_foreign_runs", { missingRuns: 51 }],
    ["too_many_chained_handoffs", { chainedHandoffs: 9 }],
    ["settings_incompatible", { settings: settings("m2") }],
    ["settings_incompatible", { settings: settings("m1", "full-access") }],
    ["resume_failed", { resumeFailed: true }],
    ["divergent", { providerThread: { ...pt, status: "divergent" as const } }],
    ["divergent", { providerThread: { ...pt, status: "rolled_back" as const } }],
    ["divergent", { providerThread: { ...pt, status: "stale" as const } }],
    ["divergent", { providerThread: { ...pt, status: "failed" as const } }],
    ["clean_context", { cleanContext: true }],
    ["delta_over_budget", { deltaTokens: 16_001 }],
    ["delta_over_budget", { deltaTokens: 8_001, policy: { ...defaultStalenessPolicy, deltaBudgetFraction: 0.5 } }],
    ["resume_unsupported", { capabilities: defaultCapabilities({ resume: false }) }]
  ] as const)("%s alone", (reason, patch) => {
    expect(stalenessReasons({ ...quiet, ...patch })).toEqual([reason])
  })

  it("several at once, in canonical order", () => {
    expect(stalenessReasons({ ...quiet, cleanContext: true, resumeFailed: true, missingRuns: 99 })).toEqual([
      "too_many_foreign_runs",
      "resume_failed",
      "clean_context"
    ])
  })
})
