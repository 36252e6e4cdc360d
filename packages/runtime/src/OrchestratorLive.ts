/**
 * The runtime: the Orchestrator over thread actors, provider sessions and the event
 * store (SQLite or PostgreSQL), alone or as one runner of a cluster. `makeRuntimeLayer`
 * is what a host (or the daemon) provides.
 */
import type { ProviderInstanceInfo } from "@skein/domain"
import { defaultAutonomy } from "@skein/domain"
import {
  type DatabaseInUse,
  HandoffNotFound,
  InvalidInput,
  ProviderRegistry,
  StorageError,
  ThreadNotFound
} from "@skein/domain"
import { Duration, Effect, Layer, Option, Stream } from "effect"
import { ProviderSessions, type ProviderSessionsShape } from "./actors/ProviderSessions.js"
import { makeForkCommands } from "./ForkCommands.js"
import { makeRollback } from "./RollbackCommand.js"
import { makeRunCommands } from "./RunCommands.js"
import { stopInFlight, ThreadActors, type ThreadActorsShape } from "./actors/ThreadActors.js"
import { checked } from "./InputCheck.js"
import { Orchestrator } from "./Orchestrator.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import { recoverInterruptedRuns } from "./Recovery.js"
import * as ClusterThreads from "./cluster/ClusterThreads.js"
import * as Runner from "./cluster/Runner.js"
import type { ClusterOptions } from "./cluster/Runner.js"
import { makeRestores } from "./Restores.js"
import { RuntimeConfig } from "./RuntimeConfig.js"
import * as ServedAt from "./resources/ServedAt.js"
import * as ToolCredentials from "./resources/ToolCredentials.js"
import type { RuntimeOverrides } from "./RuntimeConfig.js"
import { Database } from "./store/Database.js"
import * as PostgresLock from "./store/PostgresLock.js"
import { EventStore, type EventStoreShape } from "./store/EventStore.js"
import { makeThreadCommands } from "./ThreadCommands.js"
import { WorkspaceCheckpoints } from "./lineage/WorkspaceCheckpoints.js"

/** What start-up runs before the first command, beside the Orchestrator's face. */
interface Startup {
  readonly recoverRestores: Effect.Effect<void, StorageError>
  readonly resumeQueues: Effect.Effect<void, StorageError>
}

