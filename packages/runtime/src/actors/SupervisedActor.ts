/**
 * A supervised actor over a typed protocol: a `Queue` of envelopes, each carrying its
 * caller's resumption (`Effect.async`) as its reply, served in arrival order by one
 * worker fiber that lives in the actor's scope. (A `Queue`, not a `Mailbox`: a `Mailbox`
 * wakes its taker through one more turn of the scheduler, and every command to a thread
 * pays it. A resumption, not a `Deferred`: making a `Deferred` costs some 12 µs on Node
 * 20, most of a command's round trip; docs/decisions/0008-actor-replies.md.) Messages are
 * `@effect/rpc` definitions, so `ask(tag, payload)` is typed by the message: its
 * payload, its success, its error. Messages to one actor are
 * serialised (one handler at a time, in arrival order); different actors run in
 * parallel.
 *
 * Supervision, as a gen_server's supervisor would do it but in place:
 * - a handler that fails answers its caller with its typed error;
 * - a handler that dies (a defect) answers its caller with `failed(tag, cause)`, is
 *   logged with the whole cause, and `restart` runs before the next message is taken
 *   (a thread actor reloads its state from storage there, since memory may have moved
 *   ahead of what was written);
 * - if `restart` itself fails, the actor stops: pending and later callers get
 *   `stopped()`, `done` completes and `onStopped` runs, so that whoever holds the
 *   actor can drop it.
 * Stopping (its scope closing, or `stop`) fails every pending reply with `stopped()`
 * and interrupts the worker mid-message (its caller hears `stopped()`). A caller
 * interrupted while it waits leaves its message to be served; nobody hears the reply.
 */
import type { Rpc } from "@effect/rpc"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue, Scope } from "effect"
import type { Tracer } from "effect"
import * as Telemetry from "../resources/Telemetry.js"

type Message<R extends Rpc.Any, Tag extends R["_tag"]> = Rpc.ExtractTag<R, Tag>

/** One handler per message of the protocol, typed by it. */
export type Handlers<R extends Rpc.Any> = {
  readonly [Tag in R["_tag"]]: (
    payload: Rpc.Payload<Message<R, Tag>>
  ) => Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>>>
}

/** Sends a message and waits for its typed reply. */
export type Ask<R extends Rpc.Any, E> = <Tag extends R["_tag"]>(
  tag: Tag,
  payload: Rpc.Payload<Message<R, Tag>>
) => Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>

export interface SupervisedActor<R extends Rpc.Any, E> {
  readonly ask: Ask<R, E>
  /** Messages waiting, not counting the one being handled. */
  readonly pending: Effect.Effect<number>
  /** Stop taking messages; pending ones fail with the stopped error. */
  readonly stop: Effect.Effect<void>
  /** Completes once the actor has stopped (by `stop`, its scope, or a failed restart). */
  readonly done: Effect.Effect<void>
}

/** What the actor does with its messages. */
export interface Behaviour<R extends Rpc.Any> {
  readonly handlers: Handlers<R>
  /** Runs after a defect, before the next message; failing stops the actor. */
  readonly restart: (tag: R["_tag"], cause: Cause.Cause<unknown>) => Effect.Effect<void, unknown>
  /** Runs after each message, whatever became of it, before the next is taken. */
  readonly afterEach?: Effect.Effect<void>
}

interface Envelope {
  readonly tag: string
  readonly payload: unknown
  /** Answers the caller, once (later answers, and answers to a caller gone, are dropped). */
  readonly reply: (exit: Exit.Exit<unknown, unknown>) => void
  /** The sender's span while telemetry is on (its handler's span is its child); undefined while off. */
  readonly span: Option.Option<Tracer.AnySpan> | undefined
}

