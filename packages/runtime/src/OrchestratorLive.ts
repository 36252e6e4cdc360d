/**
 * The local runtime: the Orchestrator over thread actors, provider sessions and the
 * SQLite event store. `makeRuntimeLayer` is what a host (or the daemon) provides.
 */
import type { AppThread, ProviderInstanceInfo, Run, SkeinError, StoredEvent, ThreadId } from "@skein/domain"
import {
  CommandConflict,
  HandoffNotFound,
  NotSupportedYet,
  ProviderRegistry,
  ThreadCreated,
  ThreadNotFound,
  isTerminalRunStatus,
  makeId
} from "@skein/domain"
import type { StorageError } from "@skein/domain"
import { Deferred, Duration, Effect, Exit, Layer, Option, Stream } from "effect"
import { ProviderSessions } from "./actors/ProviderSessions.js"
import { payloadHash } from "./actors/Receipts.js"
import { ThreadActors } from "./actors/ThreadActors.js"
import { Orchestrator } from "./Orchestrator.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import { recoverInterruptedRuns } from "./Recovery.js"
import { RuntimeConfig } from "./RuntimeConfig.js"
import type { RuntimeOverrides } from "./RuntimeConfig.js"
import { Database } from "./store/Database.js"
import { EventStore } from "./store/EventStore.js"
import { resolveWorkspace } from "./Workspace.js"

const notSupported = (method: string) => Effect.fail(new NotSupportedYet({ method }))

