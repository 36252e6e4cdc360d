/**
 * ThreadActor: one supervised actor per AppThread, speaking ThreadProtocol. It owns
 * the thread's state in memory (its cell), decides with the pure planner and context
 * core, persists events (with the command receipt) before it answers, and drives runs
 * through RunDriver fibers that report back through the same mailbox, so every change
 * to a thread is serialised. This file wires the handler groups (runs, approvals,
 * checkpoints, lineage; see thread/).
 *
 * Guarantees:
 * - every append carries the sequence the actor last saw; a stale actor is refused
 *   by the store (SequenceConflict) and reloads;
 * - a defect in a handler fails that message's caller with `ActorFailed`, is logged,
 *   and the actor reloads from storage; a run whose driver is gone is ended there;
 * - a run's driver always reports its end; if that report is lost, the driver's exit
 *   (`DriverExited`) ends the run;
 * - a run queued on the thread starts once the thread is idle (thread/QueuedRuns.ts);
 * - nothing slow runs inside a handler: provider summaries and approval decisions go
 *   to the provider from outside the mailbox, so the thread keeps answering.
 */
import type { AppThread, Run, SkeinError, ThreadId, TurnItem } from "@skein/domain"
import { ActorFailed, ActorStopped, ThreadNotFound } from "@skein/domain"
import { Effect, FiberSet, Option, Ref, Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import type { SpawnInput } from "../lineage/Spawn.js"
import { WorkspaceCheckpoints } from "../lineage/WorkspaceCheckpoints.js"
import { EventStore } from "../store/EventStore.js"
import { trimThread } from "../store/ThreadState.js"
import * as CheckpointGate from "./CheckpointGate.js"
import { ProviderSessions } from "./ProviderSessions.js"
import * as SupervisedActor from "./SupervisedActor.js"
import type { RunAccepted, ThreadAsk, ThreadMessage } from "./ThreadProtocol.js"
import type { ApprovalParts, RespondApprovalPayload } from "./thread/ApprovalHandlers.js"
import { approvalHandlers, respondApproval } from "./thread/ApprovalHandlers.js"
import { checkpointHandlers, settleAbandonedCheckpoints } from "./thread/CheckpointHandlers.js"
import { lineageHandlers } from "./thread/LineageHandlers.js"
import { drain, type QueueMemory, queueMemory } from "./thread/QueuedRuns.js"
import type { RunParts, RunsContext } from "./thread/RunHandlers.js"
import type { InheritedCache } from "./thread/RunStart.js"
import { runHandlers } from "./thread/RunHandlers.js"
import { reportHandlers } from "./thread/RunReports.js"
import type { StartRunPayload } from "./thread/SteerHandlers.js"
import { steerHandlers, steerRun } from "./thread/SteerHandlers.js"
import { endOrphan } from "./thread/RunLaunch.js"
import * as ThreadCell from "./thread/ThreadCell.js"
import type { ActiveRun, ChildrenHint, ThreadContext } from "./thread/ThreadContext.js"
import { childrenHint, describeCause } from "./thread/ThreadContext.js"

export interface ThreadActor {
  readonly threadId: ThreadId
  /** Send a protocol message; the reply is typed by the message. */
  readonly ask: ThreadAsk
  /**
   * run.start with `whenBusy: steer` on a busy thread: the provider takes the message into
   * the running turn first; it is recorded only if it did. `idle`: no run was going.
   */
  readonly steer: (command: StartRunPayload) => Effect.Effect<RunAccepted | "idle", SkeinError>
  /** approval.respond: the provider hears the decision first; it is recorded only if it took it. */
  readonly respondApproval: (command: RespondApprovalPayload) => Effect.Effect<TurnItem, SkeinError>
  /** Completes when the actor has stopped for good (its holder should drop it). */
  readonly done: Effect.Effect<void>
  /**
   * A subagent child of this thread now exists (its log is written): the next runs look
   * in storage for children's results again, until none is left waiting.
   */
  readonly childSpawned: () => void
  /**
   * Waits until no git checkpoint of this thread is being taken (at once, mostly). A run
   * start or a rollback asks after it: the actor refuses either while one is (as
   * `RunAlreadyActive`), since the checkpoint's record comes through its own mailbox.
   */
  readonly settled: Effect.Effect<void>
  /**
   * `ask`, for a run start or a rollback: after `settled`, and again (after it again) if
   * the actor refused because a checkpoint began being taken in between.
   */
  readonly askSettled: ThreadAsk
}

/** `ask` after the checkpoint gate settles, asking again when refused for the capture that began last. */
const askAfterGate = (ask: ThreadAsk, gate: CheckpointGate.CheckpointGate): ThreadAsk =>
  ((tag: ThreadMessage["_tag"], payload: never) => {
    const attempt = (retries: number): Effect.Effect<unknown, SkeinError> =>
      Effect.zipRight(gate.settled, ask(tag, payload) as Effect.Effect<unknown, SkeinError>).pipe(
        Effect.catchIf(
          (error): error is Extract<SkeinError, { _tag: "RunAlreadyActive" }> =>
            retries > 0 && error._tag === "RunAlreadyActive",
          (error) =>
            Effect.flatMap(gate.worthRetrying(error.runId), (worth) =>
              worth ? attempt(retries - 1) : Effect.fail(error)
            )
        )
      )
    return attempt(2)
  }) as ThreadAsk

/** What every handler of a thread's actor may be given with its message. */
type HandlerParts = RunParts & ApprovalParts

/** The handler groups, one table for every thread's actor. */
const handlers: SupervisedActor.Handlers<ThreadMessage, HandlerParts> = {
  ...runHandlers,
  ...reportHandlers,
  ...approvalHandlers,
  ...checkpointHandlers,
  ...lineageHandlers,
  ...steerHandlers
}

/** No approval's decision on its way (the sets are replaced, never changed, so one serves all). */
const noneAnswering: ReadonlySet<string> = new Set()

/**
 * After each message: what it read does not stay, so an idle actor holds the compact
 * state (while a run is in flight, its end's message trims); and once the thread is
 * idle with runs queued, the next one starts (thread/QueuedRuns.ts).
 */
const afterMessage = ({ ctx, runs }: HandlerParts): Effect.Effect<void> =>
  Effect.flatMap(Ref.get(ctx.current), (current) => {
    if (current !== null) return Effect.void
    trimThread(ctx.cell.state())
    return drain(ctx, runs.queue, () => askAfterGate(runs.ask, ctx.gate), runs.retain, runs.scope)
  })

/**
 * After a defect, memory may be ahead of storage: start again from what is persisted,
 * and end a run that lost its driver on the way.
 */
const restart = Effect.fnUntraced(function* (
  _tag: ThreadMessage["_tag"],
  _cause: unknown,
  { answering, ctx, runs }: HandlerParts
) {
  yield* Ref.set(answering, noneAnswering)
  runs.children.mark()
  yield* ctx.cell.reload
  yield* endOrphan(ctx, "the thread's actor restarted while this run was in flight and its driver was gone")
  yield* settleAbandonedCheckpoints(ctx, "the thread's actor restarted before it was taken")
})

/** What a thread's actor is given by whoever keeps it. */
export interface ThreadActorHost {
  /** Keeps the actor from passivating (while a run is in flight) until the release it answers runs. */
  readonly retain: Effect.Effect<Effect.Effect<void>>
  readonly spawn: (input: SpawnInput) => Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError>
  /** Runs once the actor has stopped for good: its keeper drops it. */
  readonly onStopped: Effect.Effect<void>
}

/** Make the actor for one thread, loading its state from storage. */
export const makeThreadActor = (
  threadId: ThreadId,
  { onStopped, retain, spawn }: ThreadActorHost
): Effect.Effect<
  ThreadActor,
  SkeinError,
  Scope.Scope | EventStore | ProviderSessions | RuntimeConfig | WorkspaceCheckpoints
> =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const loaded = yield* store.loadThread(threadId)
    if (Option.isNone(loaded)) return yield* new ThreadNotFound({ threadId })
    const scope = yield* Effect.scope
    const ctx: ThreadContext = {
      threadId,
      cell: ThreadCell.make(threadId, store, loaded.value),
      store,
      sessions: yield* ProviderSessions,
      config: yield* RuntimeConfig,
      checkpoints: yield* WorkspaceCheckpoints,
      gate: yield* CheckpointGate.make(threadId),
      current: yield* Ref.make<ActiveRun | null>(null)
    }
    const answering = yield* Ref.make(noneAnswering)
    const children = childrenHint()
    const queue = queueMemory(yield* store.queue.ids(threadId))

    const actor = yield* SupervisedActor.make<ThreadMessage, SkeinError, HandlerParts>({
      name: `thread ${threadId}`,
      behaviour: (self) => {
        const parts: HandlerParts = {
          ctx,
          runs: new Runs(self.ask, retain, spawn, scope, children, queue),
          answering
        }
        return { handlers, context: parts, restart, afterEach: Effect.suspend(() => afterMessage(parts)) }
      },
      stopped: () => new ActorStopped({ threadId }),
      onStopped,
      failed: (tag, cause) => new ActorFailed({ threadId, command: tag, detail: describeCause(cause) })
    })

    // A run active in storage has no driver in a fresh actor: its driver died with the
    // actor before this one (evicted after a failed restart).
    yield* endOrphan(ctx, "the thread's actor was restarted while this run was in flight")
    yield* settleAbandonedCheckpoints(ctx, "the thread's actor stopped before it was taken")
    // Runs queued before this actor: a first message, after which (as after every one)
    // the next starts if the thread is idle.
    if (queue.next() !== null) yield* Effect.ignore(actor.ask("Status", undefined))

    return new Thread(threadId, ctx, actor, scope, children)
  })

