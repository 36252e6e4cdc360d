/**
 * The local runtime: the Orchestrator over thread actors, provider sessions and the
 * SQLite event store. `makeRuntimeLayer` is what a host (or the daemon) provides.
 */
import type { AppThread, ProviderInstanceInfo, SkeinError, StoredEvent, ThreadId } from "@skein/domain"
import {
  CommandConflict,
  HandoffNotFound,
  InterruptRun,
  NotSupportedYet,
  ProviderRegistry,
  RespondApproval,
  StartRun,
  ThreadCreated,
  ThreadNotFound,
  makeId
} from "@skein/domain"
import type { StorageError } from "@skein/domain"
import { Deferred, Duration, Effect, Layer, Option, Stream } from "effect"
import { ProviderSessions } from "./actors/ProviderSessions.js"
import { payloadHash } from "./actors/Receipts.js"
import { ThreadActors } from "./actors/ThreadActors.js"
import { StopRun } from "./actors/ThreadMessages.js"
import { Orchestrator } from "./Orchestrator.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import { recoverInterruptedRuns } from "./Recovery.js"
import { RuntimeConfig } from "./RuntimeConfig.js"
import type { RuntimeOptions } from "./RuntimeConfig.js"
import { Database } from "./store/Database.js"
import { EventStore } from "./store/EventStore.js"

const notSupported = (method: string) => Effect.fail(new NotSupportedYet({ method }))

export const makeOrchestrator = Effect.gen(function* () {
  const store = yield* EventStore
  const actors = yield* ThreadActors
  const sessions = yield* ProviderSessions

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
      const id = makeId.thread()
      const now = new Date().toISOString()
      const thread: AppThread = {
        id,
        title: input.title ?? "",
        workspace: input.workspace ?? null,
        lineage: { parentThreadId: null, relationshipToParent: null, rootThreadId: id },
        createdAt: now,
        updatedAt: now
      }
      yield* store.append({
        threadId: id,
        events: [new ThreadCreated({ thread })],
        commandId: input.commandId,
        receipt: input.commandId
          ? { commandId: input.commandId, method: "thread.create", payloadHash: hash, result: { threadId: id } }
          : undefined
      })
      return thread
    })

  const startRun: OrchestratorShape["startRun"] = (input) =>
    Effect.gen(function* () {
      return yield* actors.use(input.threadId, (actor) =>
        Effect.gen(function* () {
          const ticket = yield* actor.startRun(StartRun.make(input))
          if (input.wait) yield* Deferred.await(ticket.done)
          return yield* actor.runView(ticket.run.id)
        })
      )
    })

  const interruptRun: OrchestratorShape["interruptRun"] = (input) =>
    Effect.gen(function* () {
      const ticket = yield* actors.use(input.threadId, (actor) => actor.interruptRun(InterruptRun.make(input)))
      return yield* Deferred.await(ticket.done)
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
    return sessions.adapters.map((a): ProviderInstanceInfo => ({
      name: a.name,
      driver: a.driver,
      model: a.model,
      capabilities: a.capabilities,
      sessions: live.filter((s) => s.provider === a.name)
    }))
  })

  const shutdown: OrchestratorShape["shutdown"] = Effect.gen(function* () {
    const threads = yield* actors.activeThreads
    yield* Effect.forEach(
      threads,
      (threadId) =>
        actors
          .use(threadId, (actor) =>
            Effect.gen(function* () {
              if (Option.isNone(yield* actor.active)) return
              const ticket = yield* actor.interruptRun(new StopRun({ reason: "shutdown" }))
              yield* Deferred.await(ticket.done)
            })
          )
          .pipe(Effect.timeout(Duration.seconds(5)), Effect.ignore),
      { concurrency: "unbounded", discard: true }
    )
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
    respondApproval: (input) =>
      actors.use(input.threadId, (actor) => actor.respondApproval(RespondApproval.make(input))),
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
  options: { readonly dbPath: string } & Partial<RuntimeOptions>
): Layer.Layer<Orchestrator | ThreadActors, StorageError, ProviderRegistry> => {
  const { dbPath, ...tunables } = options
  const config = RuntimeConfig.layer(tunables)
  return orchestratorLayer.pipe(
    Layer.provide(EventStore.layer),
    Layer.provide(Layer.merge(Database.layer({ filename: dbPath }), config))
  )
}
