/**
 * Typed errors. Each says what went wrong and what to do about it; `message` is
 * derived from the fields, so it survives encoding over RPC.
 */
import { Schema } from "effect"

export class ThreadNotFound extends Schema.TaggedError<ThreadNotFound>()("ThreadNotFound", {
  threadId: Schema.String
}) {
  override get message() {
    return `No thread with id ${this.threadId}. List threads with skein threads (the RPC thread.list).`
  }
}

export class RunNotFound extends Schema.TaggedError<RunNotFound>()("RunNotFound", {
  runId: Schema.String
}) {
  override get message() {
    return `No run with id ${this.runId} in this thread.`
  }
}

export class HandoffNotFound extends Schema.TaggedError<HandoffNotFound>()("HandoffNotFound", {
  handoffId: Schema.String
}) {
  override get message() {
    return `No handoff with id ${this.handoffId}. Handoff ids are listed by thread.get.`
  }
}

export class ProviderNotFound extends Schema.TaggedError<ProviderNotFound>()("ProviderNotFound", {
  provider: Schema.String,
  available: Schema.Array(Schema.String)
}) {
  override get message() {
    return `No provider instance named "${this.provider}". Configured instances: ${this.available.join(", ") || "(none)"}.`
  }
}

export class RunAlreadyActive extends Schema.TaggedError<RunAlreadyActive>()("RunAlreadyActive", {
  threadId: Schema.String,
  runId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} already has an active run (${this.runId}). Wait for it, call run.interrupt first, or start with whenBusy queue, steer or interrupt.`
  }
}

/** `whenBusy: steer` with `ifCannotSteer: refuse` (the default): the running turn could not take the message. */
export class CannotSteer extends Schema.TaggedError<CannotSteer>()("CannotSteer", {
  threadId: Schema.String,
  runId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `The run ${this.runId} of thread ${this.threadId} could not take the message: ${this.reason}. Send it again with ifCannotSteer queue or interrupt, or once the run has ended.`
  }
}

/** A subagent an agent asked for on an instance that acts more freely than that agent's. */
export class SubagentMoreAutonomous extends Schema.TaggedError<SubagentMoreAutonomous>()("SubagentMoreAutonomous", {
  provider: Schema.String,
  parentProvider: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

export class NoActiveRun extends Schema.TaggedError<NoActiveRun>()("NoActiveRun", {
  threadId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} has no active run to interrupt.`
  }
}

export class CommandConflict extends Schema.TaggedError<CommandConflict>()("CommandConflict", {
  commandId: Schema.String,
  method: Schema.String
}) {
  override get message() {
    return `commandId ${this.commandId} was already used for a different ${this.method} request. Use a fresh commandId for a new command.`
  }
}

export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  detail: Schema.String
}) {
  override get message() {
    return `Invalid input: ${this.detail}`
  }
}

/** A thread's workspace must be an existing directory, given by absolute path, where agents may act. */
export class InvalidWorkspace extends Schema.TaggedError<InvalidWorkspace>()("InvalidWorkspace", {
  workspace: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    const shown = this.workspace.length > 200 ? `${this.workspace.slice(0, 199)}…` : this.workspace
    return `Workspace ${JSON.stringify(shown)} is refused: ${this.problem}. Give the absolute path of an existing project directory.`
  }
}

export class UnsupportedContextTransfer extends Schema.TaggedError<UnsupportedContextTransfer>()(
  "UnsupportedContextTransfer",
  { provider: Schema.String, detail: Schema.String }
) {
  override get message() {
    return `Provider "${this.provider}" cannot receive this thread's context: ${this.detail}. Choose a provider that accepts handoff context or start a new thread.`
  }
}

/** A fork or rollback named a point that cannot serve as a stable source. */
export class InvalidSourcePoint extends Schema.TaggedError<InvalidSourcePoint>()("InvalidSourcePoint", {
  threadId: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} has no usable source point: ${this.detail}.`
  }
}

/** thread.mergeBack on a thread that was not forked from another. */
export class NotAFork extends Schema.TaggedError<NotAFork>()("NotAFork", { threadId: Schema.String }) {
  override get message() {
    return `Thread ${this.threadId} is not a fork, so there is nothing to merge back. Merge back the fork itself (thread.list with parentThreadId lists a thread's forks).`
  }
}

/** A thread that mirrors a provider's own child agent: it is read, not driven. */
export class ObserveOnlyThread extends Schema.TaggedError<ObserveOnlyThread>()("ObserveOnlyThread", {
  threadId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} mirrors a child agent that a provider ran itself; it cannot take runs. Fork it to continue its work.`
  }
}

/** git failed while checkpointing or restoring a workspace (or is not installed). */
export class GitFailed extends Schema.TaggedError<GitFailed>()("GitFailed", {
  workspace: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `git failed in workspace ${this.workspace}: ${this.detail}`
  }
}

/**
 * The thread's files are owed a restore (a rollback with `restoreFiles` recorded but
 * not finished): it takes no run until they are back.
 */
export class RestorePending extends Schema.TaggedError<RestorePending>()("RestorePending", {
  threadId: Schema.String,
  toRunOrdinal: Schema.Int
}) {
  override get message() {
    return `Thread ${this.threadId} is restoring its workspace files to run ${this.toRunOrdinal}'s checkpoint, and takes no run until they are back. Retry once the rollback has answered (retrying the rollback with its commandId finishes the restore).`
  }
}

