/**
 * A run's turn items as ACP `session/update`s, pure: the reply as agent message chunks,
 * commands, tool calls, file changes and subagents as tool calls (updated in place as
 * their items are), plans, the handoff a run received as a visible tool call, steered
 * messages as user message chunks. Hidden reasoning is not sent; the run's own message
 * is the prompt the editor sent, not repeated.
 */
import type { ContentBlock, SessionUpdate, ToolCall } from "@agentclientprotocol/sdk/unstable"
import type { Run, TurnItem } from "@skein/domain"

const text = (value: string) => ({ type: "text" as const, text: value })

/** The tool call an item is shown as, or null when it is not shown as one. */
const toolCallOf = (item: TurnItem): ToolCall | null => {
  switch (item.type) {
    case "command_execution":
      return {
        toolCallId: item.id,
        title: `Run ${item.command}`,
        kind: "execute",
        status: item.exitCode === 0 ? "completed" : item.exitCode === null ? "in_progress" : "failed",
        content: item.output.length === 0 ? [] : [{ type: "content", content: text(item.output) }]
      }
    case "tool_call":
      return {
        toolCallId: item.id,
        title: item.name,
        kind: "other",
        status: item.output === null ? "in_progress" : "completed",
        rawInput: item.input,
        ...(item.output === null ? {} : { content: [{ type: "content" as const, content: text(item.output) }] })
      }
    case "file_change":
      return {
        toolCallId: item.id,
        title: `${item.kind === "add" ? "Add" : item.kind === "delete" ? "Delete" : "Edit"} ${item.path}`,
        kind: item.kind === "delete" ? "delete" : "edit",
        status: "completed",
        locations: [{ path: item.path }],
        content: item.summary.length === 0 ? [] : [{ type: "content", content: text(item.summary) }]
      }
    case "child_agent":
      return {
        toolCallId: item.id,
        title: `Subagent: ${item.description}`,
        kind: "other",
        status: item.status === "running" ? "in_progress" : item.status,
        ...(item.result === null ? {} : { content: [{ type: "content" as const, content: text(item.result) }] })
      }
    case "handoff_context":
      return {
        toolCallId: item.id,
        title: `Context handed over (${item.handoffId}, as ${item.delivery})`,
        kind: "think",
        status: "completed",
        content: [{ type: "content", content: text(item.text) }]
      }
    default:
      return null
  }
}

/**
 * The update for `item`, given the form of it already sent (`sent`, by item id: its
 * JSON), or null when nothing is to be sent. A tool-like item sent before is updated
 * in place (`tool_call_update`).
 */
export const updateOf = (item: TurnItem, sentBefore: boolean): SessionUpdate | null => {
  switch (item.type) {
    case "assistant_message":
      return sentBefore ? null : { sessionUpdate: "agent_message_chunk", content: text(item.text) }
    case "user_message":
      // The run's first user message is the prompt itself; later ones were steered in.
      return sentBefore || item.seq === 0 ? null : { sessionUpdate: "user_message_chunk", content: text(item.text) }
    case "plan":
      return {
        sessionUpdate: "plan",
        entries: item.steps.map((step) => ({ content: step.text, priority: "medium", status: step.status }))
      }
    case "error":
      return sentBefore ? null : { sessionUpdate: "agent_message_chunk", content: text(`Error: ${item.message}`) }
    case "reasoning":
    case "approval_request":
      return null
    default: {
      const call = toolCallOf(item)
      if (call === null) return null
      return sentBefore ? { ...call, sessionUpdate: "tool_call_update" } : { ...call, sessionUpdate: "tool_call" }
    }
  }
}

/** A prompt's text: its text blocks, and links to resources by name and address. */
export const promptText = (blocks: ReadonlyArray<ContentBlock>): string =>
  blocks
    .flatMap((block) =>
      block.type === "text" ? [block.text] : block.type === "resource_link" ? [`[${block.name}](${block.uri})`] : []
    )
    .join("\n")

/** How a run's end is told as a prompt's stop reason. */
export const stopReasonOf = (run: Run): "end_turn" | "cancelled" =>
  run.status === "interrupted" ? "cancelled" : "end_turn"
