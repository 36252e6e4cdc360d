/**
 * A supervised actor over a typed protocol: messages wait in a mailbox and are served
 * one at a time, each answered through its own reply. A worker fiber exists only while
 * there are messages, or while `keepWorker` says more are coming soon (an idle actor
 * costs its state, not a fiber). Messages are
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
 * Stopping drains the mailbox and fails every pending reply with `stopped()`.
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
 * A worker's FiberRefs: the caller's current values, each as if the worker had set it.
 * A fork keeps, per FiberRef, the stack of the fibers that set it (for joining back);
 * a worker is never joined, and one inherited whole would pass its stacks on, one
 * entry longer, to the fibers it starts. A thread's run driver, started by a worker,
 * wakes the next worker when it reports: the stacks grew by a generation a run, and
 * every fork and context change copies them (runs got slower with each one, 2x by
 * run 10,000 of a thread).
 */
const currentValuesOnly = (refs: FiberRefs.FiberRefs, fiberId: FiberId.Runtime): FiberRefs.FiberRefs => {
  const locals = new Map<FiberRef.FiberRef<any>, readonly [readonly [FiberId.Single, any]]>()
  for (const ref of FiberRefs.fiberRefs(refs)) locals.set(ref, [[fiberId, FiberRefs.getOrDefault(refs, ref)]])
  return FiberRefs.unsafeMake(locals)
}

export const make = <R extends Rpc.Any, E>(options: {
  /** For logs: which actor this is. */
  readonly name: string
  /**
   * Its handlers, one per message, and `restart`, which runs after a defect before the
   * next message (failing stops the actor). Made when a worker starts serving, dropped
   * when it stops: what they hold costs nothing while the actor is idle.
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
   * While this holds, a worker that has emptied the mailbox waits for the next message
   * instead of leaving. A thread actor keeps its worker while a run is in flight: the
   * run's driver reports soon, and waking a waiting worker costs less than starting
   * one (a fiber, the caller's FiberRefs, the behaviour): 0.05 against 0.13 ms on the
   * way back of a real agent's turn.
   */
  readonly keepWorker?: () => boolean
  /** Called once when the actor has stopped for good (its holder drops it). */
  readonly onStopped?: () => void
}): Effect.Effect<SupervisedActor<R, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    // An idle actor holds no fiber: a worker is started (a daemon, in the context of the
    // caller that woke it: its logger, its services) when a message arrives, and ends
    // when the mailbox is empty.
    const mailbox: Array<Envelope> = []
    let worker: Fiber.RuntimeFiber<void> | "starting" | undefined
    /** Completed by the next message, while a kept worker waits for one. */
    let idle: OneShot.OneShot<void, never> | undefined
    const finished = OneShot.make<void>()
    let open = true

    let ended = false
    const finish = () => {
      if (ended) return
      ended = true
      OneShot.complete(finished, Exit.void)
      options.onStopped?.()
    }

    const drain = Effect.sync(() => {
      open = false
      for (const envelope of mailbox.splice(0, mailbox.length)) OneShot.fail(envelope.reply, options.stopped())
    })

    type Behaviour = ReturnType<typeof options.behaviour>
    const supervise = (behaviour: Behaviour, envelope: Envelope, cause: Cause.Cause<unknown>) =>
      Effect.gen(function* () {
        OneShot.fail(envelope.reply, options.failed(envelope.tag, cause))
        yield* Effect.logError(`${options.name}: ${envelope.tag} died; restarting from storage`, cause)
        const restarted = yield* Effect.exit(behaviour.restart(envelope.tag, cause))
        if (Exit.isFailure(restarted)) {
          yield* Effect.logError(`${options.name}: restart failed; the actor stops`, restarted.cause)
          yield* drain
          finish()
          return yield* Effect.interrupt
        }
      })

    const afterEach = options.afterEach
    const after = <A, X>(effect: Effect.Effect<A, X>): Effect.Effect<A, X> =>
      afterEach === undefined ? effect : Effect.ensuring(effect, Effect.sync(afterEach))

    const serve = (behaviour: Behaviour, envelope: Envelope) =>
      Effect.suspend(() =>
        (behaviour.handlers as unknown as Record<string, (payload: unknown) => Effect.Effect<unknown, unknown>>)[
          envelope.tag
        ]!(envelope.payload)
      ).pipe(
        Effect.exit,
        Effect.flatMap((exit) => {
          if (Exit.isSuccess(exit)) return Effect.sync(() => OneShot.complete(envelope.reply, exit))
          if (Cause.isDie(exit.cause)) return supervise(behaviour, envelope, exit.cause)
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
     * caller that sends again as soon as it has its reply finds the worker still there;
     * while `keepWorker` holds, it waits for the next message instead.
     */
    const work = (behaviour: Behaviour): Effect.Effect<void> =>
      Effect.suspend(() => {
        const next = mailbox.shift()
        if (next !== undefined) return Effect.flatMap(serve(behaviour, next), () => work(behaviour))
        return Effect.flatMap(Effect.yieldNow(), () =>
          Effect.suspend(() => {
            if (mailbox.length > 0 && open) return work(behaviour)
            if (open && options.keepWorker?.() === true) {
              const wake = OneShot.make<void>()
              idle = wake
              return Effect.flatMap(OneShot.wait(wake), () => work(behaviour))
            }
            worker = undefined
            return Effect.void
          })
        )
      })
    const startWorker = Effect.flatMap(Effect.runtime<never>(), (caller) =>
      Effect.sync(() =>
        Runtime.runFork(caller)(
          // It clears `worker` itself when it leaves an empty mailbox (not when interrupted:
          // only a stopping actor interrupts it, and a stopped one takes no message).
          Effect.interruptible(Effect.suspend(() => (open ? work(options.behaviour()) : Effect.void))).pipe(
            // A defect outside any handler (making the behaviour, `afterEach`) would leave a
            // dead worker that nobody replaces: waiting callers hear of it, the next message
            // starts a new worker.
            Effect.catchAllCause((cause) =>
              Effect.suspend(() => {
                if (Cause.isInterruptedOnly(cause)) return Effect.void
                worker = undefined
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

    const stop = Effect.suspend(() => {
      if (!open) return Effect.void
      return Effect.gen(function* () {
        yield* drain
        const running = worker
        if (running !== undefined && running !== "starting") yield* Fiber.interrupt(running)
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
          if (worker !== undefined) {
            const waiting = idle
            idle = undefined
            if (waiting !== undefined) OneShot.succeed(waiting, undefined)
            return restore(OneShot.wait(reply))
          }
          // Marked at once, in this same step (a second caller must not start a second
          // worker), and started before this caller can be interrupted.
          worker = "starting"
          return Effect.zipRight(startWorker, restore(OneShot.wait(reply)))
        })
      ) as Effect.Effect<Rpc.Success<Message<R, Tag>>, Rpc.Error<Message<R, Tag>> | E>

    return {
      ask,
      pending: Effect.sync(() => mailbox.length),
      stop,
      done: OneShot.wait(finished)
    } satisfies SupervisedActor<R, E>
  })
