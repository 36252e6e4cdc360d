import { Schema } from "effect"
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

/** The canonical conversation. It never belongs to one provider. */
export const AppThread = Schema.Struct({
  id: ThreadId,
  title: Schema.String,
  /** A directory; checkpoints use git when it is a repository. */
  workspace: Schema.NullOr(Schema.String),
  lineage: AppThreadLineage,
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type AppThread = typeof AppThread.Type
