import { describe, expect, it } from "@effect/vitest"
import type { TurnItemContent } from "@skein/domain"
import { ApprovalId, HandoffSectionKind } from "@skein/domain"
import * as fc from "fast-check"
import {
  assembleHandoff,
  buildHandoffPayload,
  collectHandoffMaterial,
  estimateTokens,
  makeScrubber
} from "../../src/context/index.js"
import type { ThreadState } from "../../src/store/ThreadState.js"
import { putRun } from "../../src/store/Projection.js"
import { addCheckpoint, addRun, newState } from "./builder.js"

const sectionLines = (built: ReturnType<typeof buildHandoffPayload>, kind: string): ReadonlyArray<string> =>
  built.payload.sections.find((s) => s.kind === kind)?.lines ?? []

const smallThread = (): ThreadState => {
  const s = newState()
  addRun(s, {
    provider: "alpha",
    message: "Build a CSV parser. It must never drop quoted newlines.",
    items: [
      { type: "assistant_message", text: "Starting.\nDecision: use a state machine" },
      { type: "plan", steps: [{ text: "old plan step", status: "pending" }] },
      { type: "command_execution", command: "npm test", exitCode: 1, output: "FAIL parser\n1 failing" },
      { type: "file_change", path: "src/parser.ts", kind: "add", summary: "first version" }
    ]
  })
  const two = addRun(s, {
    provider: "beta",
    message: "Fix it; don't touch the lexer.",
    items: [
      { type: "command_execution", command: "npm test", exitCode: 0, output: "all passed" },
      { type: "command_execution", command: "npm run lint", exitCode: 2, output: "lint: 3 problems" },
      { type: "file_change", path: "src/parser.ts", kind: "modify", summary: "handles quoted newlines" },
      {
        type: "plan",
        steps: [
          { text: "lexer", status: "completed" },
          { text: "parser", status: "in_progress" }
        ]
      },
      { type: "approval_request", approvalId: ApprovalId.make("apr_1"), question: "May I push?", status: "open" },
      { type: "approval_request", approvalId: ApprovalId.make("apr_2"), question: "May I delete?", status: "decline" },
      { type: "tool_call", name: "spawn_subagent", input: "review the parser", output: "two nits" },
      { type: "tool_call", name: "read_file", input: "src/x.ts", output: "PROTOCOL NOISE" },
      { type: "error", message: "rate limited", code: "429" }
    ]
  })
  addCheckpoint(s, two, ["src/parser.ts"])
  addRun(s, {
    provider: "beta",
    message: "again",
    status: "failed",
    failure: { reason: "provider_error", message: "boom" }
  })
  addRun(s, { provider: "beta", message: "ROLLED BACK WORK", status: "rolled_back" })
  return s
}

