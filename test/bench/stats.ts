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

/**
 * A 95% bootstrap interval for `statistic` of `samples`: the statistic of `resamples`
 * resamples drawn with replacement, their 2.5th and 97.5th percentiles. Seeded, so one
 * run's samples always give the same interval. It says how far the figure could move
 * if the same run were repeated on the same machine; not how the machine varies from
 * one run to the next.
 */
export const bootstrapInterval = (
  samples: ReadonlyArray<number>,
  statistic: (samples: ReadonlyArray<number>) => number,
  resamples = 2000
): readonly [number, number] => {
  if (samples.length === 0) return [Number.NaN, Number.NaN]
  // mulberry32: small, seeded, good enough to pick indices.
  let seed = 0x5eed
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const values: Array<number> = []
  const resample = new Array<number>(samples.length)
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < samples.length; i++) resample[i] = samples[Math.floor(random() * samples.length)]!
    values.push(statistic(resample))
  }
  return [percentile(values, 2.5), percentile(values, 97.5)]
}
