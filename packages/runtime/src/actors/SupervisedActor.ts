/**
 * A supervised actor over a typed protocol: messages wait in a mailbox and are served
 * one at a time, each answered through its own reply. A worker fiber exists only while
 * there are messages (an idle actor costs its state, not a fiber); a message sent with
 * `askInPlace` to an idle actor is handled on its sender's fiber instead, with no
 * worker at all. Messages are `@effect/rpc` definitions, so `ask(tag, payload)` is
 * typed by the message: its payload, its success, its error. Messages to one actor are
 * serialised (one handler at a time, in arrival order, wherever it runs); different
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
 * Stopping drains the mailbox and fails every pending reply with `stopped()`; it
 * interrupts a worker mid-message (its caller hears `stopped()`) and waits for a
 * message being handled in place to finish.
 */
import type { Rpc } from "@effect/rpc"
import { Cause, Effect, Exit, Fiber, FiberId, FiberRef, FiberRefs, Runtime, Scope } from "effect"
import * as OneShot from "./OneShot.js"

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
  /**
   * `ask`, with the message handled on the calling fiber when the actor is idle (no
   * message waiting or being handled), so that no worker is woken for it and nobody
   * is woken with its reply; otherwise it waits its turn in the mailbox as `ask`'s
   * does. The handler runs uninterruptibly, as it would on a worker the caller cannot
   * interrupt: whatever it forks starts uninterruptible unless it says otherwise, and
   * a deadline inside it could not cut it short. For messages whose handlers neither
   * wait on deadlines nor fork work of their own without making it interruptible.
   */
  readonly askInPlace: <Tag extends R["_tag"]>(
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
  readonly reply: OneShot.OneShot<unknown, unknown>
}

/**
 * The FiberRefs for a fiber that outlives the one starting it and is never joined (an
 * actor's worker, a thread's run driver): the starter's current values, each as if the
 * new fiber had set it. A fork keeps, per FiberRef, the stack of the fibers that set it
 * (for joining back); inherited whole, the stacks pass on one entry longer to whatever
 * the new fiber starts. A thread's run driver, started in one message's handler,
 * reports through the next: the stacks grew by a generation a run, and every fork and
 * context change copies them (runs got slower with each one, 2x by run 10,000 of a
 * thread).
 */
export const currentValuesOnly = (refs: FiberRefs.FiberRefs, fiberId: FiberId.Runtime): FiberRefs.FiberRefs => {
  const locals = new Map<FiberRef.FiberRef<any>, readonly [readonly [FiberId.Single, any]]>()
  for (const ref of FiberRefs.fiberRefs(refs)) locals.set(ref, [[fiberId, FiberRefs.getOrDefault(refs, ref)]])
  return FiberRefs.unsafeMake(locals)
}

