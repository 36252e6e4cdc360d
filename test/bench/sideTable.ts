/**
 * The side-by-side bench's verdict: each figure before (the baseline) and after (this
 * checkout), their ratio after/before, and whether it stays within the guard: at most
 * GUARD times the baseline's cost (for a figure where more is better, at least 1/GUARD
 * of it). A figure is plain data, so that figures taken in several processes can be
 * combined (`combined`).
 */

export const GUARD = 1.25

/** How a figure is shown: a time in ms shown as ms or as µs, or a bare ratio. */
export type Unit = "ms" | "µs" | "ratio"

export interface Figure {
  readonly name: string
  readonly before: number
  readonly after: number
  /** True for a figure where more is better (a throughput ratio); false or absent for a latency. */
  readonly higherIsBetter?: boolean
  readonly unit: Unit
  /** How it was measured and what lies beside it, printed under the table. */
  readonly detail?: string
}

/** `value` as its unit shows it (a time is always given in ms). */
export const format = (unit: Unit, value: number): string => {
  switch (unit) {
    case "ms":
      return `${value.toFixed(2)} ms`
    case "µs":
      return `${(value * 1000).toFixed(0)} µs`
    case "ratio":
      return value.toFixed(2)
  }
}

const median = (xs: ReadonlyArray<number>): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * The same figures taken in several processes, one figure each: the median of the
 * befores and the median of the afters, each process's ratio in the detail, then the
 * first process's own detail. A figure's place is the first process's; a figure some
 * process lacks is combined over those that have it.
 */
export const combined = (runs: ReadonlyArray<ReadonlyArray<Figure>>): Array<Figure> =>
  (runs[0] ?? []).map((first) => {
    const taken = runs.flatMap((figures) => figures.filter((figure) => figure.name === first.name))
    const ratios = taken.map((figure) => `${(figure.after / figure.before).toFixed(2)}x`).join(", ")
    const spread = `${first.name}: after/before in each of ${taken.length} processes ${ratios}, the row their medians`
    return {
      ...first,
      before: median(taken.map((figure) => figure.before)),
      after: median(taken.map((figure) => figure.after)),
      detail: first.detail === undefined ? spread : `${spread}; in the first process, ${first.detail}`
    }
  })

/**
 * Whether `figure` is within the guard; undefined when its baseline is not above zero (an
 * added latency the host's noise put at or below nothing), where a ratio says nothing.
 */
export const withinGuard = (figure: Figure): boolean | undefined => {
  if (!(figure.before > 0)) return undefined
  const ratio = figure.after / figure.before
  return figure.higherIsBetter === true ? ratio >= 1 / GUARD : ratio <= GUARD
}

const verdict = (figure: Figure): string => {
  const within = withinGuard(figure)
  return within === undefined ? "undecided" : within ? "met" : "MISSED"
}

/** The table's lines: figure | before | after | after/before | goal | met?. */
export const tableLines = (figures: ReadonlyArray<Figure>, baseline: string): Array<string> => {
  const rows = [
    ["figure", `before (${baseline})`, "after (this checkout)", "after/before", "goal", "met?"],
    ...figures.map((figure) => [
      figure.name,
      format(figure.unit, figure.before),
      format(figure.unit, figure.after),
      figure.before > 0 ? `${(figure.after / figure.before).toFixed(2)}x` : "n/a",
      figure.higherIsBetter === true ? `>= ${(1 / GUARD).toFixed(2)}x` : `<= ${GUARD.toFixed(2)}x`,
      verdict(figure)
    ])
  ]
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)))
  const line = (row: ReadonlyArray<string>) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join(" | ")
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("-|-"), ...rows.slice(1).map(line)]
}
