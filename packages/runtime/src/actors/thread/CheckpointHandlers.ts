/**
 * A thread actor's git checkpoints: recording the checkpoint a run's driver took
 * (`RecordCheckpoint`), settling checkpoints left pending with nobody taking them, and
 * what a run's driver is given to take its own.
 */
import { GitFailed } from "@skein/domain"
import { Effect } from "effect"
import type { Handlers } from "../SupervisedActor.js"
import type { ThreadMessage } from "../ThreadProtocol.js"
import { planCheckpointTaken } from "../ThreadPlanner.js"
import type { ThreadContext, ThreadParts } from "./ThreadContext.js"

export type CheckpointMessages = "RecordCheckpoint"

/** The checkpoint handlers, one set for every thread's actor. */
export const checkpointHandlers: Pick<Handlers<ThreadMessage, ThreadParts>, CheckpointMessages> = {
  RecordCheckpoint: ({ runId, taken }, { ctx }) =>
    Effect.gen(function* () {
      const pending = yield* ctx.store.pendingCheckpoints(ctx.threadId)
      const checkpoint = pending.find((c) => c.runId === runId)
      if (checkpoint === undefined) return
      const at = ctx.cell.now()
      yield* ctx.cell.commit(yield* ctx.cell.demand((s) => planCheckpointTaken(s, checkpoint, taken, at)))
    })
}

/**
 * Git checkpoints left pending with nobody taking them (Skein or this actor stopped
 * first): recorded as not taken, each a logical checkpoint with an error item on its run.
 */
export const settleAbandonedCheckpoints = (ctx: ThreadContext, why: string) =>
  Effect.flatMap(ctx.gate.capturing, (capturing) =>
    capturing
      ? Effect.void
      : Effect.flatMap(ctx.store.pendingCheckpoints(ctx.threadId), (pending) =>
          Effect.forEach(
            pending,
            (checkpoint) =>
              Effect.flatMap(
                ctx.cell.demand((s) =>
                  planCheckpointTaken(s, checkpoint, { _tag: "Failed", detail: why }, ctx.cell.now())
                ),
                (events) => ctx.cell.commit(events)
              ),
            { discard: true }
          )
        )
  )

/** What a run's driver needs of the workspace's checkpoints; null without a workspace. */
export const checkpointsFor = (ctx: ThreadContext, workspace: string | null, ordinal: number) =>
  workspace === null
    ? null
    : {
        isRepository: ctx.checkpoints.isRepository(workspace),
        capture: ctx.checkpoints.capture({
          workspace,
          threadId: ctx.threadId,
          ordinal,
          // Read when a capture needs it, after the previous one is recorded.
          previous: Effect.suspend(() => ctx.store.lookup.previousGitCommit(ctx.threadId)).pipe(
            Effect.mapError((error) => new GitFailed({ workspace, detail: error.message }))
          )
        })
      }