export const make = <R extends Rpc.Any, E>(options: {
  /** For logs: which actor this is. */
  readonly name: string
  /**
   * Its handlers, one per message, and `restart`, which runs after a defect before the
   * next message (failing stops the actor). Made when a message is to be served and
   * dropped once none is (see `keepBehaviour`): what they hold costs nothing while the
   * actor is idle.
   */
  readonly behaviour: () => {
    readonly handlers: Handlers<R>
    readonly restart: (tag: R["_tag"], cause: Cause.Cause<unknown>) => Effect.Effect<void, unknown>
  }
  readonly stopped: () => E
  /** The error a caller gets when its message's handler died. */
  readonly failed: (tag: R["_tag"], cause: Cause.Cause<unknown>) => E
  /** Runs after each message, whatever became of it (before the next is taken). */
  readonly afterEach?: () => void
  /**
   * While this holds, the behaviour made for one message serves the next too, instead
   * of being made again: a thread actor keeps it while a run is in flight, whose driver
   * reports soon (its items, its end).
   */
  readonly keepBehaviour?: () => boolean
  /** Called once when the actor has stopped for good (its holder drops it). */
  readonly onStopped?: () => void
}): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    // An idle actor holds no fiber: a worker is started (a daemon, in the context of the
    // caller that woke it: its logger, its services) when a message arrives, and ends
    // when the mailbox is empty.
    const mailbox: Array<Envelope> = []
    let worker: Fiber.RuntimeFiber<void> | "starting" | undefined
    /** A handler is running (on the worker or in place): nobody else takes a message. */
    let serving = false
    /**
     * While a message is handled in place: completed when it is done (what `stop`, and a
     * worker that found the mailbox taken meanwhile, wait for).
     */
    let inPlace: OneShot.OneShot<void, never> | undefined
    const finished = OneShot.make<void>()
    let open = true

    type Behaviour = ReturnType<typeof options.behaviour>
    let behaviour: Behaviour | undefined
    const behaviourNow = () => (behaviour ??= options.behaviour())
    /** Nobody serves, nor will soon: the behaviour goes (the next message makes it again). */
    const dropIdleBehaviour = () => {
      if (!serving && worker === undefined && options.keepBehaviour?.() !== true) behaviour = undefined
    }

    let ended = false
    const finish = () => {
      if (ended) return
      ended = true
      OneShot.complete(finished, Exit.void)
      options.onStopped?.()
    }

    const drain = () => {
      open = false
      for (const envelope of mailbox.splice(0, mailbox.length)) OneShot.fail(envelope.reply, options.stopped())
    }

    /** After a defect: the caller hears of it, and the actor restarts, or stops if it cannot. */
    const supervise = (current: Behaviour, envelope: Envelope, cause: Cause.Cause<unknown>) =>
      Effect.gen(function* () {
        OneShot.fail(envelope.reply, options.failed(envelope.tag, cause))
        yield* Effect.logError(`${options.name}: ${envelope.tag} died; restarting from storage`, cause)
        const restarted = yield* Effect.exit(current.restart(envelope.tag, cause))
        if (Exit.isFailure(restarted)) {
          yield* Effect.logError(`${options.name}: restart failed; the actor stops`, restarted.cause)
          drain()
          finish()
        }
      })

    const afterEach = options.afterEach
    const after = <A, X>(effect: Effect.Effect<A, X>): Effect.Effect<A, X> =>
      afterEach === undefined ? effect : Effect.ensuring(effect, Effect.sync(afterEach))

    /** Handles one message and answers its caller (whoever runs it has set `serving`). */
    const serve = (current: Behaviour, envelope: Envelope) =>
      Effect.suspend(() =>
        (current.handlers as unknown as Record<string, (payload: unknown) => Effect.Effect<unknown, unknown>>)[
          envelope.tag
        ]!(envelope.payload)
      ).pipe(
        Effect.exit,
        Effect.flatMap((exit) => {
          if (Exit.isSuccess(exit)) return Effect.sync(() => OneShot.complete(envelope.reply, exit))
          if (Cause.isDie(exit.cause)) return supervise(current, envelope, exit.cause)
          if (Cause.isInterruptedOnly(exit.cause)) {
            return Effect.sync(() => OneShot.fail(envelope.reply, options.stopped()))
          }
          return Effect.sync(() => OneShot.complete(envelope.reply, exit))
        }),
        // The worker itself interrupted mid-message: its caller still hears back.
        Effect.onInterrupt(() => Effect.sync(() => OneShot.fail(envelope.reply, options.stopped()))),
        after
      )

    /**
     * Serves the mailbox until it is empty. Before leaving it yields once, so that a
     * caller that sends again as soon as it has its reply finds the worker still there.
     * While a message is handled in place, it waits for that to end.
     */
    const work: Effect.Effect<void> = Effect.suspend(() => {
      if (inPlace !== undefined) return Effect.flatMap(OneShot.wait(inPlace), () => work)
      if (open && mailbox.length > 0) {
        // Made first: if that throws, the message is still in the mailbox to be failed.
        const current = behaviourNow()
        const next = mailbox.shift()!
        serving = true
        return Effect.flatMap(serve(current, next), () => {
          serving = false
          return work
        })
      }
      return Effect.flatMap(Effect.yieldNow(), () =>
        Effect.suspend(() => {
          if (mailbox.length > 0 && open) return work
          worker = undefined
          dropIdleBehaviour()
          return Effect.void
        })
      )
    })
    const startWorker = Effect.flatMap(Effect.runtime<never>(), (caller) =>
      Effect.sync(() =>
        Runtime.runFork(caller)(
          // It clears `worker` itself when it leaves an empty mailbox (not when interrupted:
          // only a stopping actor interrupts it, and a stopped one takes no message).
          Effect.interruptible(work).pipe(
            // A defect outside any handler (making the behaviour, `afterEach`) would leave a
            // dead worker that nobody replaces: waiting callers hear of it, the next message
            // starts a new worker.
            Effect.catchAllCause((cause) =>
              Effect.suspend(() => {
                if (Cause.isInterruptedOnly(cause)) return Effect.void
                worker = undefined
                serving = false
                behaviour = undefined
                for (const envelope of mailbox.splice(0, mailbox.length)) {
                  OneShot.fail(envelope.reply, options.failed(envelope.tag, cause))
                }
                return Effect.logError(`${options.name}: its worker died outside a handler`, cause)
              })
            )
          ),
          // Queued like a fork, not run on the caller's stack; the caller's FiberRef values
          // without their history (see `currentValuesOnly`).
          { immediate: false, updateRefs: currentValuesOnly }
        )
      )
    ).pipe(
      Effect.tap((fiber) =>
        Effect.sync(() => {
          // Unless it has already come and gone.
          if (worker === "starting") worker = fiber
        })
      )
    )

    /**
     * A worker for what waits in the mailbox, unless a handler is running (it hands on
     * when done) or a worker exists (it takes the mailbox, once one handled in place is
     * done); marked in the same step, so that a second caller does not start a second one.
     */
    const handOn = Effect.suspend(() => {
      if (serving || !open || mailbox.length === 0 || worker !== undefined) return Effect.void
      worker = "starting"
      return startWorker
    })

    const stop = Effect.suspend(() => {
      if (!open) return Effect.void
      return Effect.gen(function* () {
        drain()
        const running = worker
        if (running !== undefined && running !== "starting") yield* Fiber.interrupt(running)
        if (inPlace !== undefined) yield* OneShot.wait(inPlace)
        finish()
      })
    })
    // On the scope itself (Effect.addFinalizer would keep a copy of this fiber's refs).
    yield* Scope.addFinalizer(yield* Effect.scope, stop)

    const ask = <Tag extends R["_tag"]>(
      tag: Tag,
      payload: Rpc.Payload<Message<R, Tag>>
    ): Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (!open) return Effect.fail(options.stopped())
          const reply = OneShot.make<unknown, unknown>()
          mailbox.push({ tag, payload, reply })
          // Started, if need be, before this caller can be interrupted.
          return Effect.zipRight(handOn, restore(OneShot.wait(reply)))
        })
      ) as Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>

    const askInPlace = <Tag extends R["_tag"]>(
      tag: Tag,
      payload: Rpc.Payload<Message<R, Tag>>
    ): Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E> =>
      Effect.suspend(() => {
        if (!open || serving || mailbox.length > 0) return ask(tag, payload)
        const envelope: Envelope = { tag, payload, reply: OneShot.make<unknown, unknown>() }
        serving = true
        const done = OneShot.make<void>()
        inPlace = done
        // Uninterruptible through the bookkeeping too: an interruption of the caller, held
        // back while the handler ran, lands only once the actor is free again.
        const handled = Effect.suspend(() => serve(behaviourNow(), envelope)).pipe(
          Effect.exit,
          Effect.flatMap((served) => {
            serving = false
            inPlace = undefined
            OneShot.succeed(done, undefined)
            if (Exit.isSuccess(served)) {
              dropIdleBehaviour()
              return handOn
            }
            // A defect outside the handler (making the behaviour, `afterEach`): as on a worker,
            // its caller hears of it (unless answered already) and the next message makes
            // the behaviour again.
            behaviour = undefined
            OneShot.fail(envelope.reply, options.failed(tag, served.cause))
            return Effect.zipRight(
              Effect.logError(`${options.name}: a defect outside ${tag}'s handler`, served.cause),
              handOn
            )
          }),
          Effect.uninterruptible
        )
        return Effect.zipRight(
          handled,
          Effect.suspend(() => envelope.reply.exit!)
        )
      }) as Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>

    return {
      ask,
      askInPlace,
      pending: Effect.sync(() => mailbox.length),
      stop,
      done: OneShot.wait(finished)
    } satisfies SupervisedActor<R, E>
  })
