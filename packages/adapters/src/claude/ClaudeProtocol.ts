/**
 * The part of Claude Code's headless streaming protocol the Claude driver speaks
 * (`claude -p --input-format stream-json --output-format stream-json --verbose`), as
 * schemas. One JSON value per line each way. We write user messages and control
 * requests (initialize, interrupt) and answer the CLI's permission requests; it writes
 * system notices, assistant and user messages (tool results), control responses and
 * requests, and one `result` line that ends each turn.
 *
 * Only what the driver uses is decoded; a line of another type is ignored unread.
 */
import { Schema } from "effect"

export const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const ThinkingBlock = Schema.Struct({ type: Schema.Literal("thinking"), thinking: Schema.String })
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.Unknown
})
export const ToolResultBlock = Schema.Struct({
  type: Schema.Literal("tool_result"),
  tool_use_id: Schema.String,
  content: Schema.optional(Schema.Unknown),
  is_error: Schema.optional(Schema.NullOr(Schema.Boolean))
})
/** A content block; kinds the driver does not map decode as `Other` and are skipped. */
export const Block = Schema.Union(
  TextBlock,
  ThinkingBlock,
  ToolUseBlock,
  ToolResultBlock,
  Schema.Struct({ type: Schema.String })
)
export type Block = typeof Block.Type

const Usage = Schema.Struct({
  input_tokens: Schema.optional(Schema.Number),
  output_tokens: Schema.optional(Schema.Number),
  cache_read_input_tokens: Schema.optional(Schema.Number)
})

export const AssistantLine = Schema.Struct({
  type: Schema.Literal("assistant"),
  uuid: Schema.optional(Schema.String),
  parent_tool_use_id: Schema.optional(Schema.NullOr(Schema.String)),
  message: Schema.Struct({ content: Schema.Array(Block) })
})
export const UserLine = Schema.Struct({
  type: Schema.Literal("user"),
  uuid: Schema.optional(Schema.String),
  /** A message Skein wrote, echoed once Claude Code takes it in (`--replay-user-messages`). */
  isReplay: Schema.optional(Schema.Boolean),
  parent_tool_use_id: Schema.optional(Schema.NullOr(Schema.String)),
  message: Schema.Struct({ content: Schema.Union(Schema.String, Schema.Array(Block)) })
})
export const ResultLine = Schema.Struct({
  type: Schema.Literal("result"),
  subtype: Schema.String,
  is_error: Schema.optional(Schema.Boolean),
  result: Schema.optional(Schema.String),
  errors: Schema.optional(Schema.Array(Schema.String)),
  terminal_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Usage)
})
export type ResultLine = typeof ResultLine.Type
export const TaskNotification = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("task_notification"),
  tool_use_id: Schema.optional(Schema.String),
  task_id: Schema.optional(Schema.String),
  status: Schema.String,
  summary: Schema.optional(Schema.String)
})
export const ControlResponseLine = Schema.Struct({
  type: Schema.Literal("control_response"),
  response: Schema.Struct({
    subtype: Schema.String,
    request_id: Schema.String,
    error: Schema.optional(Schema.String)
  })
})
export const PermissionRequestLine = Schema.Struct({
  type: Schema.Literal("control_request"),
  request_id: Schema.String,
  request: Schema.Struct({
    subtype: Schema.Literal("can_use_tool"),
    tool_name: Schema.String,
    input: Schema.Unknown,
    description: Schema.optional(Schema.String),
    tool_use_id: Schema.optional(Schema.String)
  })
})
/** A control request of another subtype: answered with an error so the CLI does not wait. */
export const OtherControlRequestLine = Schema.Struct({
  type: Schema.Literal("control_request"),
  request_id: Schema.String,
  request: Schema.Struct({ subtype: Schema.String })
})

export const Line = Schema.Union(
  AssistantLine,
  UserLine,
  ResultLine,
  TaskNotification,
  ControlResponseLine,
  PermissionRequestLine,
  OtherControlRequestLine
)
export type Line = typeof Line.Type

/** The line types decoded above; any other `type` is skipped before decoding. */
export const knownLineTypes: ReadonlySet<string> = new Set([
  "assistant",
  "user",
  "result",
  "system",
  "control_response",
  "control_request"
])

// Lines we write.

export const userLine = (uuid: string, texts: ReadonlyArray<string>) => ({
  type: "user",
  session_id: "",
  parent_tool_use_id: null,
  uuid,
  message: { role: "user", content: texts.map((text) => ({ type: "text", text })) }
})

export const controlRequest = (requestId: string, subtype: "initialize" | "interrupt") => ({
  type: "control_request",
  request_id: requestId,
  request: { subtype }
})

export type PermissionAnswer =
  | { readonly behavior: "allow"; readonly updatedInput: unknown }
  | { readonly behavior: "deny"; readonly message: string; readonly interrupt?: boolean }

export const controlSuccess = (requestId: string, response: PermissionAnswer) => ({
  type: "control_response",
  response: { subtype: "success", request_id: requestId, response }
})

export const controlError = (requestId: string, error: string) => ({
  type: "control_response",
  response: { subtype: "error", request_id: requestId, error }
})
