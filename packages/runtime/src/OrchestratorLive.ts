/**
 * The local runtime: the Orchestrator over thread actors, provider sessions and the
 * SQLite event store. `makeRuntimeLayer` is what a host (or the daemon) provides.
 */
import type {
  AppThread,
  InvalidInput,
  ProviderInstanceInfo,
  Run,
  RunId,
  SkeinError,
  StoredEvent,
  ThreadEvent,
  ThreadId,
  ThreadViewOptions,
  TurnItem
} from "@skein/domain"
import { ForkThreadFields, ThreadId as ThreadIdSchema } from "@skein/domain"
import {
  type DatabaseInUse,
  HandoffNotFound,
  InvalidSourcePoint,
  InvalidInput as InvalidInputError,
  NotAFork,
  ProviderRegistry,
  RestorePending,
  RunNotFound,
  StorageError,
  ThreadCreated,
  ThreadNotFound,
  isTerminalRunStatus,
  makeId
} from "@skein/domain"
import { Deferred, Duration, Effect, Exit, FiberId, Layer, Option, Schema, Stream } from "effect"
import { ProviderSessions } from "./actors/ProviderSessions.js"
import { payloadHash, replay } from "./store/Receipts.js"
import { ThreadActors } from "./actors/ThreadActors.js"
import { checked } from "./InputCheck.js"
import { Orchestrator } from "./Orchestrator.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import { recoverInterruptedRuns } from "./Recovery.js"
import { makeRestores } from "./Restores.js"
import { RuntimeConfig } from "./RuntimeConfig.js"
import type { RuntimeOverrides } from "./RuntimeConfig.js"
import { Database } from "./store/Database.js"
import { EventStore } from "./store/EventStore.js"
import { toRunView, upsertItem } from "./store/Projection.js"
import { resolveWorkspace } from "./Workspace.js"
import { inheritanceOf } from "./lineage/LineageContext.js"
import { mergeBackTransfer, planChildThread } from "./lineage/Lineage.js"
import { sourceOfRun } from "./lineage/Spawn.js"
import { WorkspaceCheckpoints } from "./lineage/WorkspaceCheckpoints.js"

type ForkThreadFieldsType = Schema.Struct.Type<typeof ForkThreadFields>
const ForkReceipt = Schema.Struct({ threadId: ThreadIdSchema })
const CreateReceipt = Schema.Struct({ threadId: ThreadIdSchema })

