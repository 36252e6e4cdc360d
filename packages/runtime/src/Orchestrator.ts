/**
 * The runtime's public face: one method per contract operation. The server maps RPC
 * methods onto it one to one; an embedding host may call it directly.
 */
import type {
  AppThread,
  ContextHandoff,
  ContextTransfer,
  CreateThreadFields,
  ForkThreadFields,
  InterruptRunFields,
  MergeBackFields,
  ProviderInstanceInfo,
  RespondApprovalFields,
  RollbackFields,
  Run,
  RunView,
  SkeinError,
  SpawnSubagentFields,
  StartRunFields,
  StoredEvent,
  ThreadId,
  ThreadLocation,
  RollbackView,
  ThreadView,
  ThreadViewOptions,
  TurnItem,
  ContextHandoffId,
  TransferStatus
} from "@skein/domain"
import { Context } from "effect"
import type { ServedAtShape } from "./resources/ServedAt.js"
import type { ToolCredentialsShape } from "./resources/ToolCredentials.js"
import type { Effect, Schema, Scope, Stream } from "effect"

type Payload<F extends Schema.Struct.Fields> = Schema.Struct.Type<F>

export interface OrchestratorShape {
  readonly createThread: (input: Payload<typeof CreateThreadFields>) => Effect.Effect<AppThread, SkeinError>
  /** The whole thread by default; `options.runs` asks for a window of its runs, `options.items: false` for runs without items. */
  readonly getThread: (threadId: ThreadId, options?: ThreadViewOptions) => Effect.Effect<ThreadView, SkeinError>
  readonly listThreads: (filter: {
    readonly parentThreadId?: ThreadId
    readonly rootThreadId?: ThreadId
  }) => Effect.Effect<ReadonlyArray<AppThread>, SkeinError>
  /** Transfers by status, of every thread or of one lineage (`rootThreadId`), oldest first. */
  readonly listTransfers: (filter: {
    readonly status?: TransferStatus
    readonly rootThreadId?: ThreadId
  }) => Effect.Effect<ReadonlyArray<ContextTransfer>, SkeinError>
  /** Replays the thread's events after `fromSequence` (a per-thread sequence), then follows live ones. */
  readonly events: (threadId: ThreadId, fromSequence?: number) => Stream.Stream<StoredEvent, SkeinError>
  /**
   * The same events, handed to a plain callback while the scope is open: live batches
   * arrive synchronously right after their commit, so a server can fan them out to
   * many followers without a fiber per follower.
   */
  readonly follow: (
    threadId: ThreadId,
    fromSequence: number,
    onEvents: (events: ReadonlyArray<StoredEvent>) => void
  ) => Effect.Effect<void, SkeinError, Scope.Scope>
  readonly startRun: (input: Payload<typeof StartRunFields>) => Effect.Effect<RunView, SkeinError>
  readonly interruptRun: (input: Payload<typeof InterruptRunFields>) => Effect.Effect<Run, SkeinError>
  readonly forkThread: (
    input: Payload<typeof ForkThreadFields>
  ) => Effect.Effect<{ readonly thread: AppThread; readonly transfer: ContextTransfer }, SkeinError>
  readonly mergeBack: (input: Payload<typeof MergeBackFields>) => Effect.Effect<ContextTransfer, SkeinError>
  /**
   * Rolls back to run N; with `restoreFiles`, the workspace's files too, saved first and
   * answered with what changed (`restore`); with `dryRun`, that answer and nothing changed.
   */
  readonly rollback: (input: Payload<typeof RollbackFields>) => Effect.Effect<RollbackView, SkeinError>
  /** A subagent: its child thread and first run; `createdBy` says who asked (default the user, a host). */
  readonly spawnSubagent: (
    input: Payload<typeof SpawnSubagentFields>,
    options?: { readonly createdBy?: "user" | "agent" }
  ) => Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError>
  readonly getHandoff: (handoffId: ContextHandoffId) => Effect.Effect<ContextHandoff, SkeinError>
  readonly respondApproval: (input: Payload<typeof RespondApprovalFields>) => Effect.Effect<TurnItem, SkeinError>
  readonly listProviders: Effect.Effect<ReadonlyArray<ProviderInstanceInfo>, SkeinError>
  /** `thread.locate`: where the thread's actor runs (in a cluster, its runner's RPC url). */
  readonly locateThread: (threadId: ThreadId) => Effect.Effect<ThreadLocation, SkeinError>
  /** Where this process serves RPC; a server sets it once it listens. */
  readonly servedAt: ServedAtShape
  /** Credentials for Skein's own tools (MCP), each acting for one thread. */
  readonly toolCredentials: ToolCredentialsShape
  /** Graceful stop: running runs end `interrupted` (reason `shutdown`), sessions close. */
  readonly shutdown: Effect.Effect<void>
}

export class Orchestrator extends Context.Tag("@skein/runtime/Orchestrator")<Orchestrator, OrchestratorShape>() {}
