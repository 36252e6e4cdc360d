/** Small statistics shared by the benches. */

/** The p-th percentile (0-100) of some samples (NaN when there are none). */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/**
 * Wall-clock milliseconds with sub-ms precision (epoch based, as providers report
 * `receivedAt`). Each process fixes its `timeOrigin` from the wall clock when it starts,
 * so two processes can disagree by however much that clock was adjusted in between.
 */
export const nowMs = (): number => performance.timeOrigin + performance.now()

/**
 * Milliseconds on the machine's monotonic clock (CLOCK_MONOTONIC on Linux): the same
 * clock in every process of one machine and never stepped, so the right one for
 * latencies measured across processes.
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6