export const makeOrchestrator = Effect.gen(function* () {
  const store = yield* EventStore
  const actors = yield* ThreadActors
  const sessions = yield* ProviderSessions
  const config = yield* RuntimeConfig
  const checkpoints = yield* WorkspaceCheckpoints
  const restores = yield* makeRestores

  const threadView = (threadId: ThreadId, options?: ThreadViewOptions) =>
    store
      .threadView(threadId, options)
      .pipe(
        Effect.flatMap(
          Option.match({ onNone: () => Effect.fail(new ThreadNotFound({ threadId })), onSome: Effect.succeed })
        )
      )

  const createThread: OrchestratorShape["createThread"] = (input) =>
    Effect.gen(function* () {
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

  const awaitEnd = (threadId: ThreadId, runId: Run["id"]) => store.awaitRunEnd(threadId, runId)

  const getRun = (threadId: ThreadId, runId: RunId) => actors.use(threadId, (actor) => actor.ask("GetRun", { runId }))

  /**
   * Starts a run and waits for its end, watching the thread's events from before the
   * start: a run seen from its RunStarted on is known whole from those events (its
   * items, its final record), with no read once it ends. A run not seen starting (a
   * replayed command naming an older run) is awaited and read as usual.
   */
  const startAndWait = (input: Parameters<OrchestratorShape["startRun"]>[0]) =>
    Effect.suspend(() => {
      let early: Array<ThreadEvent> | null = []
      let runId: RunId | null = null
      let started = false
      /** The run's record as its latest event has it (an end's batch may update it after RunEnded). */
      let latest: Run | null = null
      let end = false
      const items: Array<TurnItem> = []
      const ended = Deferred.unsafeMake<Run>(FiberId.none)
      const take = (events: ReadonlyArray<ThreadEvent>) => {
        for (const event of events) {
          switch (event._tag) {
            case "RunStarted":
            case "RunUpdated":
            case "RunEnded":
              if (event.run.id !== runId) break
              started ||= event._tag === "RunStarted"
              end ||= event._tag === "RunEnded"
              latest = event.run
              break
            case "TurnItemRecorded":
              if (event.item.runId === runId) upsertItem(items, event.item)
              break
          }
        }
        // Called from the store's listener, outside any fiber.
        if (end && latest !== null) Deferred.unsafeDone(ended, Exit.succeed(latest))
      }
      const onEvents = (events: ReadonlyArray<StoredEvent>) => {
        const batch = events.map((stored) => stored.event)
        if (early !== null) early.push(...batch)
        else take(batch)
      }
      return store.watching(
        input.threadId,
        onEvents,
        Effect.gen(function* () {
          const accepted = yield* actors.use(input.threadId, (actor) => actor.askSettled("StartRun", input))
          runId = accepted.run.id
          take(early!)
          early = null
          if (!started) {
            if (!isTerminalRunStatus(accepted.run.status)) yield* awaitEnd(input.threadId, accepted.run.id)
            return yield* getRun(input.threadId, accepted.run.id)
          }
          return toRunView(yield* Deferred.await(ended), items)
        })
      )
    })

  const startRun: OrchestratorShape["startRun"] = (input) =>
    input.wait
      ? startAndWait(input)
      : Effect.flatMap(
          actors.use(input.threadId, (actor) => actor.askSettled("StartRun", input)),
          (accepted) => getRun(input.threadId, accepted.run.id)
        )

  const interruptRun: OrchestratorShape["interruptRun"] = (input) =>
    Effect.gen(function* () {
      const accepted = yield* actors.use(input.threadId, (actor) => actor.ask("InterruptRun", input))
      return isTerminalRunStatus(accepted.run.status) ? accepted.run : yield* awaitEnd(input.threadId, accepted.run.id)
    })

  const forkThread: OrchestratorShape["forkThread"] = (input) =>
    Effect.gen(function* () {
      const hash = payloadHash({
        sourceThreadId: input.sourceThreadId,
        sourcePoint: input.sourcePoint,
        sideChat: input.sideChat ?? false,
        title: input.title ?? null
      })
      const replayed = yield* replay(store.receipt, input.commandId, "thread.fork", hash, ForkReceipt)
      if (Option.isSome(replayed)) {
        const fork = yield* store.loadThread(replayed.value.threadId)
        const transfer = Option.flatMap(fork, (f) => Option.fromNullable(inheritanceOf(f)))
        if (Option.isSome(fork) && Option.isSome(transfer))
          return { thread: fork.value.thread, transfer: transfer.value }
      }
      const source = yield* Effect.flatMap(store.lookup.thread(input.sourceThreadId), (found) =>
        Option.isSome(found)
          ? Effect.succeed(found.value)
          : Effect.fail(new ThreadNotFound({ threadId: input.sourceThreadId }))
      )
      const run = yield* sourceRunOf(source.id, input.sourcePoint)
      const planned = planChildThread({
        kind: "fork",
        parent: source,
        source: yield* sourceOfRun(store, source, run),
        fromCheckpoint: typeof input.sourcePoint === "object" && "checkpointId" in input.sourcePoint,
        title: input.title ?? (source.title === "" ? "fork" : `fork of ${source.title}`.slice(0, 500)),
        sideChat: input.sideChat ?? false,
        createdBy: "user",
        now: new Date().toISOString()
      })
      yield* store
        .append({
          threadId: planned.thread.id,
          events: planned.events,
          expectedSequence: 0,
          commandId: input.commandId,
          receipt: input.commandId
            ? {
                commandId: input.commandId,
                method: "thread.fork",
                payloadHash: hash,
                result: { threadId: planned.thread.id }
              }
            : undefined
        })
        .pipe(Effect.catchTag("SequenceConflict", (e) => Effect.fail(new StorageError({ detail: e.message }))))
      return { thread: planned.thread, transfer: planned.transfer }
    })

  /** The run a fork starts from: completed, not rolled back (a checkpoint names its run). */
  const sourceRunOf = (threadId: ThreadId, spec: ForkThreadFieldsType["sourcePoint"]) =>
    Effect.gen(function* () {
      const refuse = (detail: string) => Effect.fail(new InvalidSourcePoint({ threadId, detail }))
      if (spec === "latest_stable") {
        const latest = yield* store.lookup.latestStableRun(threadId)
        if (Option.isNone(latest)) return yield* refuse("it has no completed run with a checkpoint yet")
        return latest.value
      }
      let runId: Run["id"]
      if ("checkpointId" in spec) {
        const checkpoint = yield* store.lookup.checkpoint(threadId, spec.checkpointId)
        if (Option.isNone(checkpoint) || checkpoint.value.status !== "ready") {
          return yield* refuse(`there is no ready checkpoint ${spec.checkpointId} on it`)
        }
        runId = checkpoint.value.runId
      } else runId = spec.runId
      const run = yield* store.lookup.run(threadId, runId)
      if (Option.isNone(run)) return yield* new RunNotFound({ runId })
      const status = run.value.status
      if (status !== "completed") {
        return yield* refuse(
          status === "running" || status === "queued"
            ? `run ${runId} is still in flight; fork from a completed run, or wait for it to end`
            : `run ${runId} is ${status.replace("_", " ")}: only a completed run is a stable point to fork from`
        )
      }
      return run.value
    })

  const mergeBack: OrchestratorShape["mergeBack"] = (input) =>
    Effect.gen(function* () {
      const fork = yield* store.loadThread(input.forkThreadId)
      if (Option.isNone(fork)) return yield* new ThreadNotFound({ threadId: input.forkThreadId })
      const forkTransfer = inheritanceOf(fork.value)
      if (fork.value.thread.lineage.relationshipToParent !== "fork" || forkTransfer === undefined) {
        return yield* new NotAFork({ threadId: input.forkThreadId })
      }
      const latest = yield* store.lookup.latestStableRun(input.forkThreadId)
      if (Option.isNone(latest)) {
        return yield* new InvalidSourcePoint({
          threadId: input.forkThreadId,
          detail: "the fork has no completed run to merge back yet"
        })
      }
      const transfer = mergeBackTransfer({
        fork: fork.value.thread,
        forkTransfer,
        latest: latest.value,
        now: new Date().toISOString()
      })
      return yield* actors.use(forkTransfer.sourceThreadId, (actor) =>
        actor.ask("RecordTransfer", {
          transfer,
          receipt: input.commandId
            ? {
                commandId: input.commandId,
                method: "thread.mergeBack",
                hash: payloadHash({ forkThreadId: input.forkThreadId })
              }
            : null
        })
      )
    })

  /**
   * `dryRun`: what the rollback's file restore would change, with nothing written. The
   * checks are the rollback's own (the run exists, no run is active, its checkpoint can
   * serve), so a dry run that answers is a rollback that would go ahead.
   */
  const previewRollback = (input: Parameters<OrchestratorShape["rollback"]>[0]) =>
    Effect.gen(function* () {
      const view = yield* threadView(input.threadId)
      const { thread } = view
      if (!input.restoreFiles) {
        return yield* new InvalidInputError({
          detail: "thread.rollback: dryRun previews the file restore and needs restoreFiles: true"
        })
      }
      if (input.toRunOrdinal > view.runs.length) {
        return yield* new InvalidInputError({
          detail: `thread ${input.threadId} has ${view.runs.length} run(s): it cannot be rolled back to run ${input.toRunOrdinal}`
        })
      }
      if (thread.restore?.status === "owed") {
        return yield* new RestorePending({ threadId: input.threadId, toRunOrdinal: thread.restore.toRunOrdinal })
      }
      const checkpoint = Option.getOrUndefined(
        yield* store.lookup.gitCheckpointOfRun(input.threadId, input.toRunOrdinal)
      )
      if (checkpoint?.commitSha === undefined || thread.workspace === null) {
        return yield* new InvalidSourcePoint({
          threadId: input.threadId,
          detail: `run ${input.toRunOrdinal} has no git checkpoint to restore files from (its workspace is not a git repository, or the run did not complete)`
        })
      }
      const restore = yield* checkpoints.restore({
        workspace: thread.workspace,
        threadId: input.threadId,
        commit: checkpoint.commitSha,
        toRunOrdinal: input.toRunOrdinal,
        restoreId: "dry-run",
        dryRun: true
      })
      return { ...view, restore }
    })

  const rollback: OrchestratorShape["rollback"] = (input) =>
    Effect.gen(function* () {
      if (input.dryRun) return yield* previewRollback(input)
      const started = yield* actors.use(input.threadId, (actor) =>
        actor.askSettled("Rollback", {
          toRunOrdinal: input.toRunOrdinal,
          restoreFiles: input.restoreFiles ?? false,
          commandId: input.commandId
        })
      )
      if (!started.replayed) {
        const workspace = Option.getOrNull(yield* store.lookup.thread(input.threadId))?.workspace ?? null
        // Provider threads that can drop the rolled-back turns natively are kept usable.
        const results = yield* Effect.forEach(
          started.native,
          (target) =>
            sessions
              .use(target.provider, workspace, (lease) =>
                lease.handle.rollbackThread(target.nativeRef, target.beforeTurnRef)
              )
              .pipe(
                Effect.match({
                  onFailure: (error) => ({ providerThreadId: target.providerThreadId, detail: error.message }),
                  onSuccess: () => ({ providerThreadId: target.providerThreadId, detail: null })
                })
              ),
          { concurrency: 4 }
        )
        if (results.length > 0) {
          yield* actors.use(input.threadId, (actor) =>
            actor.ask("RollbackSettled", { toRunOrdinal: input.toRunOrdinal, results })
          )
        }
        // Work this thread sent elsewhere from runs now rolled back is no longer to be delivered.
        const view = yield* threadView(input.threadId)
        const targets = new Set(
          view.transfers
            .filter(
              (t) =>
                t.sourceThreadId === input.threadId &&
                t.targetThreadId !== input.threadId &&
                t.status === "pending" &&
                (t.type === "merge_back" || t.type === "subagent_result")
            )
            .map((t) => t.targetThreadId)
        )
        yield* Effect.forEach(
          targets,
          (target) => actors.use(target, (actor) => actor.ask("RevalidateIncoming", undefined)),
          {
            discard: true
          }
        )
      }
      // The files last: the thread takes no run until they are back (RestorePending).
      const restore = started.restore === null ? null : yield* restores.finish(input.threadId, started.restore)
      if (!started.replayed) yield* dropRolledBackCheckpoints(input.threadId, input.toRunOrdinal)
      const view = yield* threadView(input.threadId)
      return restore?.outcome ? { ...view, restore: restore.outcome } : view
    })

  /**
   * The hidden refs of the runs a rollback dropped: their checkpoints are gone with
   * them (rolled-back runs never live again). A failure only leaves refs behind: logged.
   */
  const dropRolledBackCheckpoints = (threadId: ThreadId, toRunOrdinal: number) =>
    Effect.gen(function* () {
      const workspace = Option.getOrNull(yield* store.lookup.thread(threadId))?.workspace ?? null
      if (workspace === null || !(yield* checkpoints.isRepository(workspace))) return
      yield* checkpoints.dropCheckpointsAfter(workspace, threadId, toRunOrdinal)
    }).pipe(
      Effect.catchAll((error) =>
        Effect.logWarning(`thread ${threadId}: the checkpoint refs of rolled-back runs stay (${error.message})`)
      )
    )

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
   * Every active run is stopped (reason `shutdown`) and awaited, and every git
   * checkpoint being taken, all at once, for at most 4 s in all: whatever is left then
   * is cut short when the actors' scopes close, and ends `interrupted` (a checkpoint:
   * not taken) at the next start (crash recovery).
   */
  const shutdown: OrchestratorShape["shutdown"] = Effect.gen(function* () {
    const threads = yield* actors.activeThreads
    yield* Effect.forEach(
      threads,
      (threadId) =>
        actors.use(threadId, (actor) =>
          Effect.gen(function* () {
            const status = yield* actor.ask("Status", undefined)
            if (status.activeRunId !== null) {
              const accepted = yield* actor.ask("StopRun", {
                failure: { reason: "shutdown", message: "Skein is shutting down" }
              })
              yield* awaitEnd(threadId, accepted.run.id)
            }
            // A git checkpoint being taken gets the same time to be recorded.
            yield* actor.settled
          })
        ),
      { concurrency: "unbounded", discard: true }
    ).pipe(
      // Shutdown runs as a finalizer, uninterruptibly: the waits must be interruptible for the timeout to fire.
      Effect.interruptible,
      Effect.timeout(Duration.seconds(4)),
      Effect.ignore
    )
  })

  // Every input is checked against its RPC method's payload schema first (InputCheck):
  // an embedding host's calls get what the server's decoding gives RPC clients.
  const service = {
    createThread: (input) => Effect.flatMap(checked("thread.create", input), createThread),
    getThread: (threadId, options) =>
      Effect.zipRight(checked("thread.get", { threadId, ...options }), threadView(threadId, options)),
    listThreads: (filter) => Effect.flatMap(checked("thread.list", filter), store.listThreads),
    events: (threadId, fromSequence) =>
      Stream.unwrap(Effect.as(checked("thread.events", { threadId, fromSequence }), events(threadId, fromSequence))),
    follow: (threadId, fromSequence, onEvents) =>
      Effect.zipRight(checked("thread.events", { threadId, fromSequence }), follow(threadId, fromSequence, onEvents)),
    startRun: (input) => Effect.flatMap(checked("run.start", input), startRun),
    interruptRun: (input) => Effect.flatMap(checked("run.interrupt", input), interruptRun),
    forkThread: (input) => Effect.flatMap(checked("thread.fork", input), forkThread),
    mergeBack: (input) => Effect.flatMap(checked("thread.mergeBack", input), mergeBack),
    rollback: (input) => Effect.flatMap(checked("thread.rollback", input), rollback),
    spawnSubagent: (input) =>
      Effect.flatMap(checked("subagent.spawn", input), (valid) =>
        actors.spawnSubagent({ ...valid, createdBy: "user" })
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
    respondApproval: (input) =>
      Effect.flatMap(checked("approval.respond", input), (valid) =>
        actors.use(valid.threadId, (actor) => actor.respondApproval(valid))
      ),
    listProviders,
    shutdown,
    recoverRestores: restores.recover
  } satisfies OrchestratorShape & { readonly recoverRestores: Effect.Effect<void, StorageError> }
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
  } satisfies OrchestratorShape & { readonly recoverRestores: Effect.Effect<void, StorageError> }
})

/** `f` as a service method with a named span. */
const traced = <Args extends Array<any>, A, E, R>(
  name: string,
  f: (...args: Args) => Effect.Effect<A, E, R>
): ((...args: Args) => Effect.Effect<A, E, R>) =>
  Effect.fn(name)(function* (...args: Args) {
    return yield* f(...args)
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
    // File restores a crash left owed are finished before any command is taken.
    yield* orchestrator.recoverRestores
    // Runs still in flight when the runtime closes end `interrupted`, not orphaned.
    yield* Effect.addFinalizer(() => orchestrator.shutdown)
    return orchestrator
  })
).pipe(
  Layer.provideMerge(ThreadActors.local),
  Layer.provide(ProviderSessions.layer),
  Layer.provide(
    Layer.unwrapEffect(
      Effect.map(RuntimeConfig, ({ checkpoints }) =>
        WorkspaceCheckpoints.layerWith({ maxFileBytes: checkpoints.maxFileBytes, keepRuns: checkpoints.keepRuns })
      )
    )
  )
)

/** Everything a host needs: SQLite at `dbPath`, the actor runtime and the Orchestrator. */
export const makeRuntimeLayer = (
  options: { readonly dbPath: string } & RuntimeOverrides
): Layer.Layer<Orchestrator | ThreadActors, StorageError | InvalidInput | DatabaseInUse, ProviderRegistry> => {
  const { dbPath, ...tunables } = options
  // The options are checked first: options out of range leave no database behind.
  return orchestratorLayer.pipe(
    Layer.provide(EventStore.layer),
    Layer.provide(Database.locked({ filename: dbPath })),
    Layer.provide(RuntimeConfig.layer(tunables))
  )
}
