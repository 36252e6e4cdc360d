/**
 * A supervised mailbox: one fiber takes messages one at a time and answers each
 * through its own reply. Messages to one mailbox are serialised; different mailboxes
 * run in parallel.
 *
 * Supervision: a defect while handling a message fails that message's reply with the
 * defect and then runs `onDefect` (a thread actor reloads its persisted state there)
 * before the next message is taken, so one bad message never wedges the actor.
 * Stopping drains the queue and fails every pending reply with `stopped()`, since
 * `Queue.shutdown` would drop queued messages silently.
 */
import { Cause, Deferred, Effect, Exit, Fiber, Queue } from "effect"
import type { Scope } from "effect"

export interface Mailbox<M, A, E> {
  /** Send a message and wait for its reply. */
  readonly ask: (message: M) => Effect.Effect<A, E>
  /** Messages waiting, not counting the one being handled. */
  readonly pending: Effect.Effect<number>
  /** Stop taking messages; pending ones fail with the stopped error. */
  readonly stop: Effect.Effect<void>
}

interface Envelope<M, A, E> {
  readonly message: M
  readonly reply: Deferred.Deferred<A, E>
}

export const make = <M, A, E, R>(options: {
  readonly handle: (message: M) => Effect.Effect<A, E, R>
  readonly stopped: () => E
  readonly onDefect?: (cause: Cause.Cause<never>) => Effect.Effect<void, never, R>
}): Effect.Effect<Mailbox<M, A, E>, never, Scope.Scope | R> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Envelope<M, A, E>>()
    let open = true

    const serve = (envelope: Envelope<M, A, E>) =>
      options.handle(envelope.message).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Exit.isFailure(exit) && Cause.isDie(exit.cause)
            ? Deferred.done(envelope.reply, exit).pipe(
                Effect.zipRight(options.onDefect ? options.onDefect(Cause.die(Cause.squash(exit.cause))) : Effect.void)
              )
            : Deferred.done(envelope.reply, exit)
        ),
        // Interruption of the handler (not of the loop) still answers the caller.
        Effect.onInterrupt(() => Deferred.fail(envelope.reply, options.stopped()))
      )

    const loop = Queue.take(queue).pipe(Effect.flatMap(serve), Effect.forever)
    const fiber = yield* Effect.forkScoped(loop)

    const drain = Effect.gen(function* () {
      open = false
      const waiting = yield* Queue.takeAll(queue)
      for (const envelope of waiting) yield* Deferred.fail(envelope.reply, options.stopped())
    })

    const stop = Effect.gen(function* () {
      if (!open) return
      yield* drain
      yield* Fiber.interrupt(fiber)
      yield* Queue.shutdown(queue)
    })
    yield* Effect.addFinalizer(() => stop)

    const ask = (message: M): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        if (!open) return Effect.fail(options.stopped())
        return Deferred.make<A, E>().pipe(
          Effect.tap((reply) => Queue.offer(queue, { message, reply })),
          Effect.flatMap(Deferred.await)
        )
      })

    return { ask, pending: Queue.size(queue), stop } satisfies Mailbox<M, A, E>
  })
