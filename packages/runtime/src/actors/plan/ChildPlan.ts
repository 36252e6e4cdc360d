/**
 * A child agent the provider ran natively, seen from the parent's run: its observe-only
 * app thread.
 */
import type { AppThread, Run, ThreadEvent, ThreadId, TurnItem, TurnItemContent } from "@skein/domain"
import { RunEnded, RunStarted, ThreadCreated, TurnItemRecorded, makeId } from "@skein/domain"
import type { ThreadState } from "../../store/ThreadState.js"

/**
 * A child agent the provider ran natively, that has its own native thread and has
 * ended, gets an observe-only app thread (relationship `subagent`): readable, never
 * driven. Its log holds one run mirroring the child: what it was asked, what it
 * answered. Returns the thread's events, and the item now naming that thread.
 */
export const planObservedChild = (
  state: ThreadState,
  run: Run,
  child: TurnItem & { readonly type: "child_agent" },
  now: string
): { readonly threadId: ThreadId; readonly events: ReadonlyArray<ThreadEvent>; readonly item: TurnItem } | null => {
  if (child.nativeThreadRef === null || child.status === "running" || child.childThreadId !== undefined) return null
  const threadId = makeId.thread()
  const thread: AppThread = {
    id: threadId,
    title: child.description.replace(/\s+/g, " ").trim().slice(0, 200),
    workspace: state.thread.workspace,
    lineage: {
      parentThreadId: state.thread.id,
      relationshipToParent: "subagent",
      rootThreadId: state.thread.lineage.rootThreadId,
      observeOnly: true
    },
    createdAt: now,
    updatedAt: now
  }
  const mirrored: Run = {
    id: makeId.run(),
    threadId,
    ordinal: 1,
    provider: run.provider,
    model: run.model,
    message: child.description,
    status: child.status === "completed" ? "completed" : "failed",
    providerThreadId: null,
    contextHandoffId: null,
    contextResolution: null,
    failure:
      child.status === "failed"
        ? { reason: "provider_error", message: child.result ?? "the child agent failed" }
        : null,
    commandId: null,
    createdAt: now,
    startedAt: now,
    completedAt: now
  }
  const at = (seq: number, content: TurnItemContent): TurnItem => ({
    id: makeId.turnItem(),
    threadId,
    runId: mirrored.id,
    seq,
    createdAt: now,
    ...content
  })
  const events: Array<ThreadEvent> = [
    new ThreadCreated({ thread }),
    new RunStarted({ run: { ...mirrored, status: "running", completedAt: null, failure: null } }),
    new TurnItemRecorded({ item: at(0, { type: "user_message", text: child.description }) })
  ]
  if (child.result !== null) {
    events.push(new TurnItemRecorded({ item: at(1, { type: "assistant_message", text: child.result }) }))
  }
  events.push(new RunEnded({ run: mirrored }))
  return { threadId, events, item: { ...child, childThreadId: threadId } }
}
