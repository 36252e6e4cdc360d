/**
 * The thread actor's protocol: every message it accepts, each with its payload, its
 * success and its error schema, declared as `@effect/rpc` definitions: the shape an
 * `@effect/cluster` entity takes (`Entity.make("Thread", ThreadProtocol.requests)`),
 * so the same protocol can later run sharded without being redesigned. Every payload
 * and reply is serialisable; nothing in it is a live handle.
 *
 * Two kinds of sender: clients (through the Orchestrator) and the run's own driver
 * fiber, which reports what the provider did through the same mailbox, so every
 * change to a thread is serialised by its actor.
 */
import { Rpc, RpcGroup } from "@effect/rpc"
import {
  ApprovalDecision,
  ApprovalId,
  CommandId,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  DiffEntry,
  HandoffDelivery,
  InterruptRunFields,
  OmittedFile,
  ProviderName,
  ProviderThreadHead,
  ProviderThreadId,
  RespondApprovalFields,
  RestoreOutcome,
  Run,
  RunFailure,
  RunId,
  RunView,
  SkeinError,
  StartRunFields,
  TurnItem,
  TurnItemContent,
  ThreadRestore,
  TurnUsage
} from "@skein/domain"
import { Schema } from "effect"
import type { Effect } from "effect"

/** A run the actor accepted (or found by its receipt), with where its events stand. */
export const RunAccepted = Schema.Struct({
  run: Run,
  /** The thread's last sequence when the actor answered: the run's end comes after it. */
  sequence: Schema.Int
})
export type RunAccepted = typeof RunAccepted.Type

/** What the driver needs to serve a run: its provider thread and the handoff to deliver. */
export const RunContext = Schema.Struct({
  /** Without its per-run lists (the driver needs its id, native ref and settings). */
  providerThread: ProviderThreadHead,
  handoff: Schema.NullOr(ContextHandoff),
  /** Handoffs delivered beside it: merged forks, subagent results (in creation order). */
  extras: Schema.Array(ContextHandoff),
  delivery: Schema.NullOr(HandoffDelivery),
  /** A provider asked to write the handoff's summary first (it is `pending` until then). */
  summaryBy: Schema.NullOr(ProviderName),
  /** Fork the source's native thread at this turn instead of starting a new one. */
  fork: Schema.NullOr(Schema.Struct({ nativeRef: Schema.String, turnRef: Schema.String }))
})
export type RunContext = typeof RunContext.Type

/** Where an approval decision must go before it is recorded, or the answer already recorded. */
export const ApprovalAnswer = Schema.Union(
  Schema.TaggedStruct("Recorded", { item: TurnItem }),
  Schema.TaggedStruct("Deliver", { runId: RunId, provider: ProviderName, nativeRef: Schema.NullOr(Schema.String) })
)
export type ApprovalAnswer = typeof ApprovalAnswer.Type

export const ThreadStatus = Schema.Struct({
  lastSequence: Schema.Int,
  activeRunId: Schema.NullOr(RunId)
})
export type ThreadStatus = typeof ThreadStatus.Type

const error = SkeinError

// --- from clients ------------------------------------------------------------------

/**
 * `run.start`. `runId`, from the cluster only, is the id the run is to have: a start
 * delivered again with it (the thread moved under it) answers the run it made.
 */
