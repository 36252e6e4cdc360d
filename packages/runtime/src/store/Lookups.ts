/**
 * Single rows by key from the projection tables, for lineage, receipts and recovery:
 * each an indexed read whose cost does not depend on the length of the thread's log.
 */
import type {
  AppThread,
  Checkpoint,
  CheckpointId,
  ContextTransfer,
  ProviderThread,
  ProviderThreadId,
  Run,
  RunId,
  StorageError,
  ThreadId,
  TurnItem,
  TurnItemId
} from "@skein/domain"
import { Effect } from "effect"
import type { Option } from "effect"
import {
  approvalRequestRows,
  checkpointOfRunRow,
  checkpointRow,
  gitCheckpointOfOrdinalRow,
  latestStableRunRow,
  owedRestoreRows,
  previousGitCommitRow,
  providerThreadRow,
  runByOrdinalRow,
  runRow,
  servedTurnRow,
  subagentResultRow,
  subagentsWithoutResultRows,
  threadRow,
  turnItemRow
} from "./ProjectionReads.js"
import type { Sql } from "./StoreDb.js"

export interface LookupsShape {
  readonly thread: (threadId: ThreadId) => Effect.Effect<Option.Option<AppThread>, StorageError>
  readonly run: (threadId: ThreadId, runId: RunId) => Effect.Effect<Option.Option<Run>, StorageError>
  readonly runByOrdinal: (threadId: ThreadId, ordinal: number) => Effect.Effect<Option.Option<Run>, StorageError>
  /** The newest completed run that has a ready checkpoint. */
  readonly latestStableRun: (threadId: ThreadId) => Effect.Effect<Option.Option<Run>, StorageError>
  readonly checkpoint: (threadId: ThreadId, id: CheckpointId) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
  readonly checkpointOfRun: (threadId: ThreadId, runId: RunId) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
  /** Its last recorded snapshot (the runs it served since are rows: see `servedTurn`). */
  readonly providerThread: (
    threadId: ThreadId,
    id: ProviderThreadId
  ) => Effect.Effect<Option.Option<ProviderThread>, StorageError>
  /** The provider's turn handle for a run the provider thread served natively. */
  readonly servedTurn: (
    threadId: ThreadId,
    id: ProviderThreadId,
    ordinal: number
  ) => Effect.Effect<Option.Option<string>, StorageError>
  /** An item by id; with its run, an indexed read (receipts before the run was kept in them have none). */
  readonly turnItem: (
    threadId: ThreadId,
    id: TurnItemId,
    runId?: RunId
  ) => Effect.Effect<Option.Option<TurnItem>, StorageError>
  /** The thread's approval requests with this approval id, the newest run's first. */
  readonly approvalRequests: (
    threadId: ThreadId,
    approvalId: string
  ) => Effect.Effect<ReadonlyArray<TurnItem>, StorageError>
  /** Subagent children (not observe-only) whose result the parent's log holds no transfer for, oldest first. */
  readonly subagentsWithoutResult: (parentId: ThreadId) => Effect.Effect<ReadonlyArray<AppThread>, StorageError>
  /** The subagent_result from child `childId` in its parent's log, whatever its status. */
  readonly subagentResult: (
    parentId: ThreadId,
    childId: ThreadId
  ) => Effect.Effect<Option.Option<ContextTransfer>, StorageError>
  /** Threads whose file restore a rollback recorded owed and nothing recorded finished (see ThreadRestore). */
  readonly owedRestores: Effect.Effect<ReadonlyArray<AppThread>, StorageError>
  /** The commit of the newest git checkpoint of a run not rolled back (a new checkpoint's parent). */
  readonly previousGitCommit: (threadId: ThreadId) => Effect.Effect<string | null, StorageError>
  /** A ready git checkpoint of run `ordinal` with its commit (what a rollback restores files from). */
  readonly gitCheckpointOfRun: (
    threadId: ThreadId,
    ordinal: number
  ) => Effect.Effect<Option.Option<Checkpoint>, StorageError>
}

export const make = (sql: Sql): LookupsShape => ({
  thread: (threadId) => threadRow(sql, threadId),
  run: (threadId, runId) => runRow(sql, threadId, runId),
  runByOrdinal: (threadId, ordinal) => runByOrdinalRow(sql, threadId, ordinal),
  latestStableRun: (threadId) => latestStableRunRow(sql, threadId),
  checkpoint: (threadId, id) => checkpointRow(sql, threadId, id),
  checkpointOfRun: (threadId, runId) => checkpointOfRunRow(sql, threadId, runId),
  providerThread: (threadId, id) => providerThreadRow(sql, threadId, id),
  servedTurn: (threadId, id, ordinal) => servedTurnRow(sql, threadId, id, ordinal),
  turnItem: (threadId, id, runId) => turnItemRow(sql, threadId, id, runId),
  approvalRequests: (threadId, approvalId) => approvalRequestRows(sql, threadId, approvalId),
  subagentsWithoutResult: (parentId) => subagentsWithoutResultRows(sql, parentId),
  subagentResult: (parentId, childId) => subagentResultRow(sql, parentId, childId),
  owedRestores: owedRestoreRows(sql),
  previousGitCommit: (threadId) => previousGitCommitRow(sql, threadId),
  gitCheckpointOfRun: (threadId, ordinal) => gitCheckpointOfOrdinalRow(sql, threadId, ordinal)
})
