/**
 * Where thread actors live. This local implementation keeps at most one actor per
 * thread in an RcRegistry (whose get-or-create is atomic: a burst of requests for a
 * thread that is not active activates it once). An actor is created on first use
 * from storage, kept while anyone (a caller, a run in flight) holds it, and
 * passivated after an idle period. An actor that stops for good (its restart after a
 * defect failed) is dropped, so the next use activates a fresh one from storage.
 * A cluster-backed implementation can replace this service without touching the actor.
 */
import type { SkeinError, ThreadId } from "@skein/domain"
import { Context, Duration, Effect, Layer } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import type { EventStore } from "../store/EventStore.js"
import type { ProviderSessions } from "./ProviderSessions.js"
import * as RcRegistry from "./RcRegistry.js"
import type { ThreadActor } from "./ThreadActor.js"
import { makeThreadActor } from "./ThreadActor.js"

export interface ThreadActorsShape {
  /** Use the thread's actor, activating it from storage if needed. */
  readonly use: <A, E>(
    threadId: ThreadId,
    f: (actor: ThreadActor) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | SkeinError>
  /** Threads whose actor is active now. */
  readonly activeThreads: Effect.Effect<ReadonlyArray<ThreadId>>
}

export class ThreadActors extends Context.Tag("@skein/runtime/ThreadActors")<ThreadActors, ThreadActorsShape>() {
  static local: Layer.Layer<ThreadActors, never, EventStore | ProviderSessions | RuntimeConfig> = Layer.scoped(
    ThreadActors,
    Effect.gen(function* () {
      const config = yield* RuntimeConfig
      // eslint-disable-next-line prefer-const
      let actors: RcRegistry.RcRegistry<ThreadId, ThreadActor, SkeinError>
      const retain = (threadId: ThreadId) => Effect.orDie(actors.get(threadId)).pipe(Effect.asVoid)
      const activate = (threadId: ThreadId) =>
        Effect.gen(function* () {
          const actor = yield* makeThreadActor(threadId, retain(threadId))
          // Stopped for good: drop it, so the next use starts again from storage.
          const drop = Effect.suspend(() =>
            actors.peek(threadId) === actor ? actors.invalidate(threadId) : Effect.void
          )
          yield* actor.done.pipe(Effect.zipRight(Effect.forkDaemon(drop)), Effect.forkScoped)
          return actor
        })
      actors = yield* RcRegistry.make({ lookup: activate, idleTimeToLive: Duration.millis(config.passivateAfterMs) })
      const use: ThreadActorsShape["use"] = (threadId, f) => Effect.scoped(Effect.flatMap(actors.get(threadId), f))
      return { use, activeThreads: actors.keys } satisfies ThreadActorsShape
    })
  )
}
