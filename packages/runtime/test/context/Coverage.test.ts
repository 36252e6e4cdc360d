import { describe, expect, it } from "@effect/vitest"
import { ContextHandoffId, ProviderThreadId } from "@skein/domain"
import {
  chainedHandoffCount,
  contiguousRange,
  coveredOrdinals,
  liveHistory,
  liveSpan,
  missingFor,
  newProviderThread,
  nextRunOrdinal,
  targetProviderThread,
  withHandoff,
  withServedRun
} from "../../src/context/index.js"
import { putHandoff, putProviderThread, putRun } from "../../src/store/Projection.js"
import { fullProviderThread } from "../../src/store/ThreadState.js"
import { AT, addRun, newState, p, settings, simulateRun, THREAD } from "./builder.js"

describe("Coverage", () => {
  it("live history skips rolled-back and in-flight runs", () => {
    const s = newState()
    addRun(s, { provider: "alpha", message: "1" })
    addRun(s, { provider: "alpha", message: "2", status: "rolled_back" })
    addRun(s, { provider: "alpha", message: "3", status: "failed" })
    addRun(s, { provider: "alpha", message: "4", status: "interrupted" })
    addRun(s, { provider: "alpha", message: "5", status: "running" })
    expect(liveHistory(s, 6)).toEqual([1, 3, 4])
    expect(liveHistory(s, 3)).toEqual([1])
    expect(liveSpan(s, 6)).toEqual({ from: 1, to: 4 })
    expect(liveSpan(s, 1)).toBeNull()
    expect(nextRunOrdinal(s)).toBe(5)
    expect(contiguousRange(s, [1, 3, 4])).toEqual({ from: 1, to: 4 })
    expect(contiguousRange(s, [1, 4])).toBeNull()
    expect(contiguousRange(s, [])).toBeNull()
  })

  it("missingFor follows the gap after the last run, minus rolled-back runs", () => {
    const s = newState()
    const one = simulateRun(s, { provider: "alpha", message: "1" })
    simulateRun(s, { provider: "beta", message: "2" })
    simulateRun(s, { provider: "beta", message: "3", status: "rolled_back" })
    putRun(s, { ...s.runs.get(3)!, status: "rolled_back" })
    simulateRun(s, { provider: "beta", message: "4" })
    const alpha = fullProviderThread(s, one.providerThread!.id)!
    expect(missingFor(s, alpha, 5)).toEqual([2, 4])
    expect(missingFor(s, alpha, 3)).toEqual([2])
    expect([...coveredOrdinals(s, alpha)]).toEqual([1])
  })

  it("a superseded handoff reopens the runs it covered", () => {
    const s = newState()
    simulateRun(s, { provider: "alpha", message: "1" })
    simulateRun(s, { provider: "beta", message: "2" })
    const three = simulateRun(s, { provider: "alpha", message: "3" })
    const pt = three.providerThread!
    expect(missingFor(s, pt, 4)).toEqual([])
    expect([...coveredOrdinals(s, pt)].sort()).toEqual([1, 2, 3])
    putHandoff(s, { ...three.handoff!, status: "superseded" })
    expect(missingFor(s, pt, 4)).toEqual([2])
  })

  it("a provider thread that never ran counts its handoffs exactly", () => {
    const s = newState()
    simulateRun(s, { provider: "alpha", message: "1" })
    simulateRun(s, { provider: "alpha", message: "2" })
    const fresh = newProviderThread({
      id: ProviderThreadId.make("pth_x"),
      threadId: THREAD,
      provider: p("gamma"),
      driver: "scripted",
      settings: settings(),
      at: AT
    })
    expect(missingFor(s, fresh, 3)).toEqual([1, 2])
  })

  it("withServedRun / withHandoff update coverage, first/last run and native turns", () => {
    const h = ContextHandoffId.make("hof_a")
    let pt = newProviderThread({
      id: ProviderThreadId.make("pth_x"),
      threadId: THREAD,
      provider: p("alpha"),
      driver: "scripted",
      settings: settings(),
      nativeRef: "native-1",
      at: AT
    })
    expect(pt.nativeRefStrength).toBe("strong")
    pt = withServedRun(pt, { ordinal: 4, handoffId: h, turnRef: "turn-4", at: "later" })
    pt = withServedRun(pt, { ordinal: 6, at: "later" })
    pt = withServedRun(pt, { ordinal: 5, turnRef: "turn-5", at: "later" })
    pt = withServedRun(pt, { ordinal: 5, turnRef: "turn-5b", at: "later" })
    pt = withHandoff(pt, h, "later")
    expect(pt.coverage).toEqual({ nativeRunOrdinals: [4, 5, 6], handoffIds: [h] })
    expect(pt.handoffIds).toEqual([h])
    expect([pt.firstRunOrdinal, pt.lastRunOrdinal]).toEqual([4, 6])
    expect(pt.nativeTurns).toEqual([
      { runOrdinal: 4, turnRef: "turn-4" },
      { runOrdinal: 5, turnRef: "turn-5b" }
    ])
    expect(pt.updatedAt).toBe("later")
  })

  it("counts chained deltas since the last full summary; picks the most recent non-retired target", () => {
    const s = newState()
    simulateRun(s, { provider: "alpha", message: "1" })
    const two = simulateRun(s, { provider: "beta", message: "2" }) // full summary into beta
    simulateRun(s, { provider: "alpha", message: "3" })
    simulateRun(s, { provider: "beta", message: "4" }) // delta 1
    simulateRun(s, { provider: "alpha", message: "5" })
    const six = simulateRun(s, { provider: "beta", message: "6" }) // delta 2
    expect(six.resolution._tag).toBe("delta")
    expect(chainedHandoffCount(s, six.providerThread!)).toBe(2)
    expect(targetProviderThread(s, p("beta"))?.id).toBe(two.providerThread!.id)
    expect(targetProviderThread(s, p("gamma"))).toBeNull()
    putProviderThread(s, { ...six.providerThread!, status: "stale" })
    expect(targetProviderThread(s, p("beta"))).toBeNull()
  })
})
