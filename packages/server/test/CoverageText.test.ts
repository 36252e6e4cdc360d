import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import { ordinalRanges } from "../src/CoverageText.js"

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
