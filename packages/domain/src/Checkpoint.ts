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

/** A file a git checkpoint left out because it was larger than the per-file limit (path relative to the workspace). */
export const OmittedFile = Schema.Struct({
  path: Schema.String,
  bytes: Schema.Int.pipe(Schema.nonNegative())
})
export type OmittedFile = typeof OmittedFile.Type

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
  /** Files left out of a git checkpoint for their size: a restore cannot bring them back. */
  omitted: Schema.optional(Schema.Array(OmittedFile)),
  status: CheckpointStatus,
  createdAt: Schema.String
})
export type Checkpoint = typeof Checkpoint.Type

/**
 * What a file restore (`thread.rollback { restoreFiles }`) changed in the workspace, or
 * would change (`dryRun`). Paths are relative to the workspace; nothing outside it is
 * ever touched. Before changing a file the restore saves the work tree as it was under
 * `backupRef` (a hidden ref of the thread), so whatever it reverted or deleted can be got
 * back: `undo` says how.
 */
export const RestoreOutcome = Schema.Struct({
  /** The run whose checkpoint the workspace now matches (or would match). */
  toRunOrdinal: Schema.Int,
  checkpointCommit: Schema.String,
  workspace: Schema.String,
  dryRun: Schema.Boolean,
  /** The work tree as it was just before the restore; null for a dry run. */
  backupRef: Schema.NullOr(Schema.String),
  backupCommit: Schema.NullOr(Schema.String),
  /** Files present before and after whose content went back to the checkpoint's. */
  reverted: Schema.Array(Schema.String),
  /** Files the checkpoint does not hold, removed (ignored files are never removed). */
  deleted: Schema.Array(Schema.String),
  /** Files the checkpoint holds that were missing, written. */
  created: Schema.Array(Schema.String),
  /** Files the checkpoint left out for their size: not restored. */
  omitted: Schema.Array(OmittedFile),
  /** Submodules inside the workspace: files inside them are not restored. */
  submodules: Schema.Array(Schema.String),
  /** How to get the work tree back as it was before the restore; null for a dry run. */
  undo: Schema.NullOr(Schema.String)
})
export type RestoreOutcome = typeof RestoreOutcome.Type