/** Another process holds the database: one Skein serves a database at a time. */
export class DatabaseInUse extends Schema.TaggedError<DatabaseInUse>()("DatabaseInUse", {
  path: Schema.String,
  /** The holder's process id, when known. */
  pid: Schema.NullOr(Schema.Int)
}) {
  override get message() {
    return `The database ${this.path} is in use by another Skein${this.pid === null ? "" : ` (process ${this.pid})`}; one daemon or embedded runtime serves a database at a time. Stop that one, or give this one another ${/^postgres(ql)?:/i.test(this.path) ? "--store" : "--db"}.`
  }
}

/**
 * No open approval by that id on the thread. `answered` is the decision already
 * recorded when the approval exists but was answered before.
 */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  threadId: Schema.String,
  approvalId: Schema.String,
  answered: Schema.optional(Schema.Literal("accept", "decline", "cancel"))
}) {
  override get message() {
    return this.answered === undefined
      ? `No open approval ${this.approvalId} on thread ${this.threadId}: see the thread's open approvals with skein show ${this.threadId}.`
      : `Approval ${this.approvalId} on thread ${this.threadId} was already answered: ${this.answered}.`
  }
}

/**
 * `crash`: the process exited; `timeout`: a call passed the runtime's deadline;
 * `defect`: the adapter died with a defect (a bug or a surprise) instead of failing.
 */
export const ProviderFailureKind = Schema.Literal(
  "error",
  "crash",
  "resume_failed",
  "unsupported",
  "timeout",
  "spawn",
  "defect"
)
export type ProviderFailureKind = typeof ProviderFailureKind.Type

/**
 * A finer, machine-readable reason some failures carry beside their kind:
 * `binary_missing` / `binary_version`: the agent's executable is not installed (or is
 * npm's placeholder), or its version is outside the range Skein was tested with;
 * `session_in_use`: the provider refused a session id another session already holds;
 * `conversation_not_found`: the provider has no conversation under that native ref;
 * `turn_not_found`: a fork or rollback named a turn the native thread does not have;
 * `approval_not_pending`: the provider is no longer waiting for that approval;
 * `turn_not_running`: a steer found no turn running on that native thread.
 */
export const ProviderFailureCode = Schema.Literal(
  "binary_missing",
  "binary_version",
  "session_in_use",
  "conversation_not_found",
  "turn_not_found",
  "approval_not_pending",
  "turn_not_running"
)
export type ProviderFailureCode = typeof ProviderFailureCode.Type

/** Anything a provider adapter reports as going wrong. */
export class ProviderFailure extends Schema.TaggedError<ProviderFailure>()("ProviderFailure", {
  provider: Schema.String,
  kind: ProviderFailureKind,
  detail: Schema.String,
  code: Schema.optional(ProviderFailureCode)
}) {
  override get message() {
    return `Provider "${this.provider}" ${this.kind}: ${this.detail}`
  }
}

/**
 * The database failed. While serving a command, nothing of it was recorded and it can
 * be retried; at start-up (`startup: true`), Skein could not open its database at all.
 */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  detail: Schema.String,
  startup: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return this.startup
      ? `Skein cannot use its database: ${this.detail}.`
      : `Storage failed: ${this.detail}. The command was not recorded; retry it with the same commandId.`
  }
}

/**
 * A writer appended to a thread whose log had moved on since it last read it: the
 * append was refused and nothing was written (optimistic concurrency on the per-thread
 * sequence). The thread's actor reloads from storage; the command can be retried.
 */
export class SequenceConflict extends Schema.TaggedError<SequenceConflict>()("SequenceConflict", {
  threadId: Schema.String,
  expected: Schema.Int,
  actual: Schema.Int
}) {
  override get message() {
    return `Thread ${this.threadId} changed under this writer (it expected to append after event ${this.expected}, the log ends at ${this.actual}); nothing was written. Retry the command with the same commandId.`
  }
}

/** The thread's actor died while handling a command; it was restarted from storage. */
export class ActorFailed extends Schema.TaggedError<ActorFailed>()("ActorFailed", {
  threadId: Schema.String,
  command: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} failed while handling ${this.command} (${this.detail}) and was restarted from storage; what was recorded before the failure is kept. Retry with the same commandId to learn whether the command took effect.`
  }
}

export class ActorStopped extends Schema.TaggedError<ActorStopped>()("ActorStopped", {
  threadId: Schema.String
}) {
  override get message() {
    return `Thread ${this.threadId} was stopping when the command arrived; retry it with the same commandId.`
  }
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {}) {
  override get message() {
    return "Missing or wrong token. Pass the daemon's token (SKEIN_TOKEN or --token); on the daemon's machine the CLI and the typed client read it from DATA_DIR/token."
  }
}

/** Every error a client can receive from a Skein method. */
export const SkeinError = Schema.Union(
  ThreadNotFound,
  RunNotFound,
  HandoffNotFound,
  ProviderNotFound,
  RunAlreadyActive,
  CannotSteer,
  SubagentMoreAutonomous,
  NoActiveRun,
  CommandConflict,
  InvalidInput,
  InvalidWorkspace,
  UnsupportedContextTransfer,
  GitFailed,
  RestorePending,
  DatabaseInUse,
  InvalidSourcePoint,
  NotAFork,
  ObserveOnlyThread,
  ApprovalNotFound,
  ProviderFailure,
  StorageError,
  SequenceConflict,
  ActorFailed,
  ActorStopped,
  Unauthorized
)
export type SkeinError = typeof SkeinError.Type
