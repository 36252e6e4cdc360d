/**
 * The Orchestrator's thread commands: `thread.create` (a thread with its workspace
 * confined to the configured roots), `thread.get` (with the runs queued after its runs),
 * and a thread's events, read or followed.
 */
import type { AppThread, SkeinError, StoredEvent, ThreadId, ThreadViewOptions } from "@skein/domain"
import { makeId, ThreadCreated, ThreadId as ThreadIdSchema, ThreadNotFound } from "@skein/domain"
import { Effect, Option, Schema, Stream } from "effect"
import type { OrchestratorShape } from "./Orchestrator.js"
import type { RuntimeOptions } from "./RuntimeConfig.js"
import type { EventStoreShape } from "./store/EventStore.js"
import { payloadHash, replay } from "./store/Receipts.js"
import { queuedRunOf } from "./store/RunQueue.js"
import { resolveWorkspace } from "./Workspace.js"

const CreateReceipt = Schema.Struct({ threadId: ThreadIdSchema })

export const makeThreadCommands = (store: EventStoreShape, config: RuntimeOptions) => {
  /** `thread.get`, with the runs queued on the thread after its runs. */
  const threadView = (threadId: ThreadId, options?: ThreadViewOptions) =>
    store.threadView(threadId, options).pipe(
      Effect.flatMap(
        Option.match({ onNone: () => Effect.fail(new ThreadNotFound({ threadId })), onSome: Effect.succeed })
      ),
      Effect.flatMap((view) =>
        Effect.map(store.queue.of(threadId), (queued) => {
          if (queued.length === 0) return view
          const runCount = view.page?.runCount ?? view.runs.reduce((n, run) => Math.max(n, run.ordinal), 0)
          return { ...view, queued: queued.map((entry) => queuedRunOf(entry, runCount)) }
        })
      )
    )

  const createThread: OrchestratorShape["createThread"] = Effect.fnUntraced(function* (input) {
    const hash = payloadHash({ title: input.title ?? null, workspace: input.workspace ?? null })
    const replayed = yield* replay(store.receipt, input.commandId, "thread.create", hash, CreateReceipt)
    if (Option.isSome(replayed)) {
      const created = replayed.value.threadId
      const thread = yield* store.lookup.thread(created)
      if (Option.isNone(thread)) return yield* new ThreadNotFound({ threadId: created })
      return thread.value
    }
    const workspace =
      input.workspace === undefined ? null : yield* resolveWorkspace(input.workspace, config.workspaceRoots)
    const id = makeId.thread()
    const now = new Date().toISOString()
    const thread: AppThread = {
      id,
      title: input.title ?? "",
      workspace,
      lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: id },
      createdAt: now,
      updatedAt: now
    }
    yield* store.append({
      threadId: id,
      expectedSequence: 0,
      events: [new ThreadCreated({ thread })],
      commandId: input.commandId,
      receipt: input.commandId
        ? { commandId: input.commandId, method: "thread.create", payloadHash: hash, result: { threadId: id } }
        : undefined
    })
    return thread
  })

  /** A thread exists once its first event (ThreadCreated) is in the log. */
  const ensureThread = (threadId: ThreadId) =>
    store
      .readEvents(threadId, 0, 1)
      .pipe(
        Effect.flatMap((first) => (first.length === 0 ? Effect.fail(new ThreadNotFound({ threadId })) : Effect.void))
      )

  const events: OrchestratorShape["events"] = (threadId, fromSequence) =>
    Stream.unwrap(
      ensureThread(threadId).pipe(
        Effect.as(store.events(threadId, fromSequence ?? 0) as Stream.Stream<StoredEvent, SkeinError>)
      )
    )

  const follow: OrchestratorShape["follow"] = (threadId, fromSequence, onEvents) =>
    Effect.zipRight(ensureThread(threadId), store.follow(threadId, fromSequence, onEvents))

  return { createThread, events, follow, threadView }
}
