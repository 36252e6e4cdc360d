/**
 * A supervised actor over a typed protocol: a queue of envelopes, each carrying its
 * caller's resumption (`Effect.async`) as its reply, served in arrival order by one
 * worker fiber at a time. The message that finds no worker starts one (with the runtime
 * the actor was made in, on the sender's stack until the worker first waits); the
 * worker ends when no message waits, so an idle actor holds
 * no fiber, and little else (docs/decisions/0009-idle-actors.md). (A
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
import { Cause, Deferred, Effect, Exit, Fiber, FiberId, MutableQueue, Runtime, Scope } from "effect"
import type { Option, Tracer } from "effect"
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
  readonly restart: (tag: R["_tag"], cause: Cause.Cause<unknown>, context: C) => Effect.Effect<void, unknown>
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

/** What `make` is told. */
export interface Options<R extends Rpc.Any, E, C> {
  /** For logs: which actor this is. */
  readonly name: string
  /** Made once, given the actor itself (whose `ask` its handlers may hand on). */
  readonly behaviour: (self: SupervisedActor<R, E>) => Behaviour<R, C>
  readonly stopped: () => E
  /** The error a caller gets when its message's handler died. */
  readonly failed: (tag: R["_tag"], cause: Cause.Cause<unknown>) => E
  /** Runs once when the actor has stopped for good (its holder drops it there). */
  readonly onStopped?: Effect.Effect<void>
}

type AnyHandler<C> = (payload: unknown, context: C) => Effect.Effect<unknown, unknown>

/**
 * The actor's state, with its steps as methods on the prototype: thousands of idle
 * actors each keep a few fields, not a set of closures.
 */
class Actor<R extends Rpc.Any, E, C> implements SupervisedActor<R, E> {
  private readonly waiting = MutableQueue.unbounded<Envelope>()
  /** False once the actor takes no more messages. */
  private open = true
  /** Whether a worker is serving: set by the message that starts it, cleared as it ends. */
  private serving = false
  /** The worker while it serves, once its start has returned (see `post`). */
  private worker: Fiber.RuntimeFiber<void> | undefined = undefined
  /** Whether the actor has stopped for good. */
  private over = false
  /** What `done` waits on, made when first awaited (most actors never are). */
  private finished: Deferred.Deferred<void> | undefined = undefined
  private handlers!: Record<string, AnyHandler<C>>
  private context!: C
  private restart!: Behaviour<R, C>["restart"]
  afterEach: Effect.Effect<void> | undefined = undefined

  constructor(
    private readonly options: Options<R, E, C>,
    private readonly fork: (effect: Effect.Effect<void>) => Fiber.RuntimeFiber<void>
  ) {}

  /** Made once the actor exists: its behaviour is given the actor. */
  behave(behaviour: Behaviour<R, C>): void {
    this.handlers = behaviour.handlers as unknown as Record<string, AnyHandler<C>>
    this.context = behaviour.context as C
    this.restart = behaviour.restart
    const after = behaviour.afterEach
    this.afterEach =
      after === undefined
        ? undefined
        : Effect.catchAllCause(after, (cause) =>
            Effect.logError(`${this.options.name}: a defect after a message`, cause)
          )
  }

  readonly ask = (<Tag extends R["_tag"]>(tag: Tag, payload: Rpc.Payload<Message<R, Tag>>) =>
    Effect.flatMap(Telemetry.spanToCarry, (span) =>
      Effect.async<unknown, unknown>((resume) => {
        let answered = false
        const reply = (exit: Exit.Exit<unknown, unknown>) => {
          if (answered) return
          answered = true
          resume(exit)
        }
        if (!this.post({ tag, payload, reply, span })) reply(Exit.fail(this.options.stopped()))
        // A caller interrupted while it waits leaves its message to be served; nobody hears the reply.
        return Effect.sync(() => {
          answered = true
        })
      })
    )) as Ask<R, E>

  get pending(): Effect.Effect<number> {
    return Effect.sync(() => MutableQueue.length(this.waiting))
  }

  get done(): Effect.Effect<void> {
    return Effect.suspend(() =>
      this.over ? Effect.void : Deferred.await((this.finished ??= Deferred.unsafeMake(FiberId.none)))
    )
  }