export const StartRunPayload = Schema.Struct({ ...StartRunFields, runId: Schema.optional(RunId) })
export type StartRunPayload = typeof StartRunPayload.Type
export const StartRun = Rpc.make("StartRun", { payload: StartRunPayload, success: RunAccepted, error })
export const InterruptRun = Rpc.make("InterruptRun", { payload: InterruptRunFields, success: RunAccepted, error })
/** Stop the active run with a reason other than the user's (shutdown, its thread moving away). */
export const StopRun = Rpc.make("StopRun", { payload: { failure: RunFailure }, success: RunAccepted, error })
/** First half of approval.respond: check the approval and reserve it while the provider hears the decision. */
export const RespondApproval = Rpc.make("RespondApproval", {
  payload: RespondApprovalFields,
  success: ApprovalAnswer,
  error
})
/** Second half: the provider took the decision; record it (with the command's receipt). */
export const RecordApproval = Rpc.make("RecordApproval", {
  payload: { approvalId: ApprovalId, decision: ApprovalDecision, commandId: Schema.optional(CommandId) },
  success: TurnItem,
  error
})
/** The provider could not take the decision: release the approval; a fault ends the run. */
export const ReleaseApproval = Rpc.make("ReleaseApproval", {
  payload: { approvalId: ApprovalId, failure: Schema.NullOr(RunFailure) },
  error
})
/** Where a steered message goes (`whenBusy: steer`): the running turn, the replayed run, or no run at all. */
export const SteerTarget = Rpc.make("SteerTarget", {
  payload: StartRunFields,
  success: Schema.Union(
    Schema.TaggedStruct("Steer", { runId: RunId, provider: ProviderName, nativeRef: Schema.String }),
    Schema.TaggedStruct("Replayed", { accepted: RunAccepted }),
    Schema.TaggedStruct("Idle", {})
  ),
  error
})
/** The provider took the steered message: record it on the run, with the command's receipt. */
export const RecordSteer = Rpc.make("RecordSteer", {
  payload: { runId: RunId, message: Schema.String, commandId: Schema.optional(CommandId), hash: Schema.String },
  success: RunAccepted,
  error
})
/** Start the next queued run if the thread is idle (the actor sends it to itself). */
export const StartQueued = Rpc.make("StartQueued", { success: Schema.NullOr(RunAccepted), error })
export const GetRun = Rpc.make("GetRun", { payload: { runId: RunId }, success: RunView, error })
export const Status = Rpc.make("Status", { success: ThreadStatus, error })

// --- from the run's driver ----------------------------------------------------------

/** Items the provider reported together: one commit. */
export const RecordItems = Rpc.make("RecordItems", {
  payload: { runId: RunId, items: Schema.NonEmptyArray(TurnItemContent) },
  error
})
/** The run's provider thread now has a native ref (started, or forked from the source's). */
export const BindNativeThread = Rpc.make("BindNativeThread", {
  payload: {
    runId: RunId,
    providerThreadId: ProviderThreadId,
    nativeRef: Schema.String,
    strength: Schema.Literal("strong", "weak", "none"),
    /** It came from forking the source's native thread (the inherited transfer is then resolved natively). */
    forked: Schema.Boolean
  },
  error
})
/** What came of asking a provider for a handoff summary. */
export const SummaryOutcome = Schema.Union(
  Schema.TaggedStruct("Written", { text: Schema.String, provider: ProviderName }),
  /** It could not (failed, died, timed out): the local summariser's text stands. */
  Schema.TaggedStruct("Failed", { provider: ProviderName, detail: Schema.String })
)
export type SummaryOutcome = typeof SummaryOutcome.Type

/** The pending handoff's summary is settled: by its provider, or by the local summariser. */
export const RecordSummary = Rpc.make("RecordSummary", {
  payload: { runId: RunId, handoffId: ContextHandoffId, summary: SummaryOutcome },
  success: ContextHandoff,
  error
})
/** Resuming the target provider thread failed: re-plan with a full summary into a new one. */
export const ResumeFailed = Rpc.make("ResumeFailed", {
  payload: { runId: RunId, detail: Schema.String },
  success: RunContext,
  error
})
export const RunOutcome = Schema.Literal("completed", "failed", "interrupted")
export type RunOutcome = typeof RunOutcome.Type
export const FinishRun = Rpc.make("FinishRun", {
  payload: {
    runId: RunId,
    outcome: RunOutcome,
    failure: Schema.NullOr(RunFailure),
    /** The provider's turn handle, when the turn reached the provider. */
    turnRef: Schema.NullOr(Schema.String),
    /** What the turn cost, when the provider said (kept on the run). */
    usage: Schema.optional(TurnUsage),
    /** Items that arrived together with the end of the turn, recorded in the same commit. */
    items: Schema.Array(TurnItemContent),
    /**
     * After a completed run: "pending" when the workspace is a git repository (the driver
     * takes the checkpoint next and reports it with RecordCheckpoint), null for a logical
     * checkpoint.
     */
    checkpoint: Schema.NullOr(Schema.Literal("pending"))
  },
  error
})