describe("buildHandoffPayload: sections", () => {
  it("builds every section from the app thread, most important first", () => {
    const built = buildHandoffPayload(smallThread(), { fromOrdinal: 1, toOrdinal: 4, strategy: "full_thread_summary" })
    const kinds = built.payload.sections.map((s) => s.kind)
    expect(kinds).toEqual(HandoffSectionKind.literals)
    expect(sectionLines(built, "goals")[0]).toMatch(/^Overall goal \(run 1\): Build a CSV parser/)
    expect(sectionLines(built, "constraints")).toEqual([
      "It must never drop quoted newlines. (run 1)",
      "don't touch the lexer. (run 2)"
    ])
    expect(sectionLines(built, "open_questions")).toEqual(["Run 2: May I push? (awaiting answer)"])
    expect(sectionLines(built, "known_failures").join("\n")).toMatch(/429: rate limited/)
    expect(sectionLines(built, "known_failures").join("\n")).toMatch(/Run 3 failed \(provider_error: boom\)/)
    expect(sectionLines(built, "known_failures").join("\n")).toMatch(
      /`npm run lint` failed with exit 2 in run 2: lint: 3 problems/
    )
    // npm test failed in run 1 but passed in run 2: superseded, not a known failure.
    expect(sectionLines(built, "known_failures").join("\n")).not.toMatch(/npm test/)
    expect(sectionLines(built, "plan")).toEqual(["As of run 2:", "[x] lexer", "[~] parser"])
    expect(sectionLines(built, "decisions")).toEqual(["use a state machine (run 1)"])
    expect(sectionLines(built, "files_changed")).toEqual(["src/parser.ts (modify, run 2): handles quoted newlines"])
    expect(sectionLines(built, "checkpoint")[0]).toMatch(/^After run 2 \(git tree abcdef012345\)/)
    expect(sectionLines(built, "commands")).toEqual(["`npm test` → exit 0 (run 2)", "`npm run lint` → exit 2 (run 2)"])
    expect(sectionLines(built, "subagent_results")).toEqual(["Run 2: review the parser → two nits"])
    expect(sectionLines(built, "conversation")).toHaveLength(3)
    expect(built.summaryText.startsWith("# Context handoff (full_thread_summary): runs 1-4")).toBe(true)
    expect(built.summaryText).not.toContain("old plan step")
    expect(built.summaryText).not.toContain("PROTOCOL NOISE")
    expect(built.summaryText).not.toContain("ROLLED BACK WORK")
    expect(built.payload.omitted).toEqual([])
    expect(built.tokenEstimate).toBe(estimateTokens(built.summaryText))
    expect(built.budgetTokens).toBe(16_000)
  })

  it("a delta covers only its range, with no overall goal", () => {
    const built = buildHandoffPayload(smallThread(), {
      fromOrdinal: 3,
      toOrdinal: 3,
      strategy: "delta_since_target_last_seen"
    })
    expect(built.summaryText.split("\n")[0]).toBe("# Context handoff (delta_since_target_last_seen): run 3")
    expect(sectionLines(built, "goals")).toEqual(["Run 3: again"])
    expect(built.summaryText).not.toContain("CSV parser")
    expect(built.summaryText).not.toContain("checkpoint")
  })

  it("scrubs every secret, many at once", () => {
    const scrub = makeScrubber(["alpha beta", "gamma\ndelta", "xy"])
    expect(scrub("1 alpha beta 2 gamma 3 delta 4 xy 5")).toBe("1 [redacted] 2 [redacted] 3 [redacted] 4 [redacted] 5")
    expect(scrub("nothing here")).toBe("nothing here")
  })
})

const secretThread = (secret: string, runs: number): ThreadState => {
  const s = newState()
  for (let i = 1; i <= runs; i++) {
    const items: Array<TurnItemContent> = [
      { type: "reasoning", text: secret },
      { type: "reasoning", text: `first line ${secret}x\nsecond ${secret}y` },
      { type: "assistant_message", text: `I thought: ${secret}. Decision: ${secret}` },
      { type: "command_execution", command: `echo ${secret}`, exitCode: 1, output: `out ${secret}` },
      { type: "file_change", path: `src/${secret}.ts`, kind: "add", summary: secret },
      { type: "plan", steps: [{ text: `step ${secret}`, status: "pending" }] },
      { type: "approval_request", approvalId: ApprovalId.make(`apr_${i}`), question: `q ${secret}?`, status: "open" },
      { type: "error", message: `err ${secret}`, code: null }
    ]
    addRun(s, {
      provider: i % 2 === 0 ? "alpha" : "beta",
      message: `do it must ${i} please`,
      items
    })
  }
  return s
}