export const make = <R extends Rpc.Any, E>(options: {
  /** For logs: which actor this is. */
  readonly name: string
  /** Made once, given the actor itself (whose `ask` its handlers may hand on). */
  readonly behaviour: (self: SupervisedActor<R, E>) => Behaviour<R>
  readonly stopped: () => E
  /** The error a caller gets when its message's handler died. */
  readonly failed: (tag: R["_tag"], cause: Cause.Cause<unknown>) => E
  /** Called once when the actor has stopped for good (its holder drops it). */
  readonly onStopped?: () => void
}): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const mailbox = yield* Queue.unbounded<Envelope>()
    const finished = yield* Deferred.make<void>()

    const finish = Effect.flatMap(Deferred.succeed(finished, undefined), (first) =>
      first && options.onStopped !== undefined ? Effect.sync(options.onStopped) : Effect.void
    )
    /** No message is taken any more; those waiting hear that the actor stopped. */
    const drain = Effect.flatMap(Queue.isShutdown(mailbox), (down) =>
      down
        ? Effect.void
        : Effect.flatMap(Queue.takeAll(mailbox), (left) =>
            // Taken and shut down in one step: no message comes in between and waits for ever.
            Effect.zipRight(
              Queue.shutdown(mailbox),
              Effect.sync(() => {
                for (const envelope of left) envelope.reply(Exit.fail(options.stopped()))
              })
            )
          )
    )

    const ask = (<Tag extends R["_tag"]>(tag: Tag, payload: Rpc.Payload<Message<R, Tag>>) =>
      Effect.flatMap(Telemetry.spanToCarry, (span) =>
        Effect.async<unknown, unknown>((resume) => {
          let waiting = true
          const reply = (exit: Exit.Exit<unknown, unknown>) => {
            if (!waiting) return
            waiting = false
            resume(exit)
          }
          if (!mailbox.unsafeOffer({ tag, payload, reply, span })) reply(Exit.fail(options.stopped()))
          // A caller interrupted while it waits leaves its message to be served; nobody hears the reply.
          return Effect.sync(() => {
            waiting = false
          })
        })
      )) as Ask<R, E>

    const self: SupervisedActor<R, E> = {
      ask,
      // A queue's size counts a waiting taker (the idle worker) as -1.
      pending: Effect.sync(() =>
        Math.max(
          0,
          Option.getOrElse(mailbox.unsafeSize(), () => 0)
        )
      ),
      stop: Effect.suspend(() => stop),
      done: Deferred.await(finished)
    }
    const behaviour = options.behaviour(self)
    const handlers = behaviour.handlers as unknown as Record<
      string,
      (payload: unknown) => Effect.Effect<unknown, unknown>
    >

    /** After a defect: the caller hears of it, and the actor restarts (true), or stops. */
    const supervise = (envelope: Envelope, cause: Cause.Cause<unknown>) =>
      Effect.gen(function* () {
        envelope.reply(Exit.fail(options.failed(envelope.tag, cause)))
        yield* Effect.logError(`${options.name}: ${envelope.tag} died; restarting from storage`, cause)
        const restarted = yield* Effect.exit(behaviour.restart(envelope.tag, cause))
        if (Exit.isSuccess(restarted)) return true
        yield* Effect.logError(`${options.name}: restart failed; the actor stops`, restarted.cause)
        yield* drain
        yield* finish
        return false
      })

    /** Handles one message and answers its caller; false when the actor must stop. */
    const serve = (envelope: Envelope): Effect.Effect<boolean> =>
      Effect.suspend(() => handlers[envelope.tag]!(envelope.payload)).pipe(
        Telemetry.withCarriedSpan(`actor ${envelope.tag}`, envelope.span),
        Effect.exit,
        Effect.flatMap((exit) => {
          if (Exit.isFailure(exit) && Cause.isDie(exit.cause)) return supervise(envelope, exit.cause)
          envelope.reply(
            Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? Exit.fail(options.stopped()) : exit
          )
          return Effect.succeed(true)
        }),
        // The worker itself interrupted mid-message (the actor stops): its caller still hears back.
        Effect.onInterrupt(() => Effect.sync(() => envelope.reply(Exit.fail(options.stopped()))))
      )

    const afterEach =
      behaviour.afterEach === undefined
        ? Effect.void
        : Effect.catchAllCause(behaviour.afterEach, (cause) =>
            Effect.logError(`${options.name}: a defect after a message`, cause)
          )

    // Taking from the queue once it is shut down interrupts the worker: the actor stopped.
    const worker: Effect.Effect<void> = Effect.gen(function* () {
      while (true) {
        const goOn = yield* serve(yield* Queue.take(mailbox))
        yield* afterEach
        if (!goOn) return
      }
    })
    const fiber = yield* Effect.forkIn(Effect.interruptible(worker), scope)

    const stop: Effect.Effect<void> = Effect.gen(function* () {
      yield* drain
      yield* Fiber.interrupt(fiber)
      yield* finish
    })
    // Added after the worker's fork, so run before it: pending callers hear first.
    yield* Scope.addFinalizer(scope, stop)
    return self
  })
