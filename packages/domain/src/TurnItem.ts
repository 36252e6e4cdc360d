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
  HandoffContext
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
