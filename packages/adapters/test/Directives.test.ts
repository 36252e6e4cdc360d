import { describe, expect, it } from "@effect/vitest"
import { parseDirectives, reasoningText, recalls, stripRecallNoise } from "../src/scripted/Directives.js"

describe("parseDirectives", () => {
  it("finds every directive, in order, with their arguments", () => {
    const message =
      "please [[recall:zebra]] then [[reason:think hard]] [[cmd:npm test:1]] [[write:src/a.ts:x:y\\nz]] " +
      "[[plan:A; B ;]] [[ask:Deploy now?]] [[decide:use sqlite]] [[subagent:beta:look at: tests]] " +
      "[[sleep:250]] [[fail]] [[crash]] [[forget]]"
    expect(parseDirectives(message)).toEqual([
      { _tag: "Recall", word: "zebra" },
      { _tag: "Reason", text: "think hard" },
      { _tag: "Cmd", command: "npm test", exitCode: 1 },
      { _tag: "Write", path: "src/a.ts", content: "x:y\nz" },
      { _tag: "Plan", steps: ["A", "B"] },
      { _tag: "Ask", question: "Deploy now?" },
      { _tag: "Decide", text: "use sqlite" },
      { _tag: "Subagent", provider: "beta", prompt: "look at: tests" },
      { _tag: "Sleep", ms: 250 },
      { _tag: "Fail" },
      { _tag: "Crash" },
      { _tag: "Forget" }
    ])
  })

  it("derives the reasoning text, so the secret is never the user's own words", () => {
    expect(reasoningText("abc")).toBe("secret-cba")
    expect(reasoningText("think hard")).toBe("secret-drah kniht")
  })

  it("keeps the colons of a command and takes the exit code from the last one", () => {
    expect(parseDirectives("[[cmd:echo a:b:-2]]")).toEqual([{ _tag: "Cmd", command: "echo a:b", exitCode: -2 }])
  })

  it("treats unknown and malformed markers as plain text", () => {
    expect(
      parseDirectives(
        "[[nope]] [[sleep:soon]] [[cmd:ls]] [[fail:now]] [[recall:]] [[write:nocontent]] [[plan:;]] [[Fail]]"
      )
    ).toEqual([])
    expect(parseDirectives("no directives here")).toEqual([])
  })
})

describe("recalls", () => {
  it("is a case-sensitive substring test over the context texts", () => {
    expect(recalls("Zebra", ["a zebra went by"])).toBe(false)
    expect(recalls("zebra", ["nothing", "a zebra went by"])).toBe(true)
    expect(recalls("zebra", [])).toBe(false)
  })

  it("does not count recall questions or answers as knowing the word", () => {
    expect(recalls("okapi", ["[[recall:okapi]]", "ok\nrecall:okapi=no"])).toBe(false)
    expect(stripRecallNoise("x [[recall:okapi]] recall:okapi=yes okapi")).not.toMatch(/recall/)
    expect(recalls("okapi", ["[[recall:okapi]] but also okapi itself"])).toBe(true)
  })
})