export const makeOrchestrator = Effect.gen(function* () {
  const store = yield* EventStore
  const actors = yield* ThreadActors
  const sessions = yield* ProviderSessions
  const config = yield* RuntimeConfig

  const threadView = (threadId: ThreadId) =>
    store
      .threadView(threadId)
      .pipe(
        Effect.flatMap(
          Option.match({ onNone: () => Effect.fail(new ThreadNotFound({ threadId })), onSome: Effect.succeed })
        )
      )

  const createThread: OrchestratorShape["createThread"] = (input) =>
    Effect.gen(function* () {
      const hash = payloadHash({ title: input.title ?? null, workspace: input.workspace ?? null })
      if (input.commandId) {
        const receipt = yield* store.receipt(input.commandId)
        if (Option.isSome(receipt)) {
          if (receipt.value.method !== "thread.create" || receipt.value.payloadHash !== hash) {
            return yield* new CommandConflict({ commandId: input.commandId, method: "thread.create" })
          }
          const view = yield* threadView((receipt.value.result as { threadId: ThreadId }).threadId)
          return view.thread
        }
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

  /**
   * The run once it is terminal: its RunEnded, watched live from the store (a cluster
   * could wait the same way, from any node). The thread is asked after subscribing, so
   * an end that came before the subscription is not missed.
   */
  const awaitEnd = (threadId: ThreadId, runId: Run["id"]): Effect.Effect<Run, SkeinError> =>
    Effect.scoped(
      Effect.gen(function* () {
        const ended = yield* Deferred.make<Run>()
        yield* store.watch(threadId, (events) => {
          for (const { event } of events) {
            if (event._tag === "RunEnded" && event.run.id === runId) Deferred.unsafeDone(ended, Exit.succeed(event.run))
          }
        })
        const now = yield* actors.use(threadId, (actor) => actor.ask("GetRun", { runId }))
        if (isTerminalRunStatus(now.status)) return now
        return yield* Deferred.await(ended)
      })
    )

  const startRun: OrchestratorShape["startRun"] = (input) =>
    Effect.gen(function* () {
      const accepted = yield* actors.use(input.threadId, (actor) => actor.ask("StartRun", input))
      if (input.wait && !isTerminalRunStatus(accepted.run.status)) yield* awaitEnd(input.threadId, accepted.run.id)
      return yield* actors.use(input.threadId, (actor) => actor.ask("GetRun", { runId: accepted.run.id }))
    })

  const interruptRun: OrchestratorShape["interruptRun"] = (input) =>
    Effect.gen(function* () {
      const accepted = yield* actors.use(input.threadId, (actor) => actor.ask("InterruptRun", input))
      return isTerminalRunStatus(accepted.run.status) ? accepted.run : yield* awaitEnd(input.threadId, accepted.run.id)
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

  const listProviders: OrchestratorShape["listProviders"] = Effect.gen(function* () {
    const live = yield* sessions.list
    return yield* Effect.forEach(
      sessions.adapters,
      (a) =>
        Effect.map(a.probe ?? Effect.succeed(undefined), (binary): ProviderInstanceInfo => ({
          name: a.name,
          driver: a.driver,
          model: a.model,
          capabilities: a.capabilities,
          sessions: live.filter((s) => s.provider === a.name),
          ...(binary === undefined ? {} : { binary })
        })),
      { concurrency: "unbounded" }
    )
  })

  /**
   * Every active run is stopped (reason `shutdown`) and awaited, all at once, for at
   * most 4 s in all: whatever is left then is cut short when the actors' scopes close,
   * and ends `interrupted` at the next start (crash recovery).
   */
  const shutdown: OrchestratorShape["shutdown"] = Effect.gen(function* () {
    const threads = yield* actors.activeThreads
    yield* Effect.forEach(
      threads,
      (threadId) =>
        actors.use(threadId, (actor) =>
          Effect.gen(function* () {
            const status = yield* actor.ask("Status", undefined)
            if (status.activeRunId === null) return
            const accepted = yield* actor.ask("StopRun", {
              failure: { reason: "shutdown", message: "Skein is shutting down" }
            })
            yield* awaitEnd(threadId, accepted.run.id)
          })
        ),
      { concurrency: "unbounded", discard: true }
    ).pipe(Effect.timeout(Duration.seconds(4)), Effect.ignore)
  })

  return {
    createThread,
    getThread: threadView,
    listThreads: (filter) => store.listThreads(filter),
    events,
    follow,
    startRun,
    interruptRun,
    forkThread: () => notSupported("thread.fork"),
    mergeBack: () => notSupported("thread.mergeBack"),
    rollback: () => notSupported("thread.rollback"),
    spawnSubagent: () => notSupported("subagent.spawn"),
    getHandoff: (handoffId) =>
      store
        .getHandoff(handoffId)
        .pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.fail(new HandoffNotFound({ handoffId })), onSome: Effect.succeed })
          )
        ),
    respondApproval: (input) => actors.use(input.threadId, (actor) => actor.respondApproval(input)),
    listProviders,
    shutdown
  } satisfies OrchestratorShape
})

/** The orchestrator over an EventStore and a ProviderRegistry; recovers interrupted runs first. */
export const orchestratorLayer: Layer.Layer<
  Orchestrator | ThreadActors,
  StorageError,
  EventStore | ProviderRegistry | RuntimeConfig
> = Layer.scoped(
  Orchestrator,
  Effect.gen(function* () {
    yield* recoverInterruptedRuns
    const orchestrator = yield* makeOrchestrator
    // Runs still in flight when the runtime closes end `interrupted`, not orphaned.
    yield* Effect.addFinalizer(() => orchestrator.shutdown)
    return orchestrator
  })
).pipe(Layer.provideMerge(ThreadActors.local), Layer.provide(ProviderSessions.layer))

/** Everything a host needs: SQLite at `dbPath`, the actor runtime and the Orchestrator. */
export const makeRuntimeLayer = (
  options: { readonly dbPath: string } & RuntimeOverrides
): Layer.Layer<Orchestrator | ThreadActors, StorageError, ProviderRegistry> => {
  const { dbPath, ...tunables } = options
  const config = RuntimeConfig.layer(tunables)
  return orchestratorLayer.pipe(
    Layer.provide(EventStore.layer),
    Layer.provide(Layer.merge(Database.layer({ filename: dbPath }), config))
  )
}
