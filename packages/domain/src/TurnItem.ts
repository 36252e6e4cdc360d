/**
 * Turn items: everything that happened inside one run, in order. The content
 * union is what a provider reports; the runtime adds identity and position.
 */
import { Schema } from "effect"
import { ApprovalId, ContextHandoffId, RunId, ThreadId, TurnItemId } from "./Ids.js"
import { HandoffDelivery } from "./Capabilities.js"

export const UserMessage = Schema.Struct({ type: Schema.Literal("user_message"), text: Schema.String })
export const AssistantMessage = Schema.Struct({ type: Schema.Literal("assistant_message"), text: Schema.String })
/** Hidden reasoning. It never leaves the provider that produced it: no handoff, no summary. */
export const Reasoning = Schema.Struct({ type: Schema.Literal("reasoning"), text: Schema.String })
export const ToolCall = Schema.Struct({
  type: Schema.Literal("tool_call"),
  name: Schema.String,
  input: Schema.String,
  output: Schema.NullOr(Schema.String)
})
export const CommandExecution = Schema.Struct({
  type: Schema.Literal("command_execution"),
  command: Schema.String,
  exitCode: Schema.NullOr(Schema.Int),
  output: Schema.String
})
export const FileChangeKind = Schema.Literal("add", "modify", "delete")
export const FileChange = Schema.Struct({
  type: Schema.Literal("file_change"),
  path: Schema.String,
  kind: FileChangeKind,
  summary: Schema.String
})
export const PlanStepStatus = Schema.Literal("pending", "in_progress", "completed")
export const Plan = Schema.Struct({
  type: Schema.Literal("plan"),
  steps: Schema.Array(Schema.Struct({ text: Schema.String, status: PlanStepStatus }))
})
export const ApprovalStatus = Schema.Literal("open", "accept", "decline", "cancel")
export type ApprovalStatus = typeof ApprovalStatus.Type
export const ApprovalRequest = Schema.Struct({
  type: Schema.Literal("approval_request"),
  approvalId: ApprovalId,
  question: Schema.String,
  status: ApprovalStatus
})
export const ErrorItem = Schema.Struct({
  type: Schema.Literal("error"),
  message: Schema.String,
  code: Schema.NullOr(Schema.String)
})
/** The handoff block a run delivered to its provider, as the provider received it. */
export const HandoffContext = Schema.Struct({
  type: Schema.Literal("handoff_context"),
  handoffId: ContextHandoffId,
  delivery: HandoffDelivery,
  text: Schema.String
})

/**
 * A child agent the provider ran natively inside this run (a sub-task it spawned
 * itself): observed, not driven by Skein. An adapter reports it when it starts
 * (`running`) and again when it ends; items of one run with the same `childRef`
 * are one node, updated in place.
 */
export const ChildAgent = Schema.Struct({
  type: Schema.Literal("child_agent"),
  /** The provider's id for the child (its tool-use id, its agent id). */
  childRef: Schema.String,
  /** What it was asked to do. */
  description: Schema.String,
  status: Schema.Literal("running", "completed", "failed"),
  /** The child's own native thread, when the provider reports one. */
  nativeThreadRef: Schema.NullOr(Schema.String),
  /** What it answered, once it ended. */
  result: Schema.NullOr(Schema.String),
  /** The observe-only app thread Skein keeps of it (set by Skein, when the child has its own thread). */
  childThreadId: Schema.optional(ThreadId)
})

export const TurnItemContent = Schema.Union(
  UserMessage,
  AssistantMessage,
  Reasoning,
  ToolCall,
  CommandExecution,
  FileChange,
  Plan,
  ApprovalRequest,
  ErrorItem,
  HandoffContext,
  ChildAgent
)
export type TurnItemContent = typeof TurnItemContent.Type
export type TurnItemType = TurnItemContent["type"]

export const TurnItemHeader = Schema.Struct({
  id: TurnItemId,
  threadId: ThreadId,
  runId: RunId,
  /** Position inside the run, from 0. */
  seq: Schema.Int.pipe(Schema.nonNegative()),
  createdAt: Schema.String
})

export const TurnItem = Schema.extend(TurnItemHeader, TurnItemContent)
export type TurnItem = typeof TurnItem.Type
