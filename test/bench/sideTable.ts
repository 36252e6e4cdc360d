/**
 * The side-by-side bench's verdict: each figure before (the baseline) and after (this
 * checkout), their ratio after/before, and whether it stays within the guard: at most
 * GUARD times the baseline's cost (for a figure where more is better, at least 1/GUARD
 * of it).
 */

export const GUARD = 1.25

export interface Figure {
  readonly name: string
  readonly before: number
  readonly after: number
  /** True for a figure where more is better (a throughput ratio); false or absent for a latency. */
  readonly higherIsBetter?: boolean
  /** The figure with its unit. */
  readonly format: (value: number) => string
  /** How it was measured and what lies beside it, printed under the table. */
  readonly detail?: string
}

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
      figure.format(figure.before),
      figure.format(figure.after),
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