describe("buildHandoffPayload: hidden reasoning never leaves", () => {
  it("a planted secret never appears at any budget", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9]{4,24}$/).map((s) => `S3CRET-${s}`),
        fc.integer({ min: 0, max: 80_000 }),
        fc.constantFrom("full_thread_summary", "delta_since_target_last_seen") as fc.Arbitrary<
          "full_thread_summary" | "delta_since_target_last_seen"
        >,
        (secret, budgetTokens, strategy) => {
          const state = secretThread(secret, 6)
          const built = buildHandoffPayload(state, {
            fromOrdinal: strategy === "full_thread_summary" ? 1 : 3,
            toOrdinal: 6,
            strategy,
            budgetTokens
          })
          expect(built.summaryText).not.toContain(secret)
          expect(JSON.stringify(built.payload)).not.toContain(secret)
          expect(built.summaryText).toContain("[redacted]")
          expect(built.tokenEstimate).toBeLessThanOrEqual(built.budgetTokens)
        }
      ),
      { numRuns: 60 }
    )
  })
})

const longThread = (runs: number): ThreadState => {
  const s = newState()
  for (let i = 1; i <= runs; i++) {
    const items: Array<TurnItemContent> = [
      { type: "reasoning", text: `private thought number ${i} about the design` },
      {
        type: "assistant_message",
        text: `Done with step ${i}. I changed the code and ran the tests as asked.\nDecision: keep approach ${i}`
      },
      { type: "command_execution", command: `npm test -- part${i % 40}`, exitCode: 0, output: "ok" },
      { type: "file_change", path: `src/module${i % 300}.ts`, kind: "modify", summary: `edit ${i}` }
    ]
    if (i % 100 === 50) items.push({ type: "plan", steps: [{ text: `plan as of ${i}`, status: "in_progress" }] })
    if (i === 990) items.push({ type: "plan", steps: [{ text: "LATEST-PLAN ship the release", status: "pending" }] })
    if (i === 500) {
      items.push({
        type: "approval_request",
        approvalId: ApprovalId.make("apr_open"),
        question: "OPEN-QUESTION may I migrate?",
        status: "open"
      })
    }
    if (i === 995)
      items.push({ type: "command_execution", command: "npm run e2e", exitCode: 1, output: "E2E-FAILURE timeout" })
    addRun(s, {
      provider: i % 3 === 0 ? "beta" : "alpha",
      message:
        i === 1
          ? "OVERALL-GOAL: build and ship the importer. Never break the public API."
          : `Please continue with step ${i} of the importer and keep the tests green throughout.`,
      items,
      ...(i === 700
        ? { status: "failed" as const, failure: { reason: "provider_error" as const, message: "RUN-700-FAILED" } }
        : {})
    })
  }
  return s
}