/** The run's pending git checkpoint, taken (or not, and why): it becomes ready. */
export const RecordCheckpoint = Rpc.make("RecordCheckpoint", {
  payload: {
    runId: RunId,
    taken: Schema.Union(
      Schema.TaggedStruct("Taken", {
        gitRef: Schema.String,
        commit: Schema.String,
        tree: Schema.String,
        diff: Schema.Array(DiffEntry),
        omitted: Schema.optional(Schema.Array(OmittedFile))
      }),
      Schema.TaggedStruct("Failed", { detail: Schema.String })
    )
  },
  error
})
// --- lineage ------------------------------------------------------------------------

/**
 * Record a transfer into this thread (a fork merged back, a subagent's result), once:
 * the same source run, or the same commandId, gives the transfer already recorded.
 */
export const RecordTransfer = Rpc.make("RecordTransfer", {
  payload: {
    transfer: ContextTransfer,
    receipt: Schema.NullOr(Schema.Struct({ commandId: CommandId, method: Schema.String, hash: Schema.String }))
  },
  success: ContextTransfer,
  error
})

export const NativeRollbackTarget = Schema.Struct({
  providerThreadId: ProviderThreadId,
  provider: ProviderName,
  nativeRef: Schema.String,
  beforeTurnRef: Schema.String
})

/** Roll back to run N: recorded at once; says what the caller rolls back natively and restores. */
export const Rollback = Rpc.make("Rollback", {
  payload: { toRunOrdinal: Schema.Int, restoreFiles: Schema.Boolean, commandId: Schema.optional(CommandId) },
  success: Schema.Struct({
    /** The commandId was used before for this same rollback: it already happened. */
    replayed: Schema.Boolean,
    native: Schema.Array(NativeRollbackTarget),
    /**
     * The file restore the rollback owes (recorded with it), or, for a replay, the one its
     * command asked for as it now stands; null when none was asked for.
     */
    restore: Schema.NullOr(ThreadRestore)
  }),
  error
})

/** A file restore the thread owed has ended: recorded `done` with its outcome, or `failed` with why. */
export const RestoreFinished = Rpc.make("RestoreFinished", {
  payload: {
    restoreId: Schema.String,
    outcome: Schema.NullOr(RestoreOutcome),
    detail: Schema.NullOr(Schema.String)
  },
  success: Schema.NullOr(ThreadRestore),
  error
})

/** What the native rollbacks did (detail null: it worked). */
export const RollbackSettled = Rpc.make("RollbackSettled", {
  payload: {
    toRunOrdinal: Schema.Int,
    results: Schema.Array(Schema.Struct({ providerThreadId: ProviderThreadId, detail: Schema.NullOr(Schema.String) }))
  },
  error
})

/** Supersede the incoming transfers whose source run was rolled back since they were made. */
export const RevalidateIncoming = Rpc.make("RevalidateIncoming", { error })

/** The driver fiber ended, however it ended: a run it left active is ended here. */
export const DriverExited = Rpc.make("DriverExited", { payload: { runId: RunId, detail: Schema.String }, error })

/** Every message, in one list: what `Entity.make("Thread", threadRpcs)` would take. */
export const threadRpcs = [
  StartRun,
  StartQueued,
  SteerTarget,
  RecordSteer,
  InterruptRun,
  StopRun,
  RespondApproval,
  RecordApproval,
  ReleaseApproval,
  GetRun,
  Status,
  RecordItems,
  BindNativeThread,
  RecordSummary,
  ResumeFailed,
  FinishRun,
  RecordCheckpoint,
  DriverExited,
  RecordTransfer,
  Rollback,
  RollbackSettled,
  RestoreFinished,
  RevalidateIncoming
] as const

export class ThreadProtocol extends RpcGroup.make(...threadRpcs) {}

export type ThreadMessage = RpcGroup.Rpcs<typeof ThreadProtocol>

type MessageOf<Tag extends ThreadMessage["_tag"]> = Rpc.ExtractTag<ThreadMessage, Tag>

/** The typed way to a thread actor: a message and its payload in, its typed reply out. */
export type ThreadAsk = <Tag extends ThreadMessage["_tag"]>(
  tag: Tag,
  payload: Rpc.Payload<MessageOf<Tag>>
) => Effect.Effect<Rpc.Success<MessageOf<Tag>>, Rpc.Error<MessageOf<Tag>> | SkeinError>
