/** RunEnd: what a run's one FinishRun says, from how its turn ended, a stop, and what the turn reported. */
import type { ProviderEvent, RunFailure, RunId, TurnItemContent, TurnUsage } from "@skein/domain"
import { ProviderFailure, RunAlreadyActive } from "@skein/domain"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Exit, FiberId, Option } from "effect"
import type { EndFacts } from "../../src/actors/run/RunEnd.js"
import { emptyReport, failureOf, finishOf } from "../../src/actors/run/RunEnd.js"
import { reportAfter } from "../../src/actors/run/TurnSink.js"

const runId = "run_1" as RunId
const item: TurnItemContent = { type: "assistant_message", text: "done" }
const note: TurnItemContent = { type: "error", message: "no git checkpoint: git died", code: "checkpoint_failed" }
const interrupt: RunFailure = { reason: "user_interrupt", message: "The user interrupted the run" }
const approvalRefused: RunFailure = { reason: "provider_error", message: "the provider refused the approval" }

const facts = (overrides: Partial<EndFacts>): EndFacts => ({
  runId,
  exit: Exit.succeed("completed"),
  stopped: null,
  report: { ...emptyReport, turnRef: "turn-1" },
  held: [item],
  checkpointNote: null,
  checkpoint: null,
  ...overrides
})

const crash = new ProviderFailure({ provider: "alpha", kind: "crash", detail: "runTurn: the process exited" })

describe("finishOf", () => {
  it("a completed turn ends completed with its turn ref, usage, held items and pending checkpoint", () => {
    const usage = { inputTokens: 10, outputTokens: 4 } as TurnUsage
    const end = finishOf(
      facts({ report: { ...emptyReport, turnRef: "turn-1", usage }, checkpoint: "pending", checkpointNote: note })
    )
    expect(end).toEqual(
      Option.some({
        runId,
        outcome: "completed",
        failure: null,
        turnRef: "turn-1",
        usage,
        items: [item, note],
        checkpoint: "pending"
      })
    )
  })

  it("a completed turn stays completed when a stop came after it ended, and leaves usage out when unknown", () => {
    const end = finishOf(facts({ stopped: interrupt }))
    expect(end).toEqual(
      Option.some({ runId, outcome: "completed", failure: null, turnRef: "turn-1", items: [item], checkpoint: null })
    )
    expect(Option.getOrThrow(end)).not.toHaveProperty("usage")
  })

  it("an interrupted turn ends as the stop says: interrupted for the user, failed for a fault, no checkpoint", () => {
    const interrupted = Exit.succeed("interrupted" as const)
    expect(
      Option.getOrThrow(finishOf(facts({ exit: interrupted, stopped: interrupt, checkpoint: "pending" })))
    ).toEqual({
      runId,
      outcome: "interrupted",
      failure: interrupt,
      turnRef: "turn-1",
      items: [item],
      checkpoint: null
    })
    expect(Option.getOrThrow(finishOf(facts({ exit: interrupted, stopped: approvalRefused }))).outcome).toBe("failed")
    // Interrupted by the provider with no stop asked for: the user's interrupt.
    expect(Option.getOrThrow(finishOf(facts({ exit: interrupted }))).failure).toEqual({
      reason: "user_interrupt",
      message: "The run was interrupted"
    })
  })

  it("a failed call after a stop ends as the stop says, with how the provider took the interrupt", () => {
    const report = { ...emptyReport, turnRef: "turn-1", stopNote: "the provider did not take the interrupt (late)" }
    const end = Option.getOrThrow(finishOf(facts({ exit: Exit.fail(crash), stopped: interrupt, report })))
    expect([end.outcome, end.failure]).toEqual([
      "interrupted",
      {
        reason: "user_interrupt",
        message: "The user interrupted the run; the provider did not take the interrupt (late)"
      }
    ])
  })

  it("a failed call ends failed with the reason its failure names", () => {
    const end = Option.getOrThrow(finishOf(facts({ exit: Exit.fail(crash), checkpoint: "pending" })))
    expect([end.outcome, end.failure, end.checkpoint]).toEqual([
      "failed",
      { reason: "provider_crash", message: crash.message },
      null
    ])
    const refused = new RunAlreadyActive({ threadId: "thr_1" as never, runId: "run_0" })
    expect(Option.getOrThrow(finishOf(facts({ exit: Exit.fail(refused) }))).failure).toEqual({
      reason: "runtime_error",
      message: refused.message
    })
  })

  it("a defect ends failed as runtime_error; an interruption from outside records nothing", () => {
    const died = Option.getOrThrow(finishOf(facts({ exit: Exit.die(new Error("boom")) })))
    expect(died.failure).toEqual({ reason: "runtime_error", message: "the run's driver died: Error: boom" })
    expect(finishOf(facts({ exit: Exit.failCause(Cause.interrupt(FiberId.none)) }))).toEqual(Option.none())
  })
})

describe("failureOf", () => {
  it("names each kind of provider failure as the run's reason", () => {
    const kinds = ["crash", "timeout", "defect", "resume_failed", "error", "unsupported"] as const
    expect(
      kinds.map((kind) => failureOf(new ProviderFailure({ provider: "alpha", kind, detail: "x" })).reason)
    ).toEqual([
      "provider_crash",
      "provider_timeout",
      "provider_defect",
      "resume_failed",
      "provider_error",
      "provider_error"
    ])
  })
})

describe("reportAfter", () => {
  it("keeps the turn's ref, outcome and a usage it can store, and says which events end the turn", () => {
    const started = reportAfter({ _tag: "TurnStarted", turnRef: "t1" } as ProviderEvent, emptyReport)
    expect(started).toEqual([false, { ...emptyReport, turnRef: "t1" }])
    const usage = { inputTokens: 3, outputTokens: 2 } as TurnUsage
    expect(reportAfter({ _tag: "TurnCompleted", turnRef: "t1", usage } as ProviderEvent, started[1])).toEqual([
      true,
      { ...emptyReport, turnRef: "t1", usage }
    ])
    // A count the run could not store is left out; a turn ref that is not a string is null.
    expect(
      reportAfter(
        { _tag: "TurnCompleted", turnRef: 7, usage: { inputTokens: 1.5, outputTokens: 2 } } as never,
        started[1]
      )
    ).toEqual([true, { ...emptyReport, turnRef: null, usage: undefined }])
    expect(reportAfter({ _tag: "TurnInterrupted", turnRef: "t1" } as ProviderEvent, started[1])).toEqual([
      true,
      { ...emptyReport, turnRef: "t1", outcome: "interrupted" }
    ])
  })
})
