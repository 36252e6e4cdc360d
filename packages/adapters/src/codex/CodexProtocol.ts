/**
 * The part of Codex's app-server protocol the Codex driver speaks, as schemas: one
 * JSON value per line over stdio, JSON-RPC shaped without the `"jsonrpc"` member.
 * The client's requests carry ids it chooses; the server sends its own requests
 * (approvals) with ids from its own number space, and notifications without an id.
 *
 * Only what the driver uses is decoded; everything else in a message is ignored, and
 * a notification whose method is not listed here is dropped unread. The types follow
 * what `codex app-server generate-ts` prints for the tested versions.
 */
import type { AgentTools } from "@skein/domain"
import { Schema } from "effect"

// The envelopes (requests, replies, notifications) are JsonRpcPeer's.

// ---------------------------------------------------------------------------------
// Client requests: params we send, results we read

export const AskForApproval = Schema.Literal("untrusted", "on-failure", "on-request", "never")
export type AskForApproval = typeof AskForApproval.Type
export const SandboxMode = Schema.Literal("read-only", "workspace-write", "danger-full-access")
export type SandboxMode = typeof SandboxMode.Type

export interface InitializeParams {
  readonly clientInfo: { readonly name: string; readonly title: string; readonly version: string }
  readonly capabilities: {
    readonly experimentalApi: boolean
    readonly requestAttestation: boolean
    readonly optOutNotificationMethods: ReadonlyArray<string>
  }
}
export const InitializeResult = Schema.Struct({ userAgent: Schema.String })

/**
 * Notifications the driver never reads, which `initialize` asks Codex not to send
 * (`optOutNotificationMethods`: exact method names, for this connection). Most are per
 * turn or per item (a turn's start, each item's start, status changes, rate limits);
 * the deltas are per token or per chunk of output, so with a real model they are most
 * of the lines a turn writes: each would be written by Codex and parsed here for
 * nothing. What the driver reads (items when completed, the turn's end, plans, token
 * usage, errors, deprecation notices, approval requests) still comes.
 */
export const unreadNotifications: ReadonlyArray<string> = [
  "warning",
  "configWarning",
  "remoteControl/status/changed",
  "thread/started",
  "thread/status/changed",
  "turn/started",
  "turn/diff/updated",
  "item/started",
  "item/agentMessage/delta",
  "item/plan/delta",
  "item/reasoning/summaryPartAdded",
  "item/reasoning/summaryTextDelta",
  "item/reasoning/textDelta",
  "item/commandExecution/outputDelta",
  "item/fileChange/outputDelta",
  "item/mcpToolCall/progress",
  "account/rateLimits/updated"
]

/** The thread settings Skein sends with thread/start, thread/resume and thread/fork. */
export interface ThreadSettings {
  readonly cwd?: string
  readonly model?: string
  readonly approvalPolicy?: AskForApproval
  readonly sandbox?: SandboxMode
  /** Config overrides for the thread (`config.toml` keys, dotted). */
  readonly config?: Readonly<Record<string, unknown>>
}

/** The MCP server name Skein's tools are under: the model sees them as the namespace `mcp__skein`. */
export const SKEIN_MCP_SERVER = "skein"

/**
 * Skein's tools as a thread's MCP server (Streamable HTTP, the credential as a header).
 * A blocking tool (a subagent waited for) may take as long as a turn may.
 */
export const toolsConfig = (tools: AgentTools): Readonly<Record<string, unknown>> => ({
  [`mcp_servers.${SKEIN_MCP_SERVER}.url`]: tools.url,
  [`mcp_servers.${SKEIN_MCP_SERVER}.http_headers`]: { Authorization: `Bearer ${tools.token}` },
  [`mcp_servers.${SKEIN_MCP_SERVER}.tool_timeout_sec`]: 3600
})

export const ThreadResult = Schema.Struct({ thread: Schema.Struct({ id: Schema.String }) })

export interface UserTextInput {
  readonly type: "text"
  readonly text: string
  readonly text_elements: ReadonlyArray<never>
}

export const TurnStatus = Schema.Literal("completed", "interrupted", "failed", "inProgress")
export const TurnError = Schema.Struct({ message: Schema.String })
export const Turn = Schema.Struct({
  id: Schema.String,
  status: TurnStatus,
  error: Schema.optional(Schema.NullOr(TurnError))
})
export type Turn = typeof Turn.Type

export const TurnStartResult = Schema.Struct({ turn: Turn })

export const TurnsListResult = Schema.Struct({
  data: Schema.Array(Turn),
  nextCursor: Schema.NullOr(Schema.String)
})

/** Every client method the driver calls, with the schema of its result. */
export const Results = {
  initialize: InitializeResult,
  "thread/start": ThreadResult,
  "thread/resume": ThreadResult,
  "thread/fork": ThreadResult,
  "thread/revert": Schema.Unknown,
  "thread/turns/list": TurnsListResult,
  "turn/start": TurnStartResult,
  "turn/steer": Schema.Struct({ turnId: Schema.String }),
  "turn/interrupt": Schema.Unknown
} as const
export type ClientMethod = keyof typeof Results

