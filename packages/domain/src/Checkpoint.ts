import { Schema } from "effect"
import { CheckpointId, RunId, ThreadId } from "./Ids.js"

export const CheckpointKind = Schema.Literal("git", "logical")
/**
 * `pending`: a git checkpoint not taken yet (its run is answered before git takes it; a
 * `CheckpointRecorded` follows, `ready`, or logical with an error item on the run when
 * git could not take it). `ready`: usable. `failed` is not written by this runtime.
 */
export const CheckpointStatus = Schema.Literal("pending", "ready", "failed")

export const DiffEntry = Schema.Struct({
  path: Schema.String,
  change: Schema.Literal("add", "modify", "delete"),
  additions: Schema.Int,
  deletions: Schema.Int
})
export type DiffEntry = typeof DiffEntry.Type

/**
 * Workspace state after a run. `git` checkpoints store a tree under a hidden ref;
 * `logical` ones mark a stable point in a workspace that is not a repository.
 */
export const Checkpoint = Schema.Struct({
  id: CheckpointId,
  threadId: ThreadId,
  runId: RunId,
  runOrdinal: Schema.Int,
  kind: CheckpointKind,
  gitRef: Schema.NullOr(Schema.String),
  treeSha: Schema.NullOr(Schema.String),
  /** The checkpoint's commit (git checkpoints), what a restore writes back. */
  commitSha: Schema.optional(Schema.String),
  diffSummary: Schema.Array(DiffEntry),
  status: CheckpointStatus,
  createdAt: Schema.String
})
export type Checkpoint = typeof Checkpoint.Type