/**
 * What the run handlers are given besides the thread's context; what a run makes the
 * first time (the inherited context read, the drivers' set) is kept here, made when needed.
 */
class Runs implements RunsContext {
  private inherited: InheritedCache | undefined = undefined
  private set: FiberSet.FiberSet<unknown, unknown> | undefined = undefined
  constructor(
    readonly ask: ThreadAsk,
    readonly retain: Effect.Effect<Effect.Effect<void>>,
    readonly spawn: ThreadActorHost["spawn"],
    readonly scope: Scope.Scope,
    readonly children: ChildrenHint,
    readonly queue: QueueMemory
  ) {}
  inheritedCache(): InheritedCache {
    return (this.inherited ??= new Map())
  }
  get drivers(): Effect.Effect<FiberSet.FiberSet<unknown, unknown>> {
    return this.set !== undefined
      ? Effect.succeed(this.set)
      : Effect.tap(Scope.extend(FiberSet.make(), this.scope), (made) => Effect.sync(() => void (this.set = made)))
  }
}

/** The actor's face, its ways in as methods and getters: an idle actor keeps five fields. */
class Thread implements ThreadActor {
  constructor(
    readonly threadId: ThreadId,
    private readonly ctx: ThreadContext,
    private readonly actor: SupervisedActor.SupervisedActor<ThreadMessage, SkeinError>,
    private readonly scope: Scope.Scope,
    private readonly children: ChildrenHint
  ) {}
  get ask(): ThreadAsk {
    return this.actor.ask
  }
  respondApproval(command: RespondApprovalPayload): Effect.Effect<TurnItem, SkeinError> {
    return respondApproval(this.ctx, this.actor.ask, this.scope)(command)
  }
  steer(command: StartRunPayload): Effect.Effect<RunAccepted | "idle", SkeinError> {
    return steerRun(this.ctx, this.actor.ask, this.scope)(command)
  }
  get done(): Effect.Effect<void> {
    return this.actor.done
  }
  get childSpawned(): () => void {
    return this.children.mark
  }
  get settled(): Effect.Effect<void> {
    return this.ctx.gate.settled
  }
  get askSettled(): ThreadAsk {
    return askAfterGate(this.actor.ask, this.ctx.gate)
  }
}
