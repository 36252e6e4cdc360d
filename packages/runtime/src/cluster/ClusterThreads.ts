/**
 * Thread actors across a cluster of Skein processes sharing one PostgreSQL database
 * (`@effect/cluster`, its shard and message storage in that database).
 *
 * - Every thread is an entity (ThreadEntity.ts), placed on one runner by its id. The
 *   runner keeps the thread's actor in its own registry (ThreadActors' `makeLocal`),
 *   with the agents the actor drives; what reaches another thread goes through the
 *   cluster.
 * - `ThreadActors` here hands callers a stand-in for the actor whose messages travel to
 *   the thread's entity, wherever it lives, so the Orchestrator is the same on every
 *   process and any daemon serves any request.
 * - When a thread's entity starts on a runner, a run its log still shows in flight was
 *   left by a runner that died (its shards came here once their lease ran out): it ends
 *   `interrupted`, reason `runner_lost`, before the actor loads. A runner that only
 *   seems dead and writes on is refused by the log's expected-sequence fence.
 * - When the entity leaves a runner (its shard moved, or the runner stops), the actor
 *   there stops its run in flight, records that end, and closes.
 * - A run started with `wait` is started and awaited on the thread's runner in one
 *   message (`StartAndWait`), where the thread's commits are heard as they are made,
 *   rather than followed from afar through the database.
 * - Asked where a thread lives (`Locate`), its runner answers with the url it serves RPC
 *   at, so that a client may send that thread's requests there rather than through a
 *   daemon that would pass each one on.
 */
import { Entity, Sharding } from "@effect/cluster"
import {
  isTerminalRunStatus,
  makeId,
  type RunId,
  type RunView,
  type SkeinError,
  StorageError,
  type ThreadId
} from "@skein/domain"
import { Cause, Effect, Layer, Option } from "effect"
import type { ThreadActor } from "../actors/ThreadActor.js"
import { makeLocal, ThreadActors, type ThreadActorsShape } from "../actors/ThreadActors.js"
import { planRecovery } from "../actors/ThreadPlanner.js"
import type { StartRunPayload, ThreadAsk } from "../actors/ThreadProtocol.js"
import { threadRpcs } from "../actors/ThreadProtocol.js"
import { EventStore } from "../store/EventStore.js"
import { ThreadEntity } from "./ThreadEntity.js"

/** The messages a client sends after the checkpoint gate (ThreadActor's `askSettled`). */
const SETTLED = new Set(["StartRun", "Rollback"])

/** The cluster's own failures: the message could not be stored or delivered. */
const CLUSTER_ERRORS = new Set(["MailboxFull", "AlreadyProcessingMessage", "PersistenceError"])

/** A reply's error as the runtime's own: the thread's, or a StorageError saying what the cluster could not do. */
const undelivered =
  (threadId: ThreadId, tag: string) =>
  (error: { readonly _tag: string; readonly message?: string }): SkeinError =>
    CLUSTER_ERRORS.has(error._tag)
      ? new StorageError({
          detail: `the cluster could not deliver ${tag} to thread ${threadId} (${error._tag}${error.message ? `: ${error.message}` : ""})`
        })
      : (error as SkeinError)

/** A run left in flight by a runner that died ends `interrupted` before the thread's actor loads here. */
const recoverLost = (threadId: ThreadId) =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const state = yield* store.loadThread(threadId)
    if (Option.isNone(state)) return
    const now = new Date().toISOString()
    const events = yield* store.demand(state.value, () =>
      planRecovery(state.value, now, {
        reason: "runner_lost",
        message: "the Skein process that held this thread stopped while this run was in flight; the thread moved"
      })
    )
    if (events.length === 0) return
    yield* store.append({ threadId, events, expectedSequence: state.value.lastThreadSequence })
    yield* Effect.logInfo(`thread ${threadId}: a run left by a lost runner ended interrupted`)
  })

