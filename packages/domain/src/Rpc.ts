/**
 * The RPC contract: method names and payload, success and error schemas
 * (the public surface; its names are part of the contract). Handlers live in the server package.
 */
import { Rpc, RpcGroup } from "@effect/rpc"
import { Schema } from "effect"
import {
  CreateThreadFields,
  ForkThreadFields,
  InterruptRunFields,
  MergeBackFields,
  RespondApprovalFields,
  RollbackFields,
  SpawnSubagentFields,
  StartRunFields
} from "./Commands.js"
import { SkeinError } from "./Errors.js"
import { StoredEvent } from "./Events.js"
import { ContextHandoff } from "./Handoff.js"
import { ContextHandoffId, ThreadId } from "./Ids.js"
import { Run } from "./Run.js"
import { AppThread } from "./Thread.js"
import { ContextTransfer, TransferStatus } from "./Transfer.js"
import { TurnItem } from "./TurnItem.js"
import { ProviderInstanceInfo, RollbackView, RunView, ThreadView, ThreadViewOptions } from "./Views.js"

/**
 * A credential for Skein's own tools (MCP), acting for one thread: send it as
 * `Authorization: Bearer TOKEN` to `url` (null where this server serves no MCP endpoint).
 */
export const ToolCredential = Schema.Struct({ url: Schema.NullOr(Schema.String), token: Schema.String })
export type ToolCredential = typeof ToolCredential.Type

/**
 * Where a thread lives: the RPC url of the daemon whose process runs its actor (in a
 * cluster, its runner), or null where that daemon serves none. Any daemon serves any
 * request; one sent there saves the hop between runners.
 */
export const ThreadLocation = Schema.Struct({ url: Schema.NullOr(Schema.String) })
export type ThreadLocation = typeof ThreadLocation.Type

export class SkeinRpcs extends RpcGroup.make(
  Rpc.make("thread.create", { payload: CreateThreadFields, success: AppThread, error: SkeinError }),
  Rpc.make("thread.get", {
    payload: { threadId: ThreadId, ...ThreadViewOptions.fields },
    success: ThreadView,
    error: SkeinError
  }),
  Rpc.make("thread.list", {
    payload: { parentThreadId: Schema.optional(ThreadId), rootThreadId: Schema.optional(ThreadId) },
    success: Schema.Array(AppThread),
    error: SkeinError
  }),
  Rpc.make("thread.events", {
    payload: { threadId: ThreadId, fromSequence: Schema.optional(Schema.Int.pipe(Schema.nonNegative())) },
    success: StoredEvent,
    error: SkeinError,
    stream: true
  }),
  Rpc.make("run.start", { payload: StartRunFields, success: RunView, error: SkeinError }),
  Rpc.make("run.interrupt", { payload: InterruptRunFields, success: Run, error: SkeinError }),
  Rpc.make("thread.fork", {
    payload: ForkThreadFields,
    success: Schema.Struct({ thread: AppThread, transfer: ContextTransfer }),
    error: SkeinError
  }),
  Rpc.make("thread.mergeBack", { payload: MergeBackFields, success: ContextTransfer, error: SkeinError }),
  Rpc.make("thread.rollback", { payload: RollbackFields, success: RollbackView, error: SkeinError }),
  Rpc.make("subagent.spawn", {
    payload: SpawnSubagentFields,
    success: Schema.Struct({ thread: AppThread, run: Run }),
    error: SkeinError
  }),
  /**
   * Transfers by status (e.g. the `pending` ones, still waiting to be taken in), of every
   * thread or of one lineage (`rootThreadId`), oldest first.
   */
  Rpc.make("transfer.list", {
    payload: { status: Schema.optional(TransferStatus), rootThreadId: Schema.optional(ThreadId) },
    success: Schema.Array(ContextTransfer),
    error: SkeinError
  }),
  Rpc.make("handoff.get", { payload: { handoffId: ContextHandoffId }, success: ContextHandoff, error: SkeinError }),
  Rpc.make("approval.respond", { payload: RespondApprovalFields, success: TurnItem, error: SkeinError }),
  Rpc.make("provider.list", { success: Schema.Array(ProviderInstanceInfo), error: SkeinError }),
  Rpc.make("thread.locate", { payload: { threadId: ThreadId }, success: ThreadLocation, error: SkeinError }),
  Rpc.make("thread.toolCredential", {
    payload: { threadId: ThreadId },
    success: ToolCredential,
    error: SkeinError
  })
) {}

export type SkeinRpcMethod = (typeof SkeinRpcs)["requests"] extends ReadonlyMap<infer K, unknown> ? K : never
