/**
 * Codex's thread items as Skein's turn items. Items Skein records itself (the user's
 * message) or has no place for (web searches, images, review-mode markers) map to
 * nothing.
 */
import type { TurnItemContent } from "@skein/domain"
import { Option, Schema } from "effect"
import { clip, renderInput } from "../agents/AgentCommon.js"
import { KnownItem } from "./CodexProtocol.js"
import type { CollabAgentToolCallItem, PlanUpdated } from "./CodexProtocol.js"

const decodeItem = Schema.decodeUnknownOption(KnownItem)
/**
 * The item types KnownItem decodes. An item of any other type (the user's message,
 * which every turn has) maps to nothing without a decode: one that fails builds its
 * whole parse error first.
 */
const knownTypes: ReadonlySet<unknown> = new Set(KnownItem.members.flatMap((member) => member.fields.type.literals))
const typeOf = (raw: unknown): unknown =>
  typeof raw === "object" && raw !== null ? (raw as { readonly type?: unknown }).type : undefined

const OUTPUT_CAP = 16_000

/** Whether a Codex item, not yet decoded, can map to a turn item at all (by its type). */
export const mayBeTurnItem = (raw: unknown): boolean => knownTypes.has(typeOf(raw))

/** Codex's states of an agent it runs: ended well, ended otherwise, or still going. */
const childStatus = (status: string | undefined): "running" | "completed" | "failed" =>
  status === "completed"
    ? "completed"
    : status === "errored" || status === "shutdown" || status === "notFound" || status === "interrupted"
      ? "failed"
      : "running"

/**
 * A call of Codex's multi-agent tools as `child_agent` items, one per agent it names,
 * keyed by the agent's own thread (each report updates that node in place). A spawn
 * that completes says the agent started, not that it finished: its state does.
 * `prompts` keeps each agent's task from its spawn for the reports that do not repeat it.
 */
export const childAgentsOf = (
  item: CollabAgentToolCallItem,
  prompts: Map<string, string>
): ReadonlyArray<TurnItemContent> =>
  item.receiverThreadIds.map((threadId) => {
    if (item.prompt !== undefined && item.prompt !== null) prompts.set(threadId, clip(item.prompt, 200))
    const state = item.agentsStates?.[threadId]
    const status = childStatus(state?.status)
    return {
      type: "child_agent",
      childRef: threadId,
      description: prompts.get(threadId) ?? "a Codex agent",
      status,
      nativeThreadRef: threadId,
      result: status === "running" ? null : clip(state?.message ?? state?.status ?? "", OUTPUT_CAP)
    }
  })

export const turnItemsOf = (raw: unknown, prompts: Map<string, string> = new Map()): ReadonlyArray<TurnItemContent> => {
  if (!mayBeTurnItem(raw)) return []
  const decoded = decodeItem(raw)
  if (Option.isNone(decoded)) return []
  const item = decoded.value
  switch (item.type) {
    case "agentMessage":
      return item.text.length > 0 ? [{ type: "assistant_message", text: item.text }] : []
    case "reasoning": {
      const text = [...item.summary, ...item.content].join("\n").trim()
      return text.length > 0 ? [{ type: "reasoning", text }] : []
    }
    case "commandExecution":
      return [
        {
          type: "command_execution",
          command: item.command,
          exitCode: item.exitCode === null || item.exitCode === undefined ? null : Math.trunc(item.exitCode),
          output: clip(item.aggregatedOutput ?? (item.status === "declined" ? "(declined)" : ""), OUTPUT_CAP)
        }
      ]
    case "fileChange":
      return item.changes.map((change) => ({
        type: "file_change",
        path: change.path,
        kind: change.kind.type === "update" ? "modify" : change.kind.type,
        summary: clip(item.status === "completed" ? change.diff : `(${item.status}) ${change.diff}`, 2000)
      }))
    case "mcpToolCall":
      return [
        {
          type: "tool_call",
          name: `${item.server}.${item.tool}`,
          input: renderInput(item.arguments),
          output: item.result !== undefined && item.result !== null ? renderInput(item.result) : null
        }
      ]
    case "collabAgentToolCall":
      return childAgentsOf(item, prompts)
    case "dynamicToolCall":
      return [
        {
          type: "tool_call",
          name: item.tool,
          input: renderInput(item.arguments),
          output: item.contentItems !== undefined && item.contentItems !== null ? renderInput(item.contentItems) : null
        }
      ]
  }
}

export const planItemOf = (plan: typeof PlanUpdated.Type): TurnItemContent => ({
  type: "plan",
  steps: plan.plan.map((step) => ({
    text: step.step,
    status: step.status === "inProgress" ? "in_progress" : step.status
  }))
})
