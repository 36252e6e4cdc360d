import { Schema } from "effect"
import { RestoreOutcome } from "./Checkpoint.js"
import { ThreadId } from "./Ids.js"

export const ThreadRelationship = Schema.Literal("fork", "subagent")
export type ThreadRelationship = typeof ThreadRelationship.Type

export const AppThreadLineage = Schema.Struct({
  parentThreadId: Schema.NullOr(ThreadId),
  relationshipToParent: Schema.NullOr(ThreadRelationship),
  rootThreadId: ThreadId,
  /** A fork shown only inside its parent. */
  sideChat: Schema.optional(Schema.Boolean),
  /**
   * A thread that mirrors what a provider's own child agent did: it can be read, not
   * driven (run.start on it is refused).
   */
  observeOnly: Schema.optional(Schema.Boolean)
})
export type AppThreadLineage = typeof AppThreadLineage.Type

/**
 * The latest file restore a rollback asked for. It is recorded `owed` in the same
 * commit as the rollback, before any file changes, and the thread takes no run while
 * it is owed; it becomes `done` (with what it changed) or `failed` (with why). One
 * found owed at start-up, or by a retry of the rollback's commandId, is finished then.
 */
export const ThreadRestore = Schema.Struct({
  id: Schema.String,
  toRunOrdinal: Schema.Int,
  /** The checkpoint commit the workspace's files go back to. */
  commit: Schema.String,
  workspace: Schema.String,
  status: Schema.Literal("owed", "done", "failed"),
  requestedAt: Schema.String,
  finishedAt: Schema.NullOr(Schema.String),
  outcome: Schema.NullOr(RestoreOutcome),
  /** Why it failed (status `failed`). */
  detail: Schema.NullOr(Schema.String)
})
export type ThreadRestore = typeof ThreadRestore.Type

/** The canonical conversation. It never belongs to one provider. */
export const AppThread = Schema.Struct({
  id: ThreadId,
  title: Schema.String,
  /** A directory; checkpoints use git when it is a repository. */
  workspace: Schema.NullOr(Schema.String),
  lineage: AppThreadLineage,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  /** The latest file restore asked for by a rollback (absent until one is). */
  restore: Schema.optional(ThreadRestore)
})
export type AppThread = typeof AppThread.Type
