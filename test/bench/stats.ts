/** Small statistics shared by the benches. */

/** The p-th percentile (0-100) of some samples (NaN when there are none). */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Wall-clock milliseconds with sub-ms precision, comparable across processes and threads. */
export const nowMs = (): number => performance.timeOrigin + performance.now()
