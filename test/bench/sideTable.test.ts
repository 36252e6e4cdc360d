/**
 * The side-by-side bench's verdict and table (sideTable.ts): a figure within the guard or
 * beyond it, a throughput judged the other way round, a baseline at or below zero left
 * undecided; and the exact lines printed.
 */
import { describe, expect, it } from "@effect/vitest"
import { combined, type Figure, format, tableLines, withinGuard } from "./sideTable.js"

const latency = (before: number, after: number): Figure => ({ name: "dispatch p50", before, after, unit: "ms" })
const throughput = (before: number, after: number): Figure => ({
  name: "append ratio",
  before,
  after,
  higherIsBetter: true,
  unit: "ratio"
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

describe("figures taken in several processes", () => {
  const named = (name: string, before: number, after: number, detail?: string): Figure => ({
    name,
    before,
    after,
    unit: "ms",
    ...(detail === undefined ? {} : { detail })
  })

  it("takes the median of the befores and of the afters, and lists each process's ratio", () => {
    const figures = combined([
      [named("dispatch p50", 0.3, 0.33, "dispatch: 400 runs"), named("dispatch p99", 2, 2)],
      [named("dispatch p50", 0.4, 0.52), named("dispatch p99", 3, 6)],
      [named("dispatch p50", 0.35, 0.42), named("dispatch p99", 1, 1)]
    ])
    expect(figures.map(({ after, before, name }) => ({ name, before, after }))).toEqual([
      { name: "dispatch p50", before: 0.35, after: 0.42 },
      { name: "dispatch p99", before: 2, after: 2 }
    ])
    expect(figures[0]!.detail).toBe(
      "dispatch p50: after/before in each of 3 processes 1.10x, 1.30x, 1.20x, the row their medians; " +
        "in the first process, dispatch: 400 runs"
    )
    expect(figures[1]!.detail).toBe(
      "dispatch p99: after/before in each of 3 processes 1.00x, 2.00x, 1.00x, the row their medians"
    )
  })

  it("takes the middle two's mean for an even count, over the processes that have the figure", () => {
    const figures = combined([
      [named("rpc", 1, 2)],
      [named("rpc", 3, 4)],
      [],
      [named("rpc", 5, 6)],
      [named("rpc", 7, 8)]
    ])
    expect(figures.map(({ after, before }) => [before, after])).toEqual([[4, 5]])
  })

  it("shows a time in ms or in µs, and a ratio bare", () => {
    expect([format("ms", 0.4321), format("µs", 0.0384), format("ratio", 0.456)]).toEqual(["0.43 ms", "38 µs", "0.46"])
  })
})
