/**
 * A run's turn items as the planner records them: numbered in order, a child agent
 * updated in place, a handoff's block, and the diff a run's file changes add up to.
 */
import type { ContextHandoff, DiffEntry, HandoffDelivery, RunId, TurnItem, TurnItemContent } from "@skein/domain"
import { TurnItemRecorded, makeId } from "@skein/domain"
import type { ThreadState } from "../../store/ThreadState.js"
import { itemsOf } from "../../store/ThreadState.js"

/** A turn item of run `runId` at `seq`. */
export const item = (
  state: ThreadState,
  runId: RunId,
  seq: number,
  content: TurnItemContent,
  now: string
): TurnItem => ({
  id: makeId.turnItem(),
  threadId: state.thread.id,
  runId,
  seq,
  createdAt: now,
  ...content
})

/** The item that records a handoff's block on a run, as its provider receives it. */
export const handoffItem = (
  state: ThreadState,
  runId: RunId,
  seq: number,
  handoff: ContextHandoff,
  delivery: HandoffDelivery,
  now: string
): TurnItemRecorded =>
  new TurnItemRecorded({
    item: item(
      state,
      runId,
      seq,
      { type: "handoff_context", handoffId: handoff.id, delivery, text: handoff.summaryText },
      now
    )
  })

/** Turn items the provider reported together, numbered after the run's items so far. */
export const planItems = (
  state: ThreadState,
  runId: RunId,
  contents: ReadonlyArray<TurnItemContent>,
  now: string
): Array<TurnItemRecorded> => {
  const existing = itemsOf(state, runId)
  let next = existing.length
  const children = new Map<string, TurnItem>()
  for (const it of existing) if (it.type === "child_agent") children.set(it.childRef, it)
  const out: Array<TurnItemRecorded> = []
  for (const content of contents) {
    // A child agent is one node of the run, updated in place as it reports.
    const earlier = content.type === "child_agent" ? children.get(content.childRef) : undefined
    const recorded: TurnItem =
      earlier !== undefined && content.type === "child_agent"
        ? {
            ...earlier,
            ...content,
            ...(earlier.type === "child_agent" && earlier.childThreadId !== undefined
              ? { childThreadId: earlier.childThreadId }
              : {})
          }
        : item(state, runId, next++, content, now)
    if (recorded.type === "child_agent") children.set(recorded.childRef, recorded)
    out.push(new TurnItemRecorded({ item: recorded }))
  }
  return out
}

/** What a run's reported file changes add up to: one entry per path, as it was last changed. */
export const diffOf = (items: ReadonlyArray<TurnItem>): Array<DiffEntry> => {
  const byPath = new Map<string, DiffEntry>()
  for (const it of items) {
    if (it.type === "file_change") {
      const lines = it.summary === "" ? 0 : it.summary.split("\n").length
      byPath.set(it.path, {
        path: it.path,
        change: it.kind,
        additions: it.kind === "delete" ? 0 : lines,
        deletions: it.kind === "delete" ? lines : 0
      })
    }
  }
  return [...byPath.values()]
}