describe("buildHandoffPayload: budget", () => {
  it("a 1,000-run thread stays within budget and keeps goals, latest plan, open questions and failures", () => {
    const state = longThread(1000)
    for (const budgetTokens of [16_000, 4_000]) {
      const built = buildHandoffPayload(state, {
        fromOrdinal: 1,
        toOrdinal: 1000,
        strategy: "full_thread_summary",
        budgetTokens
      })
      expect(built.tokenEstimate).toBeLessThanOrEqual(budgetTokens)
      expect(built.tokenEstimate).toBeGreaterThan(budgetTokens * 0.9)
      expect(built.summaryText).toContain("OVERALL-GOAL")
      expect(built.summaryText).toContain("Run 1000: Please continue with step 1000")
      expect(built.summaryText).toContain("LATEST-PLAN")
      expect(built.summaryText).not.toContain("plan as of 950")
      expect(built.summaryText).toContain("OPEN-QUESTION")
      expect(built.summaryText).toContain("RUN-700-FAILED")
      expect(built.summaryText).toContain("E2E-FAILURE")
      expect(built.summaryText).not.toContain("private thought")
      const omitted = new Map(built.payload.omitted.map((o) => [o.section, o]))
      expect(omitted.get("conversation")?.lines).toBeGreaterThan(0)
      expect(built.summaryText).toMatch(/Omitted to fit the \d+-token budget: .*conversation line\(s\)/)
      // What is kept of the goals is the overall goal and the most recent.
      expect(sectionLines(built, "goals")[0]).toMatch(/^Overall goal/)
      expect(sectionLines(built, "goals").at(-1)).toMatch(/^Run 1000:/)
      expect(omitted.get("goals")?.lines).toBeGreaterThan(0)
    }
  })

  it("drops the least important sections first and records each omission", () => {
    const state = longThread(200)
    const roomy = buildHandoffPayload(state, {
      fromOrdinal: 1,
      toOrdinal: 200,
      strategy: "full_thread_summary",
      budgetTokens: 64_000
    })
    expect(roomy.payload.omitted).toEqual([])
    const tight = buildHandoffPayload(state, {
      fromOrdinal: 1,
      toOrdinal: 200,
      strategy: "full_thread_summary",
      budgetTokens: 2_000
    })
    expect(tight.tokenEstimate).toBeLessThanOrEqual(2_000)
    const order = HandoffSectionKind.literals
    const omittedKinds = tight.payload.omitted.map((o) => o.section)
    // Every section after the first kept-whole one that lost lines is itself cut.
    const lastOmitted = order.indexOf(omittedKinds.at(-1)!)
    expect(lastOmitted).toBe(order.length - 1)
    const total = (kind: string) => sectionLines(roomy, kind).length
    for (const o of tight.payload.omitted) {
      expect(o.lines).toBeGreaterThan(0)
      expect(o.lines).toBeLessThanOrEqual(total(o.section))
    }
    for (const kind of order) {
      const kept = sectionLines(tight, kind).length
      const dropped = tight.payload.omitted.filter((o) => o.section === kind).reduce((n, o) => n + o.lines, 0)
      expect(kept + dropped).toBe(total(kind))
    }
  })

  it("clamps the budget into 1,024-64,000", () => {
    const state = longThread(50)
    expect(
      buildHandoffPayload(state, { fromOrdinal: 1, toOrdinal: 50, strategy: "full_thread_summary", budgetTokens: 10 })
        .budgetTokens
    ).toBe(1024)
    expect(
      buildHandoffPayload(state, { fromOrdinal: 1, toOrdinal: 50, strategy: "full_thread_summary", budgetTokens: 1e9 })
        .budgetTokens
    ).toBe(64_000)
    const min = buildHandoffPayload(state, {
      fromOrdinal: 1,
      toOrdinal: 50,
      strategy: "full_thread_summary",
      budgetTokens: 10
    })
    expect(min.tokenEstimate).toBeLessThanOrEqual(1024)
    expect(min.summaryText).toContain("OVERALL-GOAL")
  })
})

describe("buildHandoffPayload: runs rolled back after a fork", () => {
  // A fork's range holds the runs the source had when the fork was made (`asOf`), even
  // those the source rolled back since; timestamps have millisecond precision.
  const forkedThread = (rolledBackAt: string) => {
    const s = newState()
    addRun(s, { provider: "alpha", message: "first FIG" })
    const second = addRun(s, { provider: "alpha", message: "second GRAPE", status: "rolled_back" })
    putRun(s, { ...second, rolledBackAt })
    return s
  }
  const text = (s: ThreadState, asOf: string) =>
    assembleHandoff(collectHandoffMaterial(s, { fromOrdinal: 1, toOrdinal: 2, strategy: "fork_delta", asOf }), 4_000)
      .summaryText

  it("keeps a run rolled back in the very millisecond the fork was made, or later", () => {
    expect(text(forkedThread("2026-01-01T00:00:00.005Z"), "2026-01-01T00:00:00.005Z")).toContain("GRAPE")
    expect(text(forkedThread("2026-01-01T00:00:00.009Z"), "2026-01-01T00:00:00.005Z")).toContain("GRAPE")
  })

  it("leaves out a run rolled back before the fork", () => {
    const summary = text(forkedThread("2026-01-01T00:00:00.004Z"), "2026-01-01T00:00:00.005Z")
    expect(summary).toContain("FIG")
    expect(summary).not.toContain("GRAPE")
  })
})