export const makeOrchestrator = Effect.gen(function* () {
  const store = yield* EventStore
  const toolCredentials = yield* ToolCredentials.ToolCredentials
  const servedAt = yield* ServedAt.ServedAt
  const actors = yield* ThreadActors
  const sessions = yield* ProviderSessions
  const config = yield* RuntimeConfig
  const checkpoints = yield* WorkspaceCheckpoints
  const restores = yield* makeRestores
  const { interruptRun, startRun } = makeRunCommands(store, actors)
  const { forkThread, mergeBack } = makeForkCommands(store, actors)
  const { createThread, events, follow, threadView } = makeThreadCommands(store, config)

  const rollback = makeRollback({ store, actors, sessions, checkpoints, restores, threadView })

  /** Activates the actor of every thread with runs queued: each starts its next once idle. */
  const resumeQueues = Effect.flatMap(store.queue.threads, (threadIds) =>
    Effect.forEach(threadIds, (threadId) => Effect.ignoreLogged(actors.use(threadId, () => Effect.void)), {
      discard: true
    })
  )

  // Every input is checked against its RPC method's payload schema first (InputCheck):
  // an embedding host's calls get what the server's decoding gives RPC clients.
  const service = {
    createThread: (input) => Effect.flatMap(checked("thread.create", input), createThread),
    getThread: (threadId, options) =>
      Effect.zipRight(checked("thread.get", { threadId, ...options }), threadView(threadId, options)),
    listThreads: (filter) => Effect.flatMap(checked("thread.list", filter), store.listThreads),
    listTransfers: (filter) => Effect.flatMap(checked("transfer.list", filter), store.listTransfers),
    events: (threadId, fromSequence) =>
      Stream.unwrap(Effect.as(checked("thread.events", { threadId, fromSequence }), events(threadId, fromSequence))),
    follow: (threadId, fromSequence, onEvents) =>
      Effect.zipRight(checked("thread.events", { threadId, fromSequence }), follow(threadId, fromSequence, onEvents)),
    startRun: (input) => Effect.flatMap(checked("run.start", input), startRun),
    interruptRun: (input) => Effect.flatMap(checked("run.interrupt", input), interruptRun),
    forkThread: (input) => Effect.flatMap(checked("thread.fork", input), forkThread),
    mergeBack: (input) => Effect.flatMap(checked("thread.mergeBack", input), mergeBack),
    rollback: (input) => Effect.flatMap(checked("thread.rollback", input), rollback),
    spawnSubagent: (input, options) =>
      Effect.flatMap(checked("subagent.spawn", input), (valid) =>
        actors.spawnSubagent({ ...valid, createdBy: options?.createdBy ?? "user" })
      ),
    getHandoff: (handoffId) =>
      Effect.zipRight(
        checked("handoff.get", { handoffId }),
        store
          .getHandoff(handoffId)
          .pipe(
            Effect.flatMap(
              Option.match({ onNone: () => Effect.fail(new HandoffNotFound({ handoffId })), onSome: Effect.succeed })
            )
          )
      ),
    locateThread: (threadId) =>
      Effect.gen(function* () {
        yield* checked("thread.locate", { threadId })
        if (Option.isNone(yield* store.lookup.thread(threadId))) return yield* new ThreadNotFound({ threadId })
        return { url: yield* actors.locate(threadId) }
      }),
    servedAt,
    respondApproval: (input) =>
      Effect.flatMap(checked("approval.respond", input), (valid) =>
        actors.use(valid.threadId, (actor) => actor.respondApproval(valid))
      ),
    listProviders: listProviders(sessions),
    toolCredentials: {
      ...toolCredentials,
      issue: (threadId) =>
        Effect.zipRight(checked("thread.toolCredential", { threadId }), toolCredentials.issue(threadId))
    },
    shutdown: shutdown(store, actors),
    recoverRestores: restores.recover,
    resumeQueues
  } satisfies OrchestratorShape & Startup
  // The commands that change lineage or configuration run in a span named for them; the
  // run path and the reads do not (docs/decisions/0006-spans-off-the-run-path.md).
  return {
    ...service,
    createThread: traced("Orchestrator.createThread", service.createThread),
    listThreads: traced("Orchestrator.listThreads", service.listThreads),
    forkThread: traced("Orchestrator.forkThread", service.forkThread),
    mergeBack: traced("Orchestrator.mergeBack", service.mergeBack),
    rollback: traced("Orchestrator.rollback", service.rollback),
    spawnSubagent: traced("Orchestrator.spawnSubagent", service.spawnSubagent),
    listProviders: Effect.withSpan(service.listProviders, "Orchestrator.listProviders"),
    shutdown: Effect.withSpan(service.shutdown, "Orchestrator.shutdown"),
    recoverRestores: Effect.withSpan(service.recoverRestores, "Orchestrator.recoverRestores")
  } satisfies OrchestratorShape & Startup
})

/** What `provider.list` tells: each configured instance, its live sessions, its binary. */
const listProviders = (sessions: ProviderSessionsShape): OrchestratorShape["listProviders"] =>
  Effect.gen(function* () {
    const live = yield* sessions.list
    return yield* Effect.forEach(
      sessions.adapters,
      (a) =>
        Effect.map(a.probe ?? Effect.succeed(undefined), (binary): ProviderInstanceInfo => ({
          name: a.name,
          driver: a.driver,
          model: a.model,
          capabilities: a.capabilities,
          autonomy: a.autonomy ?? defaultAutonomy,
          sessions: live.filter((s) => s.provider === a.name),
          ...(binary === undefined ? {} : { binary })
        })),
      { concurrency: "unbounded" }
    )
  })

/**
 * Every active run is stopped (reason `shutdown`) and awaited, and every git
 * checkpoint being taken, all at once, for at most 4 s in all: whatever is left then
 * is cut short when the actors' scopes close, and ends `interrupted` (a checkpoint:
 * not taken) at the next start (crash recovery).
 */
const shutdown = (store: EventStoreShape, actors: ThreadActorsShape): OrchestratorShape["shutdown"] =>
  Effect.gen(function* () {
    const threads = yield* actors.activeThreads
    yield* Effect.forEach(
      threads,
      (threadId) =>
        actors.use(threadId, (actor) =>
          stopInFlight(store, actor, { reason: "shutdown", message: "Skein is shutting down" })
        ),
      { concurrency: "unbounded", discard: true }
    ).pipe(
      // Shutdown runs as a finalizer, uninterruptibly: the waits must be interruptible for the timeout to fire.
      Effect.interruptible,
      Effect.timeout(Duration.seconds(4)),
      Effect.ignore
    )
  })

