/**
 * The side-by-side bench's verdict and table (sideTable.ts): a figure within the guard or
 * beyond it, a throughput judged the other way round, a baseline at or below zero left
 * undecided; and the exact lines printed.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Figure, tableLines, withinGuard } from "./sideTable.js"

const ms = (x: number) => `${x.toFixed(2)} ms`
const latency = (before: number, after: number): Figure => ({ name: "dispatch p50", before, after, format: ms })
const throughput = (before: number, after: number): Figure => ({
  name: "append ratio",
  before,
  after,
  higherIsBetter: true,
  format: (x) => x.toFixed(2)
})

describe("the side-by-side verdict", () => {
  it("holds a latency to at most 1.25 times the baseline's", () => {
    expect(withinGuard(latency(2, 2.5))).toBe(true)
    expect(withinGuard(latency(2, 2.52))).toBe(false)
    expect(withinGuard(latency(2, 1))).toBe(true)
  })

  it("holds a throughput to at least 1/1.25 of the baseline's", () => {
    expect(withinGuard(throughput(0.5, 0.4))).toBe(true)
    expect(withinGuard(throughput(0.5, 0.39))).toBe(false)
    expect(withinGuard(throughput(0.5, 0.9))).toBe(true)
  })

  it("leaves a figure undecided when the baseline's is not above zero", () => {
    expect(withinGuard(latency(-0.4, 1.2))).toBeUndefined()
    expect(withinGuard(latency(0, 0))).toBeUndefined()
  })

  it("prints both columns, the ratio, the goal and the verdict, aligned", () => {
    expect(tableLines([latency(2, 2.6), throughput(0.5, 0.45), latency(-1, 1)], "71ac524")).toEqual([
      "figure       | before (71ac524) | after (this checkout) | after/before |     goal |      met?",
      "-------------|------------------|-----------------------|--------------|----------|----------",
      "dispatch p50 |          2.00 ms |               2.60 ms |        1.30x | <= 1.25x |    MISSED",
      "append ratio |             0.50 |                  0.45 |        0.90x | >= 0.80x |       met",
      "dispatch p50 |         -1.00 ms |               1.00 ms |          n/a | <= 1.25x | undecided"
    ])
  })
})
