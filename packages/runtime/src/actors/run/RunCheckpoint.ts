/**
 * A completed run's git checkpoint, as its driver sees it: whether one is due (the
 * workspace is a git repository; if git cannot be asked, the run keeps a logical
 * checkpoint and says why), and, once the run's end is recorded `pending`, taking it
 * and recording it (`RecordCheckpoint`), or recording it as not taken with git's words.
 * If the actor has stopped meanwhile, the checkpoint stays pending until the thread's
 * actor starts again and settles it.
 */
import type { GitFailed, RunId, TurnItemContent } from "@skein/domain"
import { Effect, Option } from "effect"
import type { CapturedCheckpoint } from "../../lineage/WorkspaceCheckpoints.js"
import type { CheckpointTaken } from "../ThreadPlanner.js"
import type { ThreadAsk } from "../ThreadProtocol.js"

/** The workspace's git checkpoints, as a run's driver uses them. */
export interface WorkspaceCheckpoint {
  readonly isRepository: Effect.Effect<boolean, GitFailed>
  /** The checkpoint after this run (None: not a repository after all). */
  readonly capture: Effect.Effect<Option.Option<CapturedCheckpoint>, GitFailed>
}

/** Whether a completed run's checkpoint is to be taken, and what to say on the run if git could not be asked. */
export interface CheckpointDue {
  readonly due: boolean
  readonly note: TurnItemContent | null
}

export const due = (checkpoint: WorkspaceCheckpoint): Effect.Effect<CheckpointDue> =>
  checkpoint.isRepository.pipe(
    Effect.map((is): CheckpointDue => ({ due: is, note: null })),
    Effect.catchAll((error) =>
      Effect.succeed<CheckpointDue>({
        due: false,
        note: { type: "error", message: `no git checkpoint: ${error.message}`, code: "checkpoint_failed" }
      })
    )
  )

const taken = (captured: Option.Option<CapturedCheckpoint>): CheckpointTaken =>
  Option.match(captured, {
    onNone: () => ({ _tag: "Failed", detail: "the workspace is no longer a git repository" }),
    onSome: ({ commit, diff, gitRef, omitted, tree }) => ({ _tag: "Taken", gitRef, commit, tree, diff, omitted })
  })

/** Takes the pending checkpoint and records it, taken or not; a recording that fails is logged. */
export const take = (checkpoint: WorkspaceCheckpoint, ask: ThreadAsk, runId: RunId): Effect.Effect<void> =>
  checkpoint.capture.pipe(
    Effect.map(taken),
    Effect.catchAll((error) => Effect.succeed<CheckpointTaken>({ _tag: "Failed", detail: error.message })),
    Effect.flatMap((result) => ask("RecordCheckpoint", { runId, taken: result })),
    Effect.catchAll((error) => Effect.logWarning(`the checkpoint of run ${runId} was not recorded`, error))
  )