/** `f` as a service method with a named span. */
const traced = <Args extends Array<any>, A, E, R>(
  name: string,
  f: (...args: Args) => Effect.Effect<A, E, R>
): ((...args: Args) => Effect.Effect<A, E, R>) =>
  Effect.fn(name)(function* (...args: Args) {
    return yield* f(...args)
  })

/**
 * The orchestrator over an EventStore and a ProviderRegistry, its thread actors from
 * `actors`. `recover`: on a database this process alone serves, runs a crash left in
 * flight end interrupted and owed file restores finish first (in a cluster a thread is
 * recovered where it starts, cluster/ClusterThreads.ts).
 */
const orchestratorWith = <E, R>(actors: Layer.Layer<ThreadActors, E, R>, recover: boolean) =>
  Layer.scoped(
    Orchestrator,
    Effect.gen(function* () {
      if (recover) yield* recoverInterruptedRuns
      const orchestrator = yield* makeOrchestrator
      // File restores a crash left owed are finished before any command is taken.
      if (recover) yield* orchestrator.recoverRestores
      // Runs queued before the stop: their threads' actors start them once idle.
      yield* orchestrator.resumeQueues
      // Runs still in flight when the runtime closes end `interrupted`, not orphaned.
      yield* Effect.addFinalizer(() => orchestrator.shutdown)
      return orchestrator
    })
  ).pipe(
    Layer.provideMerge(actors),
    Layer.provide(ProviderSessions.layer),
    Layer.provideMerge(ToolCredentials.layer),
    Layer.provide(ServedAt.layer),
    Layer.provide(
      Layer.unwrapEffect(
        Effect.map(RuntimeConfig, ({ checkpoints }) =>
          WorkspaceCheckpoints.layerWith({ maxFileBytes: checkpoints.maxFileBytes, keepRuns: checkpoints.keepRuns })
        )
      )
    )
  )

/** The orchestrator over an EventStore and a ProviderRegistry; recovers interrupted runs first. */
export const orchestratorLayer: Layer.Layer<
  Orchestrator | ThreadActors | ToolCredentials.ToolCredentials,
  StorageError,
  EventStore | ProviderRegistry | RuntimeConfig
> = orchestratorWith(ThreadActors.local, true)

/**
 * Everything a host needs: the database at `dbPath` (a SQLite file, or a
 * `postgresql://` URL), the actor runtime and the Orchestrator. With `cluster`, this
 * process is one runner of a cluster on that PostgreSQL database (cluster/Runner.ts).
 */
export const makeRuntimeLayer = (
  options: { readonly dbPath: string; readonly cluster?: ClusterOptions | undefined } & RuntimeOverrides
): Layer.Layer<Orchestrator | ThreadActors, StorageError | InvalidInput | DatabaseInUse, ProviderRegistry> => {
  const { dbPath, cluster, ...tunables } = options
  // The options are checked first: options out of range leave no database behind.
  if (cluster === undefined) {
    return orchestratorLayer.pipe(
      Layer.provide(EventStore.layer),
      Layer.provide(Database.locked({ filename: dbPath })),
      Layer.provide(RuntimeConfig.layer(tunables))
    )
  }
  if (!Database.isUrl(dbPath)) {
    return Layer.fail(
      new InvalidInput({ detail: "a cluster keeps its threads in PostgreSQL: give its postgresql:// URL, not a file" })
    )
  }
  // Shared by the runners: a runtime alone on the database refuses to start beside them, and the other way round.
  const database = Database.locked({ filename: dbPath, shared: true })
  // The cluster creates its tables and registers the thread entity as a runner starts:
  // runners starting at once take turns.
  const actors = Layer.scopedContext(
    Effect.flatMap(Effect.scope, (scope) =>
      PostgresLock.whileMigrating(
        dbPath,
        Layer.buildWithScope(ClusterThreads.layer.pipe(Layer.provide(Runner.layer(cluster))), scope)
      )
    )
  ).pipe(
    Layer.mapError((error) =>
      error instanceof StorageError
        ? error
        : new StorageError({ detail: `cannot join the cluster: ${describeCause(error)}`, startup: true })
    )
  )
  return orchestratorWith(actors, false).pipe(
    Layer.provide(EventStore.layer),
    Layer.provide(database),
    Layer.provide(RuntimeConfig.layer(tunables))
  )
}

const describeCause = (error: unknown): string =>
  error instanceof Error
    ? error.cause instanceof Error
      ? `${error.message}: ${error.cause.message}`
      : error.message
    : typeof error === "object" && error !== null && "_tag" in error
      ? String((error as { _tag: unknown })._tag)
      : String(error)
