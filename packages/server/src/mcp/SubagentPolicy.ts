/**
 * What an agent may do with subagents through Skein's tools, as pure functions over
 * plain data: how deep a chain of subagents may go, how many of a thread's children may
 * run at once, and which threads count as a thread's own children. The tools read the
 * facts (a thread's ancestors, its children's first runs) and ask these.
 *
 * A child never acts more freely than the agent that starts it (domain `autonomyRefusal`):
 * its instance's approvals and sandbox may not exceed those of the parent run's instance.
 *
 * Interrupting a parent's run leaves its children running: a child is stopped only by
 * `cancel_subagent` (or `run.interrupt` on the child's thread).
 */
import type { AppThread, RunStatus } from "@skein/domain"
import { isTerminalRunStatus } from "@skein/domain"
import { Schema } from "effect"

export interface SubagentLimits {
  /** Subagents below a thread that no subagent made count 1; a child deeper than this is refused (default 3). */
  readonly maxDepth: number
  /** A thread's subagents whose first run has not ended; one more is refused (default 8). */
  readonly maxLiveChildren: number
}

export const defaultSubagentLimits: SubagentLimits = { maxDepth: 3, maxLiveChildren: 8 }

/** A spawn the limits refuse; the agent reads `message`. */
export class SubagentLimitReached extends Schema.TaggedError<SubagentLimitReached>()("SubagentLimitReached", {
  limit: Schema.Literal("depth", "liveChildren"),
  max: Schema.Number,
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

/** A thread named as a child that is not a subagent of the calling thread. */
export class NotASubagent extends Schema.TaggedError<NotASubagent>()("NotASubagent", {
  threadId: Schema.String,
  parentThreadId: Schema.String
}) {
  override get message() {
    return `thread ${this.threadId} is not a subagent of thread ${this.parentThreadId}; these tools reach only the calling thread's own subagents`
  }
}

/** Whether `thread` is a subagent child of `parentId` (an observe-only mirror of a provider's own child is not). */
export const isSubagentOf = (thread: AppThread, parentId: string): boolean =>
  thread.lineage.parentThreadId === parentId &&
  thread.lineage.relationshipToParent === "subagent" &&
  thread.lineage.observeOnly !== true

/**
 * How deep a child of a thread would be, from the thread and its ancestors (nearest
 * first): 1 plus the number of subagent links above it, counting from the thread.
 */
export const childDepth = (chain: ReadonlyArray<AppThread>): number => {
  let depth = 1
  for (const thread of chain) {
    if (thread.lineage.relationshipToParent !== "subagent") break
    depth++
  }
  return depth
}

/** Why a new child is refused, or undefined when it may start. */
export const spawnRefusal = (
  facts: {
    readonly depth: number
    /** The first-run statuses of the thread's subagents (null: no run yet). */
    readonly children: ReadonlyArray<RunStatus | null>
  },
  limits: SubagentLimits
): SubagentLimitReached | undefined => {
  if (facts.depth > limits.maxDepth) {
    return new SubagentLimitReached({
      limit: "depth",
      max: limits.maxDepth,
      detail: `a subagent here would be ${facts.depth} levels deep; subagents may nest ${limits.maxDepth} deep. Do the work in this thread instead`
    })
  }
  const live = facts.children.filter((status) => status === null || !isTerminalRunStatus(status)).length
  if (live >= limits.maxLiveChildren) {
    return new SubagentLimitReached({
      limit: "liveChildren",
      max: limits.maxLiveChildren,
      detail: `this thread already has ${live} subagents running (at most ${limits.maxLiveChildren}); await or cancel one first`
    })
  }
  return undefined
}
