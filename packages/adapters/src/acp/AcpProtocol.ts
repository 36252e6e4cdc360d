/**
 * The part of the Agent Client Protocol (version 1) the `acp` driver speaks, as Effect
 * Schemas: what it decodes of the agent's replies, notifications and requests. Fields
 * the driver does not read are left out (and ignored when present), so an agent that
 * adds fields keeps working.
 */
import { Schema } from "effect"

export const PROTOCOL_VERSION = 1

/** A capability the agent advertises as an object (`{}`) when it has it. */
const Present = Schema.optional(Schema.NullOr(Schema.Object))

export const AgentCapabilities = Schema.Struct({
  loadSession: Schema.optional(Schema.NullOr(Schema.Boolean)),
  mcpCapabilities: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        http: Schema.optional(Schema.NullOr(Schema.Boolean))
      })
    )
  ),
  sessionCapabilities: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        resume: Present,
        fork: Present,
        close: Present
      })
    )
  )
})
export type AgentCapabilities = typeof AgentCapabilities.Type

export const InitializeResult = Schema.Struct({
  protocolVersion: Schema.Number,
  agentCapabilities: Schema.optional(Schema.NullOr(AgentCapabilities)),
  agentInfo: Schema.optional(
    Schema.NullOr(Schema.Struct({ name: Schema.String, version: Schema.optional(Schema.NullOr(Schema.String)) }))
  )
})
export type InitializeResult = typeof InitializeResult.Type

/** The reply to `session/new` and `session/fork`. */
export const SessionResult = Schema.Struct({ sessionId: Schema.String })

export const StopReason = Schema.Literal("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")
export type StopReason = typeof StopReason.Type

export const PromptUsage = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cachedReadTokens: Schema.optional(Schema.NullOr(Schema.Number))
})

export const PromptResult = Schema.Struct({
  stopReason: StopReason,
  usage: Schema.optional(Schema.NullOr(PromptUsage))
})
export type PromptResult = typeof PromptResult.Type

/** A content block of a message chunk or a tool call's content: only its text is read. */
const ContentBlock = Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) })

export const ToolCallContent = Schema.Struct({
  type: Schema.String,
  content: Schema.optional(ContentBlock),
  path: Schema.optional(Schema.String),
  oldText: Schema.optional(Schema.NullOr(Schema.String)),
  newText: Schema.optional(Schema.String)
})
export type ToolCallContent = typeof ToolCallContent.Type

export const ToolCallStatus = Schema.Literal("pending", "in_progress", "completed", "failed")

/** A `tool_call` or a `tool_call_update`: every field but the id may be absent in an update. */
export const ToolCallReport = Schema.Struct({
  toolCallId: Schema.String,
  title: Schema.optional(Schema.NullOr(Schema.String)),
  kind: Schema.optional(Schema.NullOr(Schema.String)),
  status: Schema.optional(Schema.NullOr(ToolCallStatus)),
  content: Schema.optional(Schema.NullOr(Schema.Array(ToolCallContent))),
  rawInput: Schema.optional(Schema.Unknown),
  rawOutput: Schema.optional(Schema.Unknown)
})
export type ToolCallReport = typeof ToolCallReport.Type

export const PlanEntry = Schema.Struct({
  content: Schema.String,
  status: Schema.Literal("pending", "in_progress", "completed")
})

/** The `session/update` kinds that become turn items; the others are ignored. */
export const SessionUpdate = Schema.Union(
  Schema.Struct({
    sessionUpdate: Schema.Literal("agent_message_chunk", "agent_thought_chunk"),
    content: ContentBlock,
    messageId: Schema.optional(Schema.NullOr(Schema.String))
  }),
  Schema.extend(Schema.Struct({ sessionUpdate: Schema.Literal("tool_call", "tool_call_update") }), ToolCallReport),
  Schema.Struct({ sessionUpdate: Schema.Literal("plan"), entries: Schema.Array(PlanEntry) })
)
export type SessionUpdate = typeof SessionUpdate.Type

/** The kinds of `SessionUpdate`: an update of another kind is not decoded at all. */
export const itemUpdates: ReadonlySet<string> = new Set([
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan"
])

export const PermissionOption = Schema.Struct({
  optionId: Schema.String,
  name: Schema.optional(Schema.String),
  kind: Schema.Literal("allow_once", "allow_always", "reject_once", "reject_always")
})
export type PermissionOption = typeof PermissionOption.Type

export const RequestPermission = Schema.Struct({
  sessionId: Schema.String,
  toolCall: ToolCallReport,
  options: Schema.Array(PermissionOption)
})
export type RequestPermission = typeof RequestPermission.Type

export const ReadTextFile = Schema.Struct({
  sessionId: Schema.String,
  path: Schema.String,
  line: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.positive()))),
  limit: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative())))
})
export type ReadTextFile = typeof ReadTextFile.Type

export const WriteTextFile = Schema.Struct({
  sessionId: Schema.String,
  path: Schema.String,
  content: Schema.String
})
export type WriteTextFile = typeof WriteTextFile.Type

/** JSON-RPC error codes the driver answers with. */
export const ErrorCodes = {
  invalidParams: -32602,
  methodNotFound: -32601,
  /** ACP's "resource not found" (a file that does not exist). */
  resourceNotFound: -32002
} as const

/** Skein's tools as an HTTP MCP server of a session (`mcpServers`), its credential as a bearer header. */
export const toolsServer = (tools: { readonly url: string; readonly token: string }) => ({
  type: "http",
  name: "skein",
  url: tools.url,
  headers: [{ name: "Authorization", value: `Bearer ${tools.token}` }]
})
