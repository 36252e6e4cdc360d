import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import type { TurnItemContent } from "@skein/domain"
import { optionFor } from "../src/acp/AcpEvents.js"
import { makeTurnAssembler } from "../src/acp/AcpItems.js"
import type { SessionUpdate } from "../src/acp/AcpProtocol.js"

const run = (updates: ReadonlyArray<SessionUpdate>): Array<TurnItemContent> => {
  const assembler = makeTurnAssembler()
  return [...updates.flatMap((u) => assembler.update(u)), ...assembler.finish()]
}

const chunk = (text: string, messageId?: string, thought = false): SessionUpdate => ({
  sessionUpdate: thought ? "agent_thought_chunk" : "agent_message_chunk",
  content: { type: "text", text },
  ...(messageId === undefined ? {} : { messageId })
})

describe("makeTurnAssembler (ACP session updates as turn items)", () => {
  it("joins a message's chunks; a new message id, a thought or a tool call starts the next item", () => {
    expect(
      run([
        chunk("Warning.\n"),
        chunk("ok", "m1"),
        chunk(": hi", "m1"),
        chunk("hmm", undefined, true),
        chunk("next", "m2"),
        { sessionUpdate: "tool_call", toolCallId: "t", title: "ls", status: "in_progress" },
        chunk("after", "m2")
      ])
    ).toEqual([
      { type: "assistant_message", text: "Warning.\n" },
      { type: "assistant_message", text: "ok: hi" },
      { type: "reasoning", text: "hmm" },
      { type: "assistant_message", text: "next" },
      { type: "assistant_message", text: "after" },
      { type: "tool_call", name: "ls", input: "", output: null }
    ])
  })

  it("reports a tool call once, when it ends, with what its updates told; a diff is also a file change", () => {
    expect(
      run([
        { sessionUpdate: "tool_call", toolCallId: "t", title: "Write a.txt", kind: "edit", rawInput: { p: 1 } },
        { sessionUpdate: "tool_call_update", toolCallId: "t", status: "in_progress" },
        {
          sessionUpdate: "tool_call_update",
          toolCallId: "t",
          status: "completed",
          content: [
            { type: "diff", path: "/w/a.txt", oldText: "x", newText: "y" },
            { type: "content", content: { type: "text", text: "wrote" } }
          ]
        },
        { sessionUpdate: "tool_call_update", toolCallId: "t", status: "completed" },
        { sessionUpdate: "tool_call_update", toolCallId: "u", status: "failed", title: "rm" }
      ])
    ).toEqual([
      { type: "tool_call", name: "Write a.txt", input: '{"p":1}', output: "wrote" },
      { type: "file_change", path: "/w/a.txt", kind: "modify", summary: "Write a.txt" },
      { type: "tool_call", name: "rm (failed)", input: "", output: "failed" }
    ])
  })

  it("a plan is a plan item", () => {
    expect(run([{ sessionUpdate: "plan", entries: [{ content: "a", status: "pending" }] }])).toEqual([
      { type: "plan", steps: [{ text: "a", status: "pending" }] }
    ])
  })

  it("property: the text of the items is the text of the chunks, in order, none lost or repeated", () => {
    const chunks = fc.array(
      fc.record({
        text: fc.string({ maxLength: 8 }),
        messageId: fc.option(fc.constantFrom("m1", "m2", "m3"), { nil: undefined }),
        thought: fc.boolean()
      }),
      { maxLength: 40 }
    )
    fc.assert(
      fc.property(chunks, (list) => {
        const items = run(list.map((c) => chunk(c.text, c.messageId, c.thought)))
        const said = (thought: boolean) =>
          list
            .filter((c) => c.thought === thought)
            .map((c) => c.text)
            .join("")
        const told = (type: string) =>
          items
            .filter((i) => i.type === type)
            .map((i) => ("text" in i ? i.text : ""))
            .join("")
        expect(told("assistant_message")).toBe(said(false))
        expect(told("reasoning")).toBe(said(true))
        expect(items.every((i) => "text" in i && i.text.length > 0)).toBe(true)
      })
    )
  })
})

describe("optionFor (an approval decision as the agent's permission option)", () => {
  const options = [
    { optionId: "always", kind: "allow_always" },
    { optionId: "once", kind: "allow_once" },
    { optionId: "no", kind: "reject_once" }
  ] as const
  it("prefers a one-time option; cancel, or a decision with no option, cancels", () => {
    expect(optionFor(options, "accept")).toBe("once")
    expect(optionFor(options, "decline")).toBe("no")
    expect(optionFor(options, "cancel")).toBeNull()
    expect(optionFor([{ optionId: "always", kind: "allow_always" }], "accept")).toBe("always")
    expect(optionFor([{ optionId: "always", kind: "allow_always" }], "decline")).toBeNull()
  })
})
