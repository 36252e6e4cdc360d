/**
 * Where thread actors live. This local implementation keeps at most one actor per
 * thread in an RcRegistry (whose get-or-create is atomic: a burst of requests for a
 * thread that is not active activates it once). An actor is created on first use
 * from storage, kept while anyone (a caller, a run in flight) holds it, and
 * passivated after an idle period. An actor that stops for good (its restart after a
 * defect failed) evicts itself, so the next use activates a fresh one from storage.
 * In a cluster, the service reaches the actors through the cluster, and each runner
 * keeps its own threads' actors in such a registry (cluster/ClusterThreads.ts).
 */
import type { AppThread, Run, RunFailure, RunView, SkeinError, ThreadId } from "@skein/domain"
import { isTerminalRunStatus } from "@skein/domain"
import { Context, Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import type { SpawnInput } from "../lineage/Spawn.js"
import { spawnSubagent } from "../lineage/Spawn.js"
import { EventStore, type EventStoreShape } from "../store/EventStore.js"
import * as RunWatch from "../store/RunWatch.js"
import { ProviderSessions } from "./ProviderSessions.js"
import type { WorkspaceCheckpoints } from "../lineage/WorkspaceCheckpoints.js"
import * as RcRegistry from "../resources/RcRegistry.js"
import { ServedAt } from "../resources/ServedAt.js"
import * as Telemetry from "../resources/Telemetry.js"
import type { ThreadActor } from "./ThreadActor.js"
import type { StartRunPayload } from "./ThreadProtocol.js"
import { makeThreadActor } from "./ThreadActor.js"

export interface ThreadActorsShape {
  /** Use the thread's actor, activating it from storage if needed. */
  readonly use: <A, E>(
    threadId: ThreadId,
    f: (actor: ThreadActor) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | SkeinError>
  /** Threads whose actor is active now. */
  readonly activeThreads: Effect.Effect<ReadonlyArray<ThreadId>>
  /** Start a subagent: its child thread, its run, and its result's way back. */
  readonly spawnSubagent: (
    input: SpawnInput
  ) => Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError>
  /**
   * Closes the thread's actor here, if it is active (the thread moved elsewhere), once a
   * run it has in flight is stopped and its end recorded (within 4 s).
   */
  readonly release: (threadId: ThreadId) => Effect.Effect<void>
  /**
   * Starts a run and answers it once it has ended, where the thread's actor lives: there
   * its commits are heard as they are made, with nothing read back.
   */
  readonly startAndWait: (input: StartRunPayload) => Effect.Effect<RunView, SkeinError>
  /**
   * The RPC url of the process whose actor serves the thread (ServedAt.ts), or null when
   * that process serves none. The caller checks first that the thread exists.
   */
  readonly locate: (threadId: ThreadId) => Effect.Effect<string | null, SkeinError>
}

/**
 * Stops the actor's run in flight, if any, with `failure`, and waits for its end to be
 * recorded, then for a git checkpoint being taken: what a shutdown does to every actor,
 * and a runner to the actor of a thread that moves away.
 */
export const stopInFlight = Effect.fnUntraced(function* (
  store: EventStoreShape,
  actor: ThreadActor,
  failure: RunFailure
): Effect.fn.Return<void, SkeinError> {
  const status = yield* actor.ask("Status", undefined)
  if (status.activeRunId !== null) {
    const accepted = yield* actor.ask("StopRun", { failure })
    yield* store.awaitRunEnd(actor.threadId, accepted.run.id)
  }
  yield* actor.settled
})

/** How a run in flight ends when its thread moves to another runner of a cluster. */
const MOVED: RunFailure = {
  reason: "runner_lost",
  message: "the thread moved to another Skein process of the cluster while this run was in flight"
}

/** What the local registry needs, as a layer requires it. */
type LocalNeeds = EventStore | ProviderSessions | RuntimeConfig | WorkspaceCheckpoints | ServedAt

/**
 * The local registry. `reach`, when given, is how a thread's actor reaches another
 * thread (a subagent's start and its result's way back): through the cluster, where the
 * other thread may live elsewhere; by default, this registry.
 */
export const makeLocal = (
  reach?: ThreadActorsShape["use"]
): Effect.Effect<ThreadActorsShape, never, Scope.Scope | LocalNeeds> =>
  Effect.gen(function* () {
    const config = yield* RuntimeConfig
    const store = yield* EventStore
    const sessions = yield* ProviderSessions
    const servedAt = yield* ServedAt
    const scope = yield* Effect.scope
    // eslint-disable-next-line prefer-const
    let actors: RcRegistry.RcRegistry<ThreadId, ThreadActor, SkeinError>
    const use: ThreadActorsShape["use"] = (threadId, f) => actors.use(threadId, f)
    const other = reach ?? use
    const spawn = (input: SpawnInput) =>
      spawnSubagent(
        {
          store,
          childSpawned: (parentId) =>
            reach === undefined
              ? actors.peek(parentId)?.childSpawned()
              : // The parent may live on another runner: told there, without waiting for it.
                void Effect.runFork(Effect.ignore(reach(parentId, (actor) => Effect.sync(() => actor.childSpawned())))),
          providerExists: (name) => Effect.asVoid(sessions.adapter(name)),
          startRun: ({ message, model, provider, threadId }) =>
            other(threadId, (actor) =>
              actor.ask("StartRun", { threadId, provider, message, ...(model === undefined ? {} : { model }) })
            ),
          recordResult: (parentId, transfer) =>
            other(parentId, (actor) => actor.ask("RecordTransfer", { transfer, receipt: null })),
          scope
        },
        input
      )
    // An actor that stops for good (its restart failed) evicts itself: the next use
    // activates a fresh one from storage.
    // While a run is in flight, the actor holds its own entry.
    const activate = (threadId: ThreadId, evict: Effect.Effect<void>, hold: Effect.Effect<Effect.Effect<void>>) =>
      Effect.tap(makeThreadActor(threadId, { retain: hold, spawn, onStopped: evict }), () => Telemetry.countThreadAlive)
    actors = yield* RcRegistry.make({ lookup: activate, idleTimeToLive: Duration.millis(config.passivateAfterMs) })
    /** The start and the wait for its run, while `watch` follows the thread. */
    const startWatched = Effect.fnUntraced(function* (input: StartRunPayload, watch: RunWatch.RunWatch) {
      const accepted = yield* use(input.threadId, (actor) => actor.askSettled("StartRun", input))
      watch.begin(accepted.run.id)
      if (!watch.sawStart()) {
        if (!isTerminalRunStatus(accepted.run.status)) yield* store.awaitRunEnd(input.threadId, accepted.run.id)
        // Its start may have been told while it was awaited: then it was seen whole after all.
        if (!watch.sawStart() || !watch.sawEnd()) {
          return yield* use(input.threadId, (actor) => actor.ask("GetRun", { runId: accepted.run.id }))
        }
      }
      return yield* watch.ended
    })
    /**
     * Watches the thread's events from before the start: a run seen from its RunStarted
     * on is known whole from those events (its items, its final record), with no read once
     * it ends. A run not seen starting (a replayed command naming an older run) is awaited
     * and read as usual.
     */
    const startAndWait: ThreadActorsShape["startAndWait"] = (input) =>
      Effect.suspend(() => {
        const watch = RunWatch.make()
        return store.watching(input.threadId, watch.listener, startWatched(input, watch))
      })
    /**
     * The thread moved away: its run in flight here is stopped and its end recorded from
     * here (what is queued stays queued), and a checkpoint being taken is recorded, within
     * 4 s, before the actor goes; else the runner that takes the thread would find the run
     * in flight and end it while it went on here.
     */
    const release: ThreadActorsShape["release"] = (threadId) =>
      Effect.suspend(() => {
        const actor = actors.peek(threadId)
        if (actor === undefined) return actors.invalidate(threadId)
        return Effect.zipRight(
          stopInFlight(store, actor, MOVED).pipe(
            Effect.interruptible,
            Effect.timeout(Duration.seconds(4)),
            Effect.ignore
          ),
          actors.invalidate(threadId)
        )
      })
    return {
      use,
      activeThreads: actors.keys,
      spawnSubagent: spawn,
      release,
      startAndWait,
      locate: () => Effect.sync(servedAt.url)
    } satisfies ThreadActorsShape
  })

export class ThreadActors extends Context.Tag("@skein/runtime/ThreadActors")<ThreadActors, ThreadActorsShape>() {
  static local: Layer.Layer<ThreadActors, never, LocalNeeds> = Layer.scoped(ThreadActors, makeLocal())
}
