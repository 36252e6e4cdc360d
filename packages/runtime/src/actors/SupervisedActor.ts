/**
 * A supervised actor over a typed protocol: a queue of envelopes, each carrying its
 * caller's resumption (`Effect.async`) as its reply, served in arrival order by one
 * worker fiber at a time. The message that finds no worker starts one (in the actor's
 * `FiberSet`, with the runtime the actor was made in); the worker ends when no message
 * waits, so an idle actor holds no fiber (docs/decisions/0009-idle-actors.md). (A
 * resumption, not a `Deferred`: making a `Deferred` costs some 12 µs on Node 20, most
 * of a command's round trip; docs/decisions/0008-actor-replies.md.) Messages are
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
import { Cause, Deferred, Effect, Exit, FiberId, FiberSet, MutableQueue, Scope } from "effect"
import type { Option } from "effect"
import type { Tracer } from "effect"
import * as Telemetry from "../resources/Telemetry.js"

type Message<R extends Rpc.Any, Tag extends R["_tag"]> = Rpc.ExtractTag<R, Tag>

/**
 * One handler per message of the protocol, typed by it, given the behaviour's context.
 * Handlers that take their actor's state as `context` can be made once for all actors.
 */
export type Handlers<R extends Rpc.Any, C = void> = {
  readonly [Tag in R["_tag"]]: (
    payload: Rpc.Payload<Message<R, Tag>>,
    context: C
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
export interface Behaviour<R extends Rpc.Any, C = void> {
  readonly handlers: Handlers<R, C>
  /** What each handler is given with its message (this actor's state and services). */
  readonly context?: C
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

export const make = <R extends Rpc.Any, E, C = void>(options: {
  /** For logs: which actor this is. */
  readonly name: string
  /** Made once, given the actor itself (whose `ask` its handlers may hand on). */
  readonly behaviour: (self: SupervisedActor<R, E>) => Behaviour<R, C>
  readonly stopped: () => E
  /** The error a caller gets when its message's handler died. */
  readonly failed: (tag: R["_tag"], cause: Cause.Cause<unknown>) => E
  /** Runs once when the actor has stopped for good (its holder drops it there). */
  readonly onStopped?: Effect.Effect<void>
}): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const waiting = MutableQueue.unbounded<Envelope>()
    /** False once the actor takes no more messages. */
    let open = true
    /** Whether a worker is serving (or about to): set by the message that starts it, cleared as it ends. */
    let working = false
    /** Holds the worker; closing the actor's scope interrupts it. */
    const workers = yield* FiberSet.make<void>()
    const startWorker = yield* FiberSet.runtime(workers)()
    /** Whether the actor has stopped for good. */
    let over = false
    /** What `done` waits on, made when first awaited (most actors never are). */
    let finished: Deferred.Deferred<void> | undefined

    const finish = Effect.suspend(() => {
      if (over) return Effect.void
      over = true
      if (finished !== undefined) Deferred.unsafeDone(finished, Exit.void)
      return options.onStopped ?? Effect.void
    })
    /** No message is taken any more; those waiting hear that the actor stopped. */
    const drain = Effect.sync(() => {
      if (!open) return
      open = false
      for (const envelope of MutableQueue.pollUpTo(waiting, Number.POSITIVE_INFINITY))
        envelope.reply(Exit.fail(options.stopped()))
    })

    /** Queues the message, starting a worker if none is serving; false once the actor stopped. */
    const post = (envelope: Envelope): boolean => {
      if (!open) return false
      MutableQueue.offer(waiting, envelope)
      if (!working) {
        working = true
        // On a later turn of the scheduler, not on the poster's stack. (`work` is defined
        // below; a message is posted only once the actor is made.)
        startWorker(work, { immediate: false })
      }
      return true
    }

    const ask = (<Tag extends R["_tag"]>(tag: Tag, payload: Rpc.Payload<Message<R, Tag>>) =>
      Effect.flatMap(Telemetry.spanToCarry, (span) =>
        Effect.async<unknown, unknown>((resume) => {
          let answered = false
          const reply = (exit: Exit.Exit<unknown, unknown>) => {
            if (answered) return
            answered = true
            resume(exit)
          }
          if (!post({ tag, payload, reply, span })) reply(Exit.fail(options.stopped()))
          // A caller interrupted while it waits leaves its message to be served; nobody hears the reply.
          return Effect.sync(() => {
            answered = true
          })
        })
      )) as Ask<R, E>

    const self: SupervisedActor<R, E> = {
      ask,
      pending: Effect.sync(() => MutableQueue.length(waiting)),
      stop: Effect.suspend(() => stop),
      done: Effect.suspend(() =>
        over ? Effect.void : Deferred.await((finished ??= Deferred.unsafeMake(FiberId.none)))
      )
    }
    const behaviour = options.behaviour(self)
    const handlers = behaviour.handlers as unknown as Record<
      string,
      (payload: unknown, context: C) => Effect.Effect<unknown, unknown>
    >
    const context = behaviour.context as C

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
      Effect.suspend(() => handlers[envelope.tag]!(envelope.payload, context)).pipe(
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

    /** The next message, or undefined: the worker ends (in the same step, so that a message posted next starts another). */
    const next = Effect.sync(() => {
      const envelope = MutableQueue.poll(waiting, undefined)
      if (envelope === undefined) working = false
      return envelope
    })
    const work: Effect.Effect<void> = Effect.interruptible(
      Effect.gen(function* () {
        while (true) {
          const envelope = yield* next
          if (envelope === undefined) return
          const goOn = yield* serve(envelope)
          yield* afterEach
          if (!goOn) return
        }
      })
    )

    const stop: Effect.Effect<void> = Effect.gen(function* () {
      yield* drain
      yield* FiberSet.clear(workers)
      yield* finish
    })
    // Added after the worker's set, so run before it: pending callers hear first.
    yield* Scope.addFinalizer(scope, stop)
    return self
  })
