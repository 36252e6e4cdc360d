/**
 * Skein's own tools, as an MCP server acting for one app thread: `spawn_subagent`,
 * `subagent_status`, `await_subagents`, `cancel_subagent` and `list_providers`. Each
 * tool's arguments are an Effect Schema (shown in `tools/list`, decoded before the
 * handler runs); each answer is JSON, as text and as structured content. A refusal
 * (a limit, another thread's child, a Skein error) is a tool error whose text says what
 * to do, with `{error: {_tag, message}}` as structured content.
 */
import { McpServer } from "@modelcontextprotocol/server"
import type { ThreadId } from "@skein/domain"
import type { OrchestratorShape } from "@skein/runtime"
import { Telemetry } from "@skein/runtime"
import { Cause, Effect, Exit, Schema } from "effect"
import * as Subagents from "./Subagents.js"
import type { SubagentLimits } from "./SubagentPolicy.js"
import { toolInput } from "./ToolSchema.js"

export const SERVER_NAME = "skein"

const described = <S extends Schema.Schema.Any>(schema: S, description: string) =>
  schema.annotations({ description }) as S

const ChildThreadId = described(
  Schema.NonEmptyTrimmedString,
  "The child's app thread id, as spawn_subagent answered it"
)
const TimeoutMs = Schema.Int.pipe(Schema.between(0, 3_600_000))

const SpawnArgs = Schema.Struct({
  provider: described(Schema.NonEmptyTrimmedString, "The provider instance to run the child on (see list_providers)"),
  prompt: described(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1_048_576)), "The child's task"),
  title: Schema.optional(described(Schema.String.pipe(Schema.maxLength(500)), "The child thread's title")),
  model: Schema.optional(described(Schema.String, "The model of the child's run")),
  wait: Schema.optional(described(Schema.Boolean, "Answer once the child's run ends (or timeoutMs passes)")),
  timeoutMs: Schema.optional(described(TimeoutMs, `How long to wait (default ${Subagents.DEFAULT_WAIT_MS} ms)`)),
  requestId: Schema.optional(
    described(
      Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(200)),
      "Makes a retried call answer the same child rather than start another"
    )
  )
})
const StatusArgs = Schema.Struct({ childThreadId: ChildThreadId })
const AwaitArgs = Schema.Struct({
  childThreadIds: Schema.optional(
    described(Schema.Array(ChildThreadId), "Which children (default: every subagent of this thread)")
  ),
  timeoutMs: described(TimeoutMs, "How long to wait at most"),
  all: Schema.optional(described(Schema.Boolean, "Wait for all of them (default: the first to finish)"))
})
const NoArgs = Schema.Struct({})

// Built once: the SDK builds a server per request, and a schema's JSON Schema costs.
const inputs = {
  spawn: toolInput(SpawnArgs),
  status: toolInput(StatusArgs),
  await: toolInput(AwaitArgs),
  none: toolInput(NoArgs)
}

type ToolAnswer = {
  content: Array<{ type: "text"; text: string }>
  structuredContent: Record<string, unknown>
  isError?: boolean
}

const answer = (value: Record<string, unknown>): ToolAnswer => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value
})

/** A failed tool call's answer: a typed error's tag and message, or a defect's short mention. */
const refusal = (cause: Cause.Cause<{ readonly _tag: string; readonly message: string }>): ToolAnswer => {
  const failure = Cause.failureOption(cause)
  const error =
    failure._tag === "Some"
      ? { _tag: failure.value._tag, message: failure.value.message }
      : { _tag: "InternalError", message: "Skein failed to run this tool; see its log" }
  return {
    content: [{ type: "text", text: `${error._tag}: ${error.message}` }],
    structuredContent: { error },
    isError: true
  }
}