/** The thread's entity on this runner: its messages to the actor in `hosted`. */
const entityLayer = (hosted: ThreadActorsShape) =>
  ThreadEntity.toLayer(
    Effect.gen(function* () {
      const address = yield* Entity.CurrentAddress
      const threadId = address.entityId as string as ThreadId
      // A run in flight here already (an actor that outlived an earlier entity) is not lost.
      if (!(yield* hosted.activeThreads).includes(threadId)) yield* Effect.orDie(recoverLost(threadId))
      yield* Effect.addFinalizer(() => hosted.release(threadId))
      const onActor = <A>(f: (actor: ThreadActor) => Effect.Effect<A, SkeinError>) => hosted.use(threadId, f)
      const handlers: Record<string, (request: { readonly payload: unknown }) => Effect.Effect<unknown, SkeinError>> =
        {}
      for (const rpc of threadRpcs) {
        const tag = rpc._tag
        handlers[tag] = ({ payload }) =>
          onActor((actor) => (SETTLED.has(tag) ? actor.askSettled : actor.ask)(tag as never, payload as never))
      }
      handlers["Steer"] = ({ payload }) => onActor((actor) => actor.steer(payload as never))
      handlers["Respond"] = ({ payload }) => onActor((actor) => actor.respondApproval(payload as never))
      handlers["ChildSpawned"] = () => onActor((actor) => Effect.sync(() => actor.childSpawned()))
      handlers["StartAndWait"] = ({ payload }) => hosted.startAndWait(payload as StartRunPayload)
      handlers["Locate"] = () => hosted.locate(threadId)
      return handlers as never
    }),
    // The actor passivates on its own; the entity stays, so its start means a move.
    // Its messages reach the actor's own mailbox, which orders them; a run's end awaited
    // here must not hold back the messages behind it.
    { maxIdleTime: "365 days", concurrency: "unbounded" }
  )

/**
 * ThreadActors over the cluster, and this runner's share of the threads: every message
 * goes to the thread's entity, wherever the cluster placed it.
 */
export const layer: Layer.Layer<
  ThreadActors,
  never,
  Sharding.Sharding | EventStore | Layer.Layer.Context<typeof ThreadActors.local>
> = Layer.scopedContext(
  Effect.gen(function* () {
    const clientFor = yield* ThreadEntity.client
    const store = yield* EventStore
    const proxy = (threadId: ThreadId): ThreadActor => {
      const client = clientFor(threadId) as unknown as Record<
        string,
        (payload: unknown) => Effect.Effect<unknown, { readonly _tag: string }>
      >
      const send = (tag: string, payload: unknown) => Effect.mapError(client[tag]!(payload), undelivered(threadId, tag))
      const ask = ((tag: string, payload: unknown) => send(tag, payload)) as ThreadAsk
      return {
        threadId,
        ask,
        askSettled: ask,
        steer: (command: unknown) => send("Steer", command),
        respondApproval: (command: unknown) => send("Respond", command),
        childSpawned: () => void Effect.runFork(Effect.ignore(send("ChildSpawned", undefined))),
        // Where the actor lives, it settles and stops on its own.
        settled: Effect.void,
        done: Effect.never
      } as unknown as ThreadActor
    }
    const use: ThreadActorsShape["use"] = (threadId, f) => f(proxy(threadId))
    const hosted = yield* makeLocal(use)
    yield* Layer.buildWithScope(entityLayer(hosted), yield* Effect.scope)
    const getRun = (threadId: ThreadId, runId: RunId) => use(threadId, (actor) => actor.ask("GetRun", { runId }))
    /**
     * The run started with `runId` on the thread's runner, and its end. If the thread moved
     * on the way, the run is looked for where it went: if it started, its end is followed
     * from here through the database; else it is started there under the same id (once).
     */
    const startThere = (input: StartRunPayload, runId: RunId, again: boolean): Effect.Effect<RunView, SkeinError> =>
      Effect.catchAllCause(
        Effect.mapError(
          clientFor(input.threadId).StartAndWait({ ...input, runId }),
          undelivered(input.threadId, "StartAndWait")
        ),
        (cause) =>
          Cause.isInterruptedOnly(cause)
            ? getRun(input.threadId, runId).pipe(
                Effect.flatMap((run) =>
                  isTerminalRunStatus(run.status)
                    ? Effect.succeed(run)
                    : Effect.zipRight(store.awaitRunEnd(input.threadId, runId), getRun(input.threadId, runId))
                ),
                Effect.catchTag("RunNotFound", (notFound) =>
                  again ? startThere(input, runId, false) : Effect.fail(notFound)
                )
              )
            : Effect.failCause(cause)
      )
    // Through the thread's entity even when its runner is this one: the entity's start
    // here is what ends a run a lost runner left in flight, and its end what closes the
    // actor when the thread moves on. An actor made here without it would serve the log
    // as the lost runner left it.
    const startAndWait: ThreadActorsShape["startAndWait"] = (input) =>
      startThere(input, input.runId ?? makeId.run(), true)
    return ThreadActors.context({
      use,
      activeThreads: hosted.activeThreads,
      spawnSubagent: hosted.spawnSubagent,
      release: hosted.release,
      startAndWait,
      // Answered by the thread's runner: its own url.
      locate: (threadId) => Effect.mapError(clientFor(threadId).Locate(), undelivered(threadId, "Locate"))
    })
  })
)
