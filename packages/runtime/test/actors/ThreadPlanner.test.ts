/**
 * The planner's item recording, as pure functions over a ThreadState: items the
 * provider reports together are numbered after the run's items, and items that come
 * with the end of the turn are recorded in the run's final commit, before RunEnded,
 * and count in its checkpoint; a git checkpoint is recorded pending with the run's end,
 * then ready, or logical with an error item when it was not taken.
 */
import { describe, expect, it } from "@effect/vitest"
import type { TurnItemContent } from "@skein/domain"
import type { Checkpoint } from "@skein/domain"
import { planCheckpointTaken, planFinish, planItems } from "../../src/actors/ThreadPlanner.js"
import { AT, addRun, newState, setItems } from "../context/builder.js"

const write = (path: string): TurnItemContent => ({ type: "file_change", path, kind: "add", summary: "one\ntwo" })

describe("ThreadPlanner items", () => {
  it("numbers items reported together after the run's items so far", () => {
    const state = newState()
    const run = addRun(state, { provider: "alpha", message: "go", status: "running" })
    setItems(state, run.id, [
      { type: "user_message", text: "go" },
      { type: "reasoning", text: "hm" }
    ])
    const events = planItems(state, run.id, [{ type: "reasoning", text: "a" }, write("a.ts")], AT)
    expect(events.map((e) => [e.item.seq, e.item.type, e.item.runId])).toEqual([
      [2, "reasoning", run.id],
      [3, "file_change", run.id]
    ])
    expect(new Set(events.map((e) => e.item.id)).size).toBe(2)
    expect(planItems(state, run.id, [], AT)).toEqual([])
  })

  it("records items that came with the end of the turn first, and counts them in the checkpoint", () => {
    const state = newState()
    const run = addRun(state, { provider: "alpha", message: "go", status: "running" })
    setItems(state, run.id, [{ type: "user_message", text: "go" }, write("early.ts")])
    const events = planFinish(state, {
      runId: run.id,
      outcome: "completed",
      failure: null,
      turnRef: "turn_1",
      items: [write("late.ts"), { type: "assistant_message", text: "done" }],
      now: AT
    })
    const tags = events.map((e) => e._tag)
    expect(tags.slice(0, 2)).toEqual(["TurnItemRecorded", "TurnItemRecorded"])
    expect(tags.indexOf("RunEnded")).toBeGreaterThan(1)
    const items = events.flatMap((e) => (e._tag === "TurnItemRecorded" ? [e.item] : []))
    expect(items.map((i) => [i.seq, i.type])).toEqual([
      [2, "file_change"],
      [3, "assistant_message"]
    ])
    const checkpoint = events.find((e) => e._tag === "CheckpointRecorded")
    expect(checkpoint?._tag === "CheckpointRecorded" && checkpoint.checkpoint.diffSummary.map((d) => d.path)).toEqual([
      "early.ts",
      "late.ts"
    ])
  })

  it("records nothing for a run that already ended, tail items included", () => {
    const state = newState()
    const run = addRun(state, { provider: "alpha", message: "go", status: "completed" })
    expect(
      planFinish(state, {
        runId: run.id,
        outcome: "completed",
        failure: null,
        turnRef: null,
        items: [write("x.ts")],
        now: AT
      })
    ).toEqual([])
  })

  it("records a git repository's checkpoint pending, then ready with its commit, or logical with why when not taken", () => {
    const state = newState()
    const run = addRun(state, { provider: "alpha", message: "go", status: "running" })
    setItems(state, run.id, [{ type: "user_message", text: "go" }, write("a.ts")])
    const finished = planFinish(state, {
      runId: run.id,
      outcome: "completed",
      failure: null,
      turnRef: "turn_1",
      checkpoint: "pending",
      now: AT
    })
    const recorded = finished.find((e) => e._tag === "CheckpointRecorded")
    const pending: Checkpoint | undefined = recorded?._tag === "CheckpointRecorded" ? recorded.checkpoint : undefined
    expect(pending).toMatchObject({ kind: "git", status: "pending", gitRef: null, treeSha: null, diffSummary: [] })

    const diff = [{ path: "a.ts", change: "add" as const, additions: 2, deletions: 0 }]
    const taken = planCheckpointTaken(
      state,
      pending!,
      { _tag: "Taken", gitRef: "refs/skein/t/1", commit: "c1", tree: "t1", diff },
      AT
    )
    expect(taken.map((e) => e._tag)).toEqual(["CheckpointRecorded"])
    expect(taken[0]!._tag === "CheckpointRecorded" && taken[0]!.checkpoint).toEqual({
      ...pending,
      gitRef: "refs/skein/t/1",
      commitSha: "c1",
      treeSha: "t1",
      diffSummary: diff,
      status: "ready"
    })

    const failed = planCheckpointTaken(state, pending!, { _tag: "Failed", detail: "git is gone" }, AT)
    expect(failed.map((e) => e._tag)).toEqual(["TurnItemRecorded", "CheckpointRecorded"])
    expect(failed[0]!._tag === "TurnItemRecorded" && failed[0]!.item).toMatchObject({
      runId: run.id,
      seq: 2,
      type: "error",
      code: "checkpoint_failed",
      message: "no git checkpoint: git is gone"
    })
    expect(failed[1]!._tag === "CheckpointRecorded" && failed[1]!.checkpoint).toMatchObject({
      id: pending!.id,
      kind: "logical",
      gitRef: null,
      status: "ready",
      diffSummary: [{ path: "a.ts" }]
    })
    // Only a pending checkpoint settles, once.
    expect(
      planCheckpointTaken(state, { ...pending!, status: "ready" }, { _tag: "Failed", detail: "late" }, AT)
    ).toEqual([])
  })
})
