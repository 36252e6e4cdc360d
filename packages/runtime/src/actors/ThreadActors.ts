/**
 * Where thread actors live. This local implementation keeps one actor per thread in
 * an RcMap: an actor is created on first use from storage, kept while anyone (a
 * caller, a run in flight) holds it, and passivated after an idle period. A
 * cluster-backed implementation can replace this service without touching the actor.
 */
import type { SkeinError, ThreadId } from "@skein/domain"
import { Context, Duration, Effect, Layer, RcMap } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import type { EventStore } from "../store/EventStore.js"
import type { ProviderSessions } from "./ProviderSessions.js"
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
      const context = yield* Effect.context<EventStore | ProviderSessions | RuntimeConfig>()
      // eslint-disable-next-line prefer-const
      let actors: RcMap.RcMap<ThreadId, ThreadActor, SkeinError>
      const retain = (threadId: ThreadId) => Effect.orDie(RcMap.get(actors, threadId)).pipe(Effect.asVoid)
      actors = yield* RcMap.make({
        idleTimeToLive: Duration.millis(config.passivateAfterMs),
        lookup: (threadId: ThreadId) => makeThreadActor(threadId, retain(threadId)).pipe(Effect.provide(context))
      })
      const use: ThreadActorsShape["use"] = (threadId, f) =>
        Effect.scoped(
          RcMap.get(actors, threadId).pipe(
            // A failed activation (unknown thread) must not be cached.
            Effect.tapError(() => RcMap.invalidate(actors, threadId)),
            Effect.flatMap(f)
          )
        )
      return { use, activeThreads: RcMap.keys(actors) } satisfies ThreadActorsShape
    })
  )
}
