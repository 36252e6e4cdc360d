/**
 * A run's pending git checkpoint settled: ready with its commit, or a logical one.
 */
import type { Checkpoint, DiffEntry, OmittedFile, ThreadEvent } from "@skein/domain"
import { CheckpointRecorded } from "@skein/domain"
import type { ThreadState } from "../../store/ThreadState.js"
import { itemsOf } from "../../store/ThreadState.js"
import { unchecked } from "./Unchecked.js"
import { diffOf, planItems } from "./ItemPlan.js"

/** How taking a run's git checkpoint went. */
export type CheckpointTaken =
  | {
      readonly _tag: "Taken"
      readonly gitRef: string
      readonly commit: string
      readonly tree: string
      readonly diff: ReadonlyArray<DiffEntry>
      /** Files left out for their size. */
      readonly omitted?: ReadonlyArray<OmittedFile> | undefined
    }
  | { readonly _tag: "Failed"; readonly detail: string }

/**
 * A pending git checkpoint settled: ready with its commit, or, when git failed (or Skein
 * stopped before it was taken), a logical checkpoint of the run's reported file changes
 * with an error item on the run that says why. Anything but a pending checkpoint is
 * left as it is.
 */
export const planCheckpointTaken = (
  state: ThreadState,
  checkpoint: Checkpoint,
  taken: CheckpointTaken,
  now: string
): ReadonlyArray<ThreadEvent> => {
  if (checkpoint.status !== "pending") return []
  if (taken._tag === "Taken") {
    const ready: Checkpoint = {
      ...checkpoint,
      gitRef: taken.gitRef,
      treeSha: taken.tree,
      commitSha: taken.commit,
      diffSummary: [...taken.diff],
      ...(taken.omitted === undefined || taken.omitted.length === 0 ? {} : { omitted: [...taken.omitted] }),
      status: "ready"
    }
    return [new CheckpointRecorded({ checkpoint: ready }, unchecked)]
  }
  const note = planItems(
    state,
    checkpoint.runId,
    [{ type: "error", message: `no git checkpoint: ${taken.detail}`, code: "checkpoint_failed" }],
    now
  )
  const logical: Checkpoint = {
    ...checkpoint,
    kind: "logical",
    gitRef: null,
    treeSha: null,
    diffSummary: diffOf(itemsOf(state, checkpoint.runId)),
    status: "ready"
  }
  return [...note, new CheckpointRecorded({ checkpoint: logical }, unchecked)]
}
