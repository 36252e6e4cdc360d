/**
 * How much a piece of work allocates, as V8's sampling heap profiler counts it with the
 * objects already collected included (what the young generation churns through, and so
 * how often it is scavenged), not only what is still alive.
 */
import * as Inspector from "node:inspector/promises"

interface SampledNode {
  readonly selfSize: number
  readonly children: ReadonlyArray<SampledNode>
}

const total = (node: SampledNode): number => node.children.reduce((sum, child) => sum + total(child), node.selfSize)

/** Bytes allocated per call of `body` (awaited `count` times in a row), sampled every 512 bytes. */
export const allocatedPer = async (count: number, body: () => Promise<unknown>): Promise<number> => {
  const session = new Inspector.Session()
  session.connect()
  try {
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 512,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    for (let i = 0; i < count; i++) await body()
    const { profile } = await session.post("HeapProfiler.stopSampling")
    return total(profile.head as SampledNode) / count
  } finally {
    session.disconnect()
  }
}
