import { describe, expect, it } from "@effect/vitest"
import { turnItemsOf } from "../src/codex/CodexItems.js"

describe("turnItemsOf (Codex thread items as turn items)", () => {
  it("maps each known item type", () => {
    expect(turnItemsOf({ type: "agentMessage", id: "a", text: "hello" })).toEqual([
      { type: "assistant_message", text: "hello" }
    ])
    expect(turnItemsOf({ type: "reasoning", id: "r", summary: ["thought"], content: [] })).toEqual([
      { type: "reasoning", text: "thought" }
    ])
    expect(turnItemsOf({ type: "commandExecution", id: "c", command: "ls", status: "completed", exitCode: 0 })).toEqual(
      [{ type: "command_execution", command: "ls", exitCode: 0, output: "" }]
    )
    expect(
      turnItemsOf({
        type: "fileChange",
        id: "f",
        status: "completed",
        changes: [{ path: "a.txt", kind: { type: "update" }, diff: "+x" }]
      })
    ).toEqual([{ type: "file_change", path: "a.txt", kind: "modify", summary: "+x" }])
    expect(turnItemsOf({ type: "mcpToolCall", id: "m", server: "s", tool: "t", arguments: { q: 1 } })).toEqual([
      { type: "tool_call", name: "s.t", input: '{"q":1}', output: null }
    ])
    expect(turnItemsOf({ type: "dynamicToolCall", id: "d", tool: "t", arguments: "x" })).toEqual([
      { type: "tool_call", name: "t", input: "x", output: null }
    ])
  })

  it("maps items of other types, and what is not an item, to nothing", () => {
    for (const raw of [
      { type: "userMessage", id: "u", content: [{ type: "text", text: "hi" }] },
      { type: "webSearch", id: "w", query: "q" },
      { type: "toString", id: "x" },
      { id: "no type" },
      null,
      "agentMessage",
      42
    ]) {
      expect(turnItemsOf(raw)).toEqual([])
    }
  })

  it("maps a known type that does not decode to nothing", () => {
    expect(turnItemsOf({ type: "agentMessage", id: "a", text: 7 })).toEqual([])
    expect(turnItemsOf({ type: "fileChange", id: "f", status: "completed", changes: "all" })).toEqual([])
  })

  it("maps Codex's own agents to one child_agent node per agent, running until its state says it ended", () => {
    const prompts = new Map<string, string>()
    const collab = (
      tool: string,
      states: Record<string, { status: string; message?: string | null }>,
      prompt?: string
    ) => ({
      type: "collabAgentToolCall",
      id: `call_${tool}`,
      tool,
      status: "completed",
      senderThreadId: "parent",
      receiverThreadIds: Object.keys(states),
      prompt: prompt ?? null,
      agentsStates: states
    })
    // A spawn that completed started the agent; it has not finished.
    expect(turnItemsOf(collab("spawnAgent", { a1: { status: "pendingInit" } }, "count the limes"), prompts)).toEqual([
      {
        type: "child_agent",
        childRef: "a1",
        description: "count the limes",
        status: "running",
        nativeThreadRef: "a1",
        result: null
      }
    ])
    // A wait names its agents without their task: the spawn's is kept.
    expect(
      turnItemsOf(
        collab("wait", { a1: { status: "completed", message: "12 limes" }, a2: { status: "errored", message: null } }),
        prompts
      )
    ).toEqual([
      {
        type: "child_agent",
        childRef: "a1",
        description: "count the limes",
        status: "completed",
        nativeThreadRef: "a1",
        result: "12 limes"
      },
      {
        type: "child_agent",
        childRef: "a2",
        description: "a Codex agent",
        status: "failed",
        nativeThreadRef: "a2",
        result: "errored"
      }
    ])
  })
})
