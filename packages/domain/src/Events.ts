/**
 * Thread events: the append-only log of every AppThread. Each event carries the
 * full new state of the entity it changes, so that folding the log is a plain upsert
 * and a projection can always be rebuilt from it.
 */
import { Schema } from "effect"
import { CommandId, ContextHandoffId, NativeTurnRef, ProviderThreadId, ThreadId } from "./Ids.js"
import { AppThread } from "./Thread.js"
import { Run } from "./Run.js"
import { TurnItem } from "./TurnItem.js"
import { ProviderThread, ProviderThreadStatus } from "./ProviderThread.js"
import { ContextTransfer } from "./Transfer.js"
import { ContextHandoff } from "./Handoff.js"
import { Checkpoint } from "./Checkpoint.js"
import { ValidatedTaggedClass } from "./ValidatedClass.js"

export class ThreadCreated extends ValidatedTaggedClass<ThreadCreated>()("ThreadCreated", { thread: AppThread }) {}
export class ThreadUpdated extends ValidatedTaggedClass<ThreadUpdated>()("ThreadUpdated", { thread: AppThread }) {}
export class RunStarted extends ValidatedTaggedClass<RunStarted>()("RunStarted", { run: Run }) {}
export class RunUpdated extends ValidatedTaggedClass<RunUpdated>()("RunUpdated", { run: Run }) {}
export class RunEnded extends ValidatedTaggedClass<RunEnded>()("RunEnded", { run: Run }) {}
export class TurnItemRecorded extends ValidatedTaggedClass<TurnItemRecorded>()("TurnItemRecorded", {
  item: TurnItem
}) {}
export class ProviderThreadRecorded extends ValidatedTaggedClass<ProviderThreadRecorded>()("ProviderThreadRecorded", {
  providerThread: ProviderThread
}) {}
/**
 * A provider thread served a run natively (a kept turn): the run joins its coverage,
 * with the handoff it received and the provider's turn handle. Constant in size,
 * however long the provider thread's history: what a run's end writes does not grow
 * with the thread.
 */
export class ProviderThreadServed extends ValidatedTaggedClass<ProviderThreadServed>()("ProviderThreadServed", {
  providerThreadId: ProviderThreadId,
  runOrdinal: Schema.Int,
  handoffId: Schema.NullOr(ContextHandoffId),
  turnRef: Schema.NullOr(NativeTurnRef),
  status: ProviderThreadStatus,
  updatedAt: Schema.String
}) {}
export class TransferRecorded extends ValidatedTaggedClass<TransferRecorded>()("TransferRecorded", {
  transfer: ContextTransfer
}) {}
export class HandoffRecorded extends ValidatedTaggedClass<HandoffRecorded>()("HandoffRecorded", {
  handoff: ContextHandoff
}) {}
export class CheckpointRecorded extends ValidatedTaggedClass<CheckpointRecorded>()("CheckpointRecorded", {
  checkpoint: Checkpoint
}) {}

export const ThreadEvent = Schema.Union(
  ThreadCreated,
  ThreadUpdated,
  RunStarted,
  RunUpdated,
  RunEnded,
  TurnItemRecorded,
  ProviderThreadRecorded,
  ProviderThreadServed,
  TransferRecorded,
  HandoffRecorded,
  CheckpointRecorded
)
export type ThreadEvent = typeof ThreadEvent.Type

/** An event as stored: global and per-thread sequence numbers, the command that caused it. */
export const StoredEvent = Schema.Struct({
  sequence: Schema.Int,
  threadId: ThreadId,
  threadSequence: Schema.Int,
  commandId: Schema.NullOr(CommandId),
  createdAt: Schema.String,
  event: ThreadEvent
})
export type StoredEvent = typeof StoredEvent.Type
