/**
 * A connection's requests under way, by request id: the request-response calls and
 * the `thread.events` follows, each a fiber of a `FiberMap` in the connection's scope.
 *
 * Guarantees:
 * - an id is taken from the moment its request starts until it is answered: a request
 *   under way, or one being interrupted whose interruption is not answered yet;
 * - a request is answered once: by its own end (`run`'s `answer`), or, when its client
 *   interrupts it, by the interrupter (`interrupt`), its own answer then dropped;
 * - closing the scope interrupts every request under way and answers none of them.
 */
import { Effect, Exit, Fiber, FiberMap } from "effect"
import type { Scope } from "effect"

export interface InFlight {
  /** Whether `requestId` is taken (see above). */
  readonly has: (requestId: string) => boolean
  /** Whether the request's own frames are still wanted: false once it is being interrupted. */
  readonly wanted: (requestId: string) => boolean
  /**
   * Runs `effect` as the request's fiber. When it ends, `answer` turns its exit into
   * the frame to send, if any, unless the request is being interrupted by then.
   */
  readonly run: <A, E>(
    requestId: string,
    effect: Effect.Effect<A, E>,
    answer: (exit: Exit.Exit<A, E>) => string | undefined
  ) => Effect.Effect<void>
  /**
   * Interrupts the request and then runs `answered`, before its id is free again.
   * Nothing when no such request is under way, or it is being interrupted already.
   */
  readonly interrupt: (requestId: string, answered: Effect.Effect<void>) => Effect.Effect<void>
}

/** `send` writes an answer synchronously, so it leaves before anything the request's end lets happen. */
export const makeInFlight = (send: (frame: string) => void): Effect.Effect<InFlight, never, Scope.Scope> =>
  Effect.gen(function* () {
    const fibers = yield* FiberMap.make<string>()
    const interrupting = new Set<string>()
    // Runs before the map interrupts its fibers: from then on nothing of theirs is sent.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const [requestId] of fibers) interrupting.add(requestId)
      })
    )

    const run: InFlight["run"] = (requestId, effect, answer) =>
      Effect.map(FiberMap.run(fibers, requestId, effect), (fiber) =>
        fiber.addObserver((exit) => {
          if (interrupting.has(requestId)) return
          const frame = answer(exit)
          if (frame !== undefined) send(frame)
        })
      )

    const interrupt: InFlight["interrupt"] = (requestId, answered) =>
      Effect.suspend(() => {
        const fiber = FiberMap.unsafeGet(fibers, requestId)
        if (fiber._tag === "None" || interrupting.has(requestId)) return Effect.void
        interrupting.add(requestId)
        return Fiber.interrupt(fiber.value).pipe(
          Effect.zipRight(answered),
          Effect.ensuring(Effect.sync(() => interrupting.delete(requestId)))
        )
      })

    return {
      has: (requestId) => FiberMap.unsafeHas(fibers, requestId) || interrupting.has(requestId),
      wanted: (requestId) => !interrupting.has(requestId),
      run,
      interrupt
    }
  })
