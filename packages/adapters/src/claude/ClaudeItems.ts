/**
 * Claude Code's messages as Skein's turn items: text and thinking blocks, and each
 * tool use once its result arrives (a shell command, a file edit, any other tool).
 * The `Task`/`Agent` tool runs a subagent natively: it is a `child_agent` item,
 * `running` when the tool is called and `completed`/`failed` when it hands back.
 */
import type { TurnItemContent } from "@skein/domain"
import { clip, renderInput } from "../agents/AgentCommon.js"

/** Tools that start a native subagent. */
export const SUBAGENT_TOOLS: ReadonlySet<string> = new Set(["Task", "Agent"])

export interface ToolUse {
  readonly name: string
  readonly input: unknown
}

const field = (input: unknown, name: string): string | null => {
  const value = (input as Record<string, unknown> | null)?.[name]
  return typeof value === "string" ? value : null
}

/** The text of a tool result's content (a string, or text blocks). */
export const resultText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content
      .map((block) => (typeof (block as { text?: unknown })?.text === "string" ? (block as { text: string }).text : ""))
      .filter((text) => text.length > 0)
      .join("\n")
  }
  return ""
}

export const childStarted = (toolUseId: string, use: ToolUse): TurnItemContent => ({
  type: "child_agent",
  childRef: toolUseId,
  description: field(use.input, "description") ?? clip(field(use.input, "prompt") ?? "a subagent", 200),
  status: "running",
  nativeThreadRef: null,
  result: null
})

export const childEnded = (
  toolUseId: string,
  use: ToolUse | undefined,
  outcome: { readonly ok: boolean; readonly result: string; readonly nativeThreadRef: string | null }
): TurnItemContent => ({
  type: "child_agent",
  childRef: toolUseId,
  description: use
    ? (field(use.input, "description") ?? clip(field(use.input, "prompt") ?? "a subagent", 200))
    : "a subagent",
  status: outcome.ok ? "completed" : "failed",
  nativeThreadRef: outcome.nativeThreadRef,
  result: clip(outcome.result, 16_000)
})

/** A finished tool use (not a subagent) as a turn item. */
export const toolItem = (use: ToolUse, output: string, isError: boolean): TurnItemContent => {
  switch (use.name) {
    case "Bash": {
      const code = /exit code (\d+)/i.exec(output)
      return {
        type: "command_execution",
        command: field(use.input, "command") ?? renderInput(use.input),
        exitCode: isError ? (code ? Number(code[1]) : null) : 0,
        output: clip(output, 16_000)
      }
    }
    case "Write":
    case "Edit":
    case "MultiEdit":
    case "NotebookEdit": {
      const path = field(use.input, "file_path") ?? field(use.input, "notebook_path")
      if (path !== null && !isError) {
        return {
          type: "file_change",
          path,
          kind: use.name === "Write" && /created/i.test(output) ? "add" : "modify",
          summary: clip(output, 2000)
        }
      }
      return { type: "tool_call", name: use.name, input: renderInput(use.input), output: clip(output, 16_000) }
    }
    default:
      return { type: "tool_call", name: use.name, input: renderInput(use.input), output: clip(output, 16_000) }
  }
}

/** The question an approval item asks for a permission request. */
export const permissionQuestion = (toolName: string, input: unknown, description: string | undefined): string => {
  const command = field(input, "command")
  const path = field(input, "file_path")
  const what = command !== null ? `\`${clip(command, 500)}\`` : path !== null ? path : clip(renderInput(input), 500)
  return `Allow ${toolName}: ${what}?${description ? ` (${clip(description, 300)})` : ""}`
}
