/**
 * "The latest ready checkpoint up to run N" without scanning every checkpoint of a long
 * thread. A small index per checkpoints Map, sorted by run ordinal, follows the Map as it
 * grows: a live Map iterator yields entries added after it was created, so each new
 * checkpoint is indexed once. Statuses are read fresh from the Map at lookup time.
 * Checkpoints are never deleted; if the Map shrinks anyway the index is rebuilt.
 */
import type { Checkpoint, CheckpointId } from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import { checkpointAnswerKey, isLiveOrdinal, NotLoaded } from "../store/ThreadState.js"

interface Index {
  readonly values: Iterator<Checkpoint>
  seen: number
  /** Ascending by runOrdinal. */
  readonly entries: Array<{ readonly runOrdinal: number; readonly id: CheckpointId }>
}

const indexes = new WeakMap<ReadonlyMap<CheckpointId, Checkpoint>, Index>()

const fresh = (checkpoints: ReadonlyMap<CheckpointId, Checkpoint>): Index => {
  const index: Index = { values: checkpoints.values(), seen: 0, entries: [] }
  indexes.set(checkpoints, index)
  return index
}

const indexOf = (checkpoints: ReadonlyMap<CheckpointId, Checkpoint>): Index => {
  let index = indexes.get(checkpoints)
  if (index === undefined || index.seen > checkpoints.size) index = fresh(checkpoints)
  while (index.seen < checkpoints.size) {
    const next = index.values.next()
    if (next.done) {
      // Only after a deletion: start over with a new iterator (it cannot end early).
      if (index.seen === 0) break
      index = fresh(checkpoints)
      continue
    }
    index.seen++
    const entry = { runOrdinal: next.value.runOrdinal, id: next.value.id }
    const entries = index.entries
    let i = entries.length
    while (i > 0 && entries[i - 1]!.runOrdinal > entry.runOrdinal) i--
    entries.splice(i, 0, entry)
  }
  return index
}

/**
 * The latest ready checkpoint of a live run with from ≤ runOrdinal ≤ to (among one
 * run's checkpoints, the last recorded). A compact state has it read from storage.
 */
export const latestReadyCheckpoint = (state: ThreadState, from: number, to: number): Checkpoint | undefined => {
  if (!state.complete) {
    const answer = state.latestCheckpoints.get(checkpointAnswerKey(from, to))
    if (answer === undefined) throw new NotLoaded({ _tag: "LatestCheckpoint", from, to })
    return answer ?? undefined
  }
  const entries = indexOf(state.checkpoints).entries
  // Last entry with runOrdinal ≤ to.
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (entries[mid]!.runOrdinal <= to) lo = mid + 1
    else hi = mid
  }
  for (let i = lo - 1; i >= 0 && entries[i]!.runOrdinal >= from; i--) {
    const checkpoint = state.checkpoints.get(entries[i]!.id)
    if (checkpoint === undefined || checkpoint.status !== "ready") continue
    if (isLiveOrdinal(state, checkpoint.runOrdinal)) return checkpoint
  }
  return undefined
}
