import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import type { ThreadView } from "@skein/domain"
import { laneCoverage, ordinalRanges } from "../src/CoverageText.js"

/** The ordinals a ranges text names (`1-3,7` → 1, 2, 3, 7). */
const expand = (text: string): Array<number> =>
  text === ""
    ? []
    : text.split(",").flatMap((part) => {
        const [from, to = from] = part.split("-").map(Number) as [number, number?]
        return Array.from({ length: to! - from + 1 }, (_, i) => from + i)
      })

describe("ordinalRanges", () => {
  it("writes the seeds' way", () => {
    expect(ordinalRanges([1, 2, 3, 4, 5, 9])).toBe("1-5,9")
    expect(ordinalRanges([8, 6, 7, 7])).toBe("6-8")
    expect(ordinalRanges([])).toBe("")
  })

  it("names exactly the ordinals given, in order, with no two ranges that touch", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.array(FastCheck.integer({ min: 1, max: 60 })), (ordinals) => {
        const text = ordinalRanges(ordinals)
        expect(expand(text)).toEqual([...new Set(ordinals)].sort((a, b) => a - b))
        const parts = text === "" ? [] : text.split(",").map((p) => p.split("-").map(Number))
        for (let i = 1; i < parts.length; i++) expect(parts[i]![0]!).toBeGreaterThan(parts[i - 1]!.at(-1)! + 1)
      })
    )
  })
})

describe("laneCoverage", () => {
  /** What laneCoverage reads of a view: provider threads and handoffs, by creation. */
  const view = (
    providerThreads: ReadonlyArray<{ id: string; provider: string; native: Array<number>; handoffIds: Array<string> }>,
    handoffs: ReadonlyArray<string>
  ) =>
    ({
      providerThreads: providerThreads.map((pt, i) => ({
        id: pt.id,
        provider: pt.provider,
        createdAt: `2026-01-01T00:00:0${i}Z`,
        coverage: { nativeRunOrdinals: pt.native, handoffIds: pt.handoffIds }
      })),
      handoffs: handoffs.map((id, i) => ({ id, createdAt: `2026-01-01T00:00:0${i}Z` }))
    }) as unknown as ThreadView

  it("labels lanes by provider, numbered in creation order, with their native runs and handoffs", () => {
    const lanes = laneCoverage(
      view(
        [
          { id: "pt_c", provider: "codex", native: [1, 2, 3, 4, 5, 9], handoffIds: ["h2"] },
          { id: "pt_l", provider: "claude", native: [6, 7, 8], handoffIds: ["h1"] }
        ],
        ["h1", "h2"]
      )
    )
    expect(lanes.map((lane) => lane.text)).toEqual(["C1 1-5,9 + H2", "L1 6-8 + H1"])
  })

  it("counts the handoffs a window of a long thread does not hold, never showing their ids", () => {
    const [lane] = laneCoverage(
      view([{ id: "pt_c", provider: "codex", native: [4801, 4802], handoffIds: ["old1", "old2", "h9"] }], ["h9"])
    )
    expect(lane!.text).toBe("C1 4801-4802 + 2 earlier + H1")
  })
})
