/**
 * A supervised actor over a typed protocol: one fiber takes messages one at a time
 * from an unbounded queue and answers each through its own reply. Messages are
 * `@effect/rpc` definitions, so `ask(tag, payload)` is typed by the message: its
 * payload, its success, its error. Messages to one actor are serialised; different
 * actors run in parallel.
 *
 * Supervision, as a gen_server's supervisor would do it but in place:
 * - a handler that fails answers its caller with its typed error;
 * - a handler that dies (a defect) answers its caller with `failed(tag, cause)`, is
 *   logged with the whole cause, and `restart` runs before the next message is taken
 *   (a thread actor reloads its state from storage there, since memory may have moved
 *   ahead of what was written);
 * - if `restart` itself fails, the actor stops: pending and later callers get
 *   `stopped()`, and `done` completes so that whoever holds the actor can drop it.
 * Stopping drains the queue and fails every pending reply with `stopped()`
 * (`Queue.shutdown` alone would drop them silently).
 */
import type { Rpc } from "@effect/rpc"
import { Cause, Deferred, Effect, Exit, Fiber, Queue } from "effect"
import type { Scope } from "effect"

type Message<R extends Rpc.Any, Tag extends R["_tag"]> = Rpc.ExtractTag<R, Tag>

/** One handler per message of the protocol, typed by it. */
export type Handlers<R extends Rpc.Any> = {
  readonly [Tag in R["_tag"]]: (
    payload: Rpc.Payload<Message<R, Tag>>
  ) => Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>>>
}

export interface SupervisedActor<R extends Rpc.Any, E> {
  /** Send a message and wait for its typed reply. */
  readonly ask: <Tag extends R["_tag"]>(
    tag: Tag,
    payload: Rpc.Payload<Message<R, Tag>>
  ) => Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>
  /** Messages waiting, not counting the one being handled. */
  readonly pending: Effect.Effect<number>
  /** Stop taking messages; pending ones fail with the stopped error. */
  readonly stop: Effect.Effect<void>
  /** Completes once the actor has stopped (by `stop`, its scope, or a failed restart). */
  readonly done: Effect.Effect<void>
}

interface Envelope {
  readonly tag: string
  readonly payload: unknown
  readonly reply: Deferred.Deferred<unknown, unknown>
}

export const make = <R extends Rpc.Any, E>(options: {
  /** For logs: which actor this is. */
  readonly name: string
  readonly handlers: Handlers<R>
  readonly stopped: () => E
  /** The error a caller gets when its message's handler died. */
  readonly failed: (tag: R["_tag"], cause: Cause.Cause<unknown>) => E
  /** Runs after a defect, before the next message; failing stops the actor. */
  readonly restart: (tag: R["_tag"], cause: Cause.Cause<unknown>) => Effect.Effect<void, unknown>
  /** Runs after each message, whatever became of it (before the next is taken). */
  readonly afterEach?: () => void
}): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Envelope>()
    const finished = yield* Deferred.make<void>()
    const handlers = options.handlers as unknown as Record<
      string,
      (payload: unknown) => Effect.Effect<unknown, unknown>
    >
    let open = true

    const drain = Effect.gen(function* () {
      open = false
      const waiting = yield* Queue.takeAll(queue)
      for (const envelope of waiting) yield* Deferred.fail(envelope.reply, options.stopped())
    })

    const supervise = (envelope: Envelope, cause: Cause.Cause<unknown>) =>
      Effect.gen(function* () {
        yield* Deferred.fail(envelope.reply, options.failed(envelope.tag, cause))
        yield* Effect.logError(`${options.name}: ${envelope.tag} died; restarting from storage`, cause)
        const restarted = yield* Effect.exit(options.restart(envelope.tag, cause))
        if (Exit.isFailure(restarted)) {
          yield* Effect.logError(`${options.name}: restart failed; the actor stops`, restarted.cause)
          yield* drain
          yield* Deferred.succeed(finished, undefined)
          return yield* Effect.interrupt
        }
      })

    const afterEach = options.afterEach
    const after = <A, X>(effect: Effect.Effect<A, X>): Effect.Effect<A, X> =>
      afterEach === undefined ? effect : Effect.ensuring(effect, Effect.sync(afterEach))

    const serve = (envelope: Envelope) =>
      Effect.suspend(() => handlers[envelope.tag]!(envelope.payload)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => {
          if (Exit.isSuccess(exit)) return Deferred.succeed(envelope.reply, exit.value)
          if (Cause.isDie(exit.cause)) return supervise(envelope, exit.cause)
          if (Cause.isInterruptedOnly(exit.cause)) return Deferred.fail(envelope.reply, options.stopped())
          return Deferred.failCause(envelope.reply, exit.cause)
        }),
        // The loop itself interrupted mid-message: its caller still hears back.
        Effect.onInterrupt(() => Deferred.fail(envelope.reply, options.stopped())),
        after
      )

    const fiber = yield* Queue.take(queue).pipe(Effect.flatMap(serve), Effect.forever, Effect.forkScoped)

    const stop = Effect.gen(function* () {
      if (!open) return
      yield* drain
      yield* Fiber.interrupt(fiber)
      yield* Queue.shutdown(queue)
      yield* Deferred.succeed(finished, undefined)
    })
    yield* Effect.addFinalizer(() => stop)

    const ask = <Tag extends R["_tag"]>(
      tag: Tag,
      payload: Rpc.Payload<Message<R, Tag>>
    ): Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E> =>
      Effect.suspend(() => {
        if (!open) return Effect.fail(options.stopped())
        const reply = Deferred.unsafeMake<unknown, unknown>(fiber.id())
        return Queue.offer(queue, { tag, payload, reply }).pipe(Effect.zipRight(Deferred.await(reply)))
      }) as Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>

    return { ask, pending: Queue.size(queue), stop, done: Deferred.await(finished) } satisfies SupervisedActor<R, E>
  })