// ---------------------------------------------------------------------------------
// Thread items (the subset mapped to Skein's turn items)

const Nullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

export const AgentMessageItem = Schema.Struct({
  type: Schema.Literal("agentMessage"),
  id: Schema.String,
  text: Schema.String
})
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  summary: Schema.Array(Schema.String),
  content: Schema.Array(Schema.String)
})
export const CommandExecutionItem = Schema.Struct({
  type: Schema.Literal("commandExecution"),
  id: Schema.String,
  command: Schema.String,
  status: Schema.String,
  aggregatedOutput: Nullable(Schema.String),
  exitCode: Nullable(Schema.Number)
})
export const PatchChangeKind = Schema.Struct({ type: Schema.Literal("add", "delete", "update") })
export const FileChangeItem = Schema.Struct({
  type: Schema.Literal("fileChange"),
  id: Schema.String,
  status: Schema.String,
  changes: Schema.Array(Schema.Struct({ path: Schema.String, kind: PatchChangeKind, diff: Schema.String }))
})
export const McpToolCallItem = Schema.Struct({
  type: Schema.Literal("mcpToolCall"),
  id: Schema.String,
  server: Schema.String,
  tool: Schema.String,
  arguments: Schema.Unknown,
  result: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.Unknown)
})
export const DynamicToolCallItem = Schema.Struct({
  type: Schema.Literal("dynamicToolCall"),
  id: Schema.String,
  tool: Schema.String,
  arguments: Schema.Unknown,
  contentItems: Schema.optional(Schema.Unknown)
})

/** A call of Codex's own multi-agent tools (spawn, send input, resume, wait, close), with its agents' states. */
export const CollabAgentToolCallItem = Schema.Struct({
  type: Schema.Literal("collabAgentToolCall"),
  id: Schema.String,
  tool: Schema.String,
  receiverThreadIds: Schema.Array(Schema.String),
  prompt: Schema.optional(Schema.NullOr(Schema.String)),
  agentsStates: Schema.optional(
    Schema.NullOr(
      Schema.Record({
        key: Schema.String,
        value: Schema.Struct({ status: Schema.String, message: Schema.optional(Schema.NullOr(Schema.String)) })
      })
    )
  )
})
export type CollabAgentToolCallItem = typeof CollabAgentToolCallItem.Type

export const KnownItem = Schema.Union(
  AgentMessageItem,
  ReasoningItem,
  CommandExecutionItem,
  FileChangeItem,
  McpToolCallItem,
  DynamicToolCallItem,
  CollabAgentToolCallItem
)
export type KnownItem = typeof KnownItem.Type

// ---------------------------------------------------------------------------------
// Notifications the driver reads

const ThreadScoped = { threadId: Schema.String }

export const ItemCompleted = Schema.Struct({ ...ThreadScoped, turnId: Schema.String, item: Schema.Unknown })
export const TurnCompleted = Schema.Struct({ ...ThreadScoped, turn: Turn })
export const ErrorNotice = Schema.Struct({
  ...ThreadScoped,
  turnId: Schema.String,
  error: TurnError,
  willRetry: Schema.Boolean
})
export const PlanUpdated = Schema.Struct({
  ...ThreadScoped,
  turnId: Schema.String,
  plan: Schema.Array(
    Schema.Struct({ step: Schema.String, status: Schema.Literal("pending", "inProgress", "completed") })
  )
})
export const TokenUsageUpdated = Schema.Struct({
  ...ThreadScoped,
  turnId: Schema.String,
  tokenUsage: Schema.Struct({
    last: Schema.Struct({ inputTokens: Schema.Number, cachedInputTokens: Schema.Number, outputTokens: Schema.Number })
  })
})

export const Notifications = {
  "item/completed": ItemCompleted,
  "turn/completed": TurnCompleted,
  error: ErrorNotice,
  "turn/plan/updated": PlanUpdated,
  "thread/tokenUsage/updated": TokenUsageUpdated
} as const
export type NotificationMethod = keyof typeof Notifications

// ---------------------------------------------------------------------------------
// Server requests: approvals

export const CommandApprovalRequest = Schema.Struct({
  ...ThreadScoped,
  turnId: Schema.String,
  itemId: Schema.String,
  command: Nullable(Schema.String),
  reason: Nullable(Schema.String)
})
export const FileChangeApprovalRequest = Schema.Struct({
  ...ThreadScoped,
  turnId: Schema.String,
  itemId: Schema.String,
  reason: Nullable(Schema.String),
  grantRoot: Nullable(Schema.String)
})

export const ApprovalRequests = {
  "item/commandExecution/requestApproval": CommandApprovalRequest,
  "item/fileChange/requestApproval": FileChangeApprovalRequest
} as const
export type ApprovalMethod = keyof typeof ApprovalRequests

/** What Codex accepts as the answer to either approval request. */
export type CodexDecision = "accept" | "decline" | "cancel"