  get stop(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.drain()
      const worker = this.worker
      return Effect.zipRight(worker === undefined ? Effect.void : Fiber.interrupt(worker), this.finish())
    })
  }

  /** Queues the message, starting a worker if none is serving; false once the actor stopped. */
  private post(envelope: Envelope): boolean {
    if (!this.open) return false
    MutableQueue.offer(this.waiting, envelope)
    if (!this.serving) {
      this.serving = true
      // The worker runs on this stack until it first waits: it may have ended already.
      const worker = this.fork(this.work())
      if (this.serving) this.worker = worker
    }
    return true
  }

  /** No message is taken any more; those waiting hear that the actor stopped. */
  private drain(): void {
    if (!this.open) return
    this.open = false
    for (const envelope of MutableQueue.pollUpTo(this.waiting, Number.POSITIVE_INFINITY)) {
      envelope.reply(Exit.fail(this.options.stopped()))
    }
  }

  private finish(): Effect.Effect<void> {
    if (this.over) return Effect.void
    this.over = true
    if (this.finished !== undefined) Deferred.unsafeDone(this.finished, Exit.void)
    return this.options.onStopped ?? Effect.void
  }

  /** The next message, or undefined: the worker ends (in the same step, so that a message posted next starts another). */
  next(): Envelope | undefined {
    const envelope = MutableQueue.poll(this.waiting, undefined)
    if (envelope === undefined) {
      this.serving = false
      this.worker = undefined
    }
    return envelope
  }

  /** Serves messages while any waits. */
  private work(): Effect.Effect<void> {
    return Effect.interruptible(serveWaiting(this))
  }

  /** Handles one message and answers its caller; false when the actor must stop. */
  serve(envelope: Envelope): Effect.Effect<boolean> {
    return Effect.suspend(() => this.handlers[envelope.tag]!(envelope.payload, this.context)).pipe(
      Telemetry.withCarriedSpan(`actor ${envelope.tag}`, envelope.span),
      Effect.exit,
      Effect.flatMap((exit) => {
        if (Exit.isFailure(exit) && Cause.isDie(exit.cause)) return this.supervise(envelope, exit.cause)
        envelope.reply(
          Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause) ? Exit.fail(this.options.stopped()) : exit
        )
        return Effect.succeed(true)
      }),
      // The worker itself interrupted mid-message (the actor stops): its caller still hears back.
      Effect.onInterrupt(() => Effect.sync(() => envelope.reply(Exit.fail(this.options.stopped()))))
    )
  }

  /** After a defect: the caller hears of it, and the actor restarts (true), or stops. */
  private supervise(envelope: Envelope, cause: Cause.Cause<unknown>): Effect.Effect<boolean> {
    const self = this
    const { failed, name } = this.options
    return Effect.gen(function* () {
      envelope.reply(Exit.fail(failed(envelope.tag, cause)))
      yield* Effect.logError(`${name}: ${envelope.tag} died; restarting from storage`, cause)
      const restarted = yield* Effect.exit(self.restart(envelope.tag, cause, self.context))
      if (Exit.isSuccess(restarted)) return true
      yield* Effect.logError(`${name}: restart failed; the actor stops`, restarted.cause)
      self.drain()
      yield* self.finish()
      return false
    })
  }
}

/** What a worker's loop uses of its actor. */
interface Serving {
  next(): Envelope | undefined
  serve(envelope: Envelope): Effect.Effect<boolean>
  readonly afterEach: Effect.Effect<void> | undefined
}

/** A worker's loop, made once for every actor (docs/decisions/0011-generators-made-once.md). */
const serveWaiting = Effect.fnUntraced(function* (actor: Serving) {
  while (true) {
    const envelope = actor.next()
    if (envelope === undefined) return
    const goOn = yield* actor.serve(envelope)
    if (actor.afterEach !== undefined) yield* actor.afterEach
    if (!goOn) return
  }
})

export const make = <R extends Rpc.Any, E, C = void>(
  options: Options<R, E, C>
): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const actor = new Actor<R, E, C>(options, (work) => runFork(work, { immediate: true }))
    actor.behave(options.behaviour(actor))
    // Closing the actor's scope stops it: pending callers hear, then the worker is interrupted.
    yield* Scope.addFinalizer(scope, actor.stop)
    return actor
  })
