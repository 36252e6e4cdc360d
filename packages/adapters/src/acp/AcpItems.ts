/**
 * A turn's `session/update` reports made into turn items, as a pure assembler: message
 * and thought chunks joined into one item per message (a new `messageId`, or any other
 * report between two chunks, starts the next), a tool call reported once it has ended
 * (or when the turn ends, as it stands then), a diff in a tool call's content also as
 * a `file_change`, a plan as a `plan` item. Thought chunks become `reasoning` items,
 * which never leave the provider.
 */
import type { TurnItemContent } from "@skein/domain"
import { clip, renderInput } from "../agents/AgentCommon.js"
import type { SessionUpdate, ToolCallContent, ToolCallReport } from "./AcpProtocol.js"

const OUTPUT_CHARS = 4000

interface OpenText {
  readonly type: "assistant_message" | "reasoning"
  readonly messageId: string | null
  text: string
}

interface OpenTool {
  title: string | null
  kind: string | null
  input: unknown
  content: ReadonlyArray<ToolCallContent>
  rawOutput: unknown
  status: string | null
}

export interface TurnAssembler {
  /** The items a report completes (often none: a chunk only adds to what is open). */
  readonly update: (update: SessionUpdate) => ReadonlyArray<TurnItemContent>
  /** What is still open when the turn ends: the last message, tool calls that never ended. */
  readonly finish: () => ReadonlyArray<TurnItemContent>
}

/** The text of a tool call's content blocks (its diffs aside), one per line. */
const textOf = (content: ReadonlyArray<ToolCallContent>): string =>
  content
    .map((c) => (c.type === "content" ? (c.content?.text ?? "") : ""))
    .filter((t) => t.length > 0)
    .join("\n")

const outputOf = (tool: OpenTool): string | null => {
  const text = textOf(tool.content)
  if (text.length > 0) return clip(text, OUTPUT_CHARS)
  if (tool.rawOutput !== undefined && tool.rawOutput !== null) return renderInput(tool.rawOutput)
  return tool.status === "failed" ? "failed" : null
}

/** A tool call as items: the call, then a `file_change` per diff it carries. */
const toolItems = (tool: OpenTool): ReadonlyArray<TurnItemContent> => {
  const name = tool.title ?? tool.kind ?? "tool"
  const call: TurnItemContent = {
    type: "tool_call",
    name: tool.status === "failed" ? `${name} (failed)` : name,
    input: tool.input === undefined ? "" : renderInput(tool.input),
    output: outputOf(tool)
  }
  const changes = tool.content.flatMap((c): ReadonlyArray<TurnItemContent> =>
    c.type === "diff" && typeof c.path === "string"
      ? [{ type: "file_change", path: c.path, kind: c.oldText == null ? "add" : "modify", summary: name }]
      : []
  )
  return [call, ...changes]
}

const ended = (status: string | null | undefined): boolean => status === "completed" || status === "failed"

/** Applies what a report says of a tool call to what is known of it. */
const merge = (tool: OpenTool, report: ToolCallReport): void => {
  if (report.title != null) tool.title = report.title
  if (report.kind != null) tool.kind = report.kind
  if (report.rawInput !== undefined) tool.input = report.rawInput
  if (report.content != null) tool.content = report.content
  if (report.rawOutput !== undefined) tool.rawOutput = report.rawOutput
  if (report.status != null) tool.status = report.status
}

export const makeTurnAssembler = (): TurnAssembler => {
  let open: OpenText | null = null
  const tools = new Map<string, OpenTool>()
  const reported = new Set<string>()

  const closeText = (): ReadonlyArray<TurnItemContent> => {
    const text = open
    open = null
    return text === null || text.text.length === 0 ? [] : [{ type: text.type, text: text.text }]
  }

  const onTool = (report: ToolCallReport): ReadonlyArray<TurnItemContent> => {
    if (reported.has(report.toolCallId)) return []
    const tool = tools.get(report.toolCallId) ?? {
      title: null,
      kind: null,
      input: undefined,
      content: [],
      rawOutput: undefined,
      status: null
    }
    tools.set(report.toolCallId, tool)
    merge(tool, report)
    if (!ended(tool.status)) return []
    tools.delete(report.toolCallId)
    reported.add(report.toolCallId)
    return toolItems(tool)
  }

  const update = (report: SessionUpdate): ReadonlyArray<TurnItemContent> => {
    switch (report.sessionUpdate) {
      case "agent_message_chunk":
      case "agent_thought_chunk": {
        const type = report.sessionUpdate === "agent_message_chunk" ? "assistant_message" : "reasoning"
        const messageId = report.messageId ?? null
        const text = report.content.type === "text" ? (report.content.text ?? "") : ""
        if (open !== null && open.type === type && (messageId === null || open.messageId === messageId)) {
          open.text += text
          return []
        }
        const before = closeText()
        open = { type, messageId, text }
        return before
      }
      case "tool_call":
      case "tool_call_update":
        return [...closeText(), ...onTool(report)]
      case "plan":
        return [
          ...closeText(),
          { type: "plan", steps: report.entries.map((entry) => ({ text: entry.content, status: entry.status })) }
        ]
    }
  }

  const finish = (): ReadonlyArray<TurnItemContent> => {
    const rest = [...closeText(), ...[...tools.values()].flatMap(toolItems)]
    tools.clear()
    return rest
  }

  return { update, finish }
}