export interface ToolServerDeps {
  readonly orchestrator: OrchestratorShape
  readonly limits: SubagentLimits
  /** Runs a tool's effect in the server's runtime. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<Exit.Exit<A, E>>
}

/**
 * Where agents put their own id for a tool call in the request's `_meta` (Claude Code:
 * `claudecode/toolUseId`; Codex: `callId`), so that a retried call is known as one.
 */
const TOOL_CALL_ID_KEYS = ["claudecode/toolUseId", "callId"] as const

const toolCallIdOf = (meta: Record<string, unknown> | undefined): string | undefined => {
  for (const key of TOOL_CALL_ID_KEYS) {
    const value = meta?.[key]
    if (typeof value === "string" && value.length > 0 && value.length <= 200) return `call:${value}`
  }
  return undefined
}

/** What `tools/list` shows of each tool: its title, what it does, its arguments, its hints. */
const toolDescriptions = {
  spawn_subagent: {
    title: "Spawn a subagent",
    description:
      "Start a subagent: a child thread of this one whose first run, on the provider you name, works on the prompt. " +
      "Its result comes back to this thread twice: as this tool's answer when you wait, and in this thread's next run.",
    inputSchema: inputs.spawn,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
  },
  subagent_status: {
    title: "A subagent's status",
    description: "The status of one of this thread's subagents, with its result once its run has ended.",
    inputSchema: inputs.status,
    annotations: { readOnlyHint: true, openWorldHint: false }
  },
  await_subagents: {
    title: "Wait for subagents",
    description:
      "Wait until the first of this thread's subagents (or the ones named) finishes, or all of them with all: true, " +
      "or until timeoutMs passes; answers each one's status.",
    inputSchema: inputs.await,
    annotations: { readOnlyHint: true, openWorldHint: false }
  },
  cancel_subagent: {
    title: "Cancel a subagent",
    description: "Stop one of this thread's subagents: its running run is interrupted.",
    inputSchema: inputs.status,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
  },
  list_providers: {
    title: "List providers",
    description:
      "The provider instances a subagent can run on, with what each can do and how freely it acts (a subagent may not act more freely than you).",
    inputSchema: inputs.none,
    annotations: { readOnlyHint: true, openWorldHint: false }
  }
} as const

/** An MCP server whose tools act for `threadId` (one per request: the SDK serves each request on a fresh one). */
export const makeToolServer = (deps: ToolServerDeps, threadId: ThreadId, version: string): McpServer => {
  const server = new McpServer({ name: SERVER_NAME, version })
  const subagents = Subagents.make(deps.orchestrator, threadId, deps.limits)
  /** Runs a tool's effect, in an `execute_tool` span while telemetry is on. */
  const handle = async <E extends { readonly _tag: string; readonly message: string }>(
    tool: keyof typeof toolDescriptions,
    effect: Effect.Effect<Record<string, unknown>, E>
  ): Promise<ToolAnswer> => {
    const exit = await deps.run(
      Telemetry.traced(`execute_tool ${tool}`, {
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": tool,
          "gen_ai.conversation.id": threadId
        }
      })(effect)
    )
    return Exit.isSuccess(exit) ? answer(exit.value) : refusal(exit.cause)
  }

  server.registerTool("spawn_subagent", toolDescriptions.spawn_subagent, (args, context) => {
    // Without a requestId, the agent's own id for this tool call makes a retry return the same child.
    const requestId = args.requestId ?? toolCallIdOf(context.mcpReq._meta)
    return handle(
      "spawn_subagent",
      Effect.map(subagents.spawn({ ...args, ...(requestId === undefined ? {} : { requestId }) }), (status) => ({
        ...status
      }))
    )
  })
  server.registerTool("subagent_status", toolDescriptions.subagent_status, (args) =>
    handle(
      "subagent_status",
      Effect.map(subagents.status(args.childThreadId), (status) => ({ ...status }))
    )
  )
  server.registerTool("await_subagents", toolDescriptions.await_subagents, (args) =>
    handle(
      "await_subagents",
      Effect.map(subagents.awaitChildren(args), (statuses) => ({ subagents: statuses }))
    )
  )
  server.registerTool("cancel_subagent", toolDescriptions.cancel_subagent, (args) =>
    handle(
      "cancel_subagent",
      Effect.map(subagents.cancel(args.childThreadId), (status) => ({ ...status }))
    )
  )
  server.registerTool("list_providers", toolDescriptions.list_providers, () =>
    handle(
      "list_providers",
      Effect.map(deps.orchestrator.listProviders, (providers) => ({
        providers: providers.map(({ autonomy, capabilities, driver, model, name }) => ({
          name,
          driver,
          model,
          capabilities,
          autonomy
        }))
      }))
    )
  )
  return server
}
