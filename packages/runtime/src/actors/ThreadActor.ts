/**
 * ThreadActor: one supervised actor per AppThread, speaking ThreadProtocol. It owns
 * the thread's state in memory, decides with the pure planner and context core,
 * persists events (with the command receipt) before it answers, and drives runs
 * through RunDriver fibers that report back through the same mailbox, so every
 * change to a thread is serialised.
 *
 * Guarantees:
 * - every append carries the sequence the actor last saw; a stale actor is refused
 *   by the store (SequenceConflict) and reloads;
 * - a defect in a handler fails that message's caller with `ActorFailed`, is logged,
 *   and the actor reloads from storage; a run whose driver is gone is ended there;
 * - a run's driver always reports its end; if that report is lost, the driver's exit
 *   (`DriverExited`) ends the run;
 * - nothing slow runs inside a handler: provider summaries and approval decisions go
 *   to the provider from outside the mailbox, so the thread keeps answering.
 */
import type {
  AppThread,
  CommandId,
  ContextTransfer,
  Run,
  ProviderAdapter,
  RespondApprovalFields,
  RunFailure,
  SkeinError,
  StartRunFields,
  ThreadEvent,
  ThreadId,
  ThreadRestore,
  TurnItem
} from "@skein/domain"
import {
  ActorFailed,
  ActorStopped,
  ContextTransferId,
  GitFailed,
  InvalidInput,
  InvalidSourcePoint,
  makeId,
  ObserveOnlyThread,
  ProviderFailure,
  RestorePending,
  ThreadUpdated,
  TransferRecorded,
  ApprovalNotFound,
  HandoffNotFound,
  NoActiveRun,
  RunAlreadyActive,
  RunId,
  RunNotFound,
  StorageError,
  ThreadNotFound,
  TurnItemId,
  TurnItemRecorded,
  UnsupportedContextTransfer
} from "@skein/domain"
import { Cause, Deferred, Effect, Either, Exit, Fiber, Option, Runtime, Schema } from "effect"
import type { Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import { EventStore } from "../store/EventStore.js"
import { applyEvent, toRunView } from "../store/Projection.js"
import type { ThreadState } from "../store/ThreadState.js"
import {
  activeRun,
  itemsOf,
  openTransfers,
  providerThreadHead,
  runById,
  transferById,
  trimThread
} from "../store/ThreadState.js"
import type { InheritedContext } from "../context/ContextResolver.js"
import { childResults } from "../lineage/Subagents.js"
import type { SpawnInput } from "../lineage/Spawn.js"
import { loadIncoming, loadInherited } from "../lineage/LineageContext.js"
import { planRollback, planRollbackSettled } from "../lineage/Rollback.js"
import { WorkspaceCheckpoints } from "../lineage/WorkspaceCheckpoints.js"
import { decideContext, extraHandoffs, localHandoff, summaryWriter } from "./ContextPlanning.js"
import { ProviderSessions } from "./ProviderSessions.js"
import { payloadHash, replay as replayReceipt } from "../store/Receipts.js"
import { driveRun, failureOf } from "./RunDriver.js"
import * as CheckpointGate from "./CheckpointGate.js"
import * as SupervisedActor from "./SupervisedActor.js"
import type { RunAccepted, RunContext, ThreadAsk, ThreadMessage } from "./ThreadProtocol.js"
import type { ProviderInfo, StartPlan } from "./ThreadPlanner.js"
import {
  approvalAnswer,
  planApproval,
  planBindNativeThread,
  planFinish,
  planItems,
  planCheckpointTaken,
  planObservedChild,
  planResumeFallback,
  planRunStart,
  planSummary
} from "./ThreadPlanner.js"

type StartRunPayload = Schema.Struct.Type<typeof StartRunFields>
type RespondApprovalPayload = Schema.Struct.Type<typeof RespondApprovalFields>

interface ActiveRun {
  readonly runId: TurnItem["runId"]
  context: RunContext
  /** Completed with the failure to record when the run must stop. */
  readonly stop: Deferred.Deferred<RunFailure>
  stopCommandId: CommandId | null
  /** Its driver fiber has ended (whether or not its FinishRun got through). */
  driverExited: boolean
}

export interface ThreadActor {
  readonly threadId: ThreadId
  /** Send a protocol message; the reply is typed by the message. */
  readonly ask: ThreadAsk
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
   * the actor refused because a checkpoint began being taken in between. Handled on the
   * caller's fiber when the actor is idle (`askInPlace`): a run start sends the turn
   * and answers without a worker started for it or a reply to wake the caller.
   */
  readonly askSettled: ThreadAsk
}

const infoOf = (adapter: ProviderAdapter): ProviderInfo => ({
  name: adapter.name,
  driver: adapter.driver,
  capabilities: adapter.capabilities,
  runtimeMode: adapter.runtimeMode,
  model: adapter.model
})

/**
 * `Effect.forkIn`, with the fiber started at once, on this stack, rather than queued
 * behind other fibers' work: a run's driver leases its session and sends the turn
 * (up to its first wait) before the accepting handler's reply goes out. Interruptible
 * whatever its starter is (a handler runs uninterruptibly in place, see
 * `SupervisedActor.askInPlace`), and with its starter's FiberRef values but not their
 * history (`currentValuesOnly`): the driver reports through later messages, each
 * handled on some other fiber.
 */
const forkNowIn =
  (scope: Scope.Scope) =>
  <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Fiber.RuntimeFiber<A, E>> =>
    Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.sync(() =>
        Runtime.runFork(runtime)(Effect.interruptible(effect), {
          scope,
          updateRefs: SupervisedActor.currentValuesOnly
        })
      )
    )

const startRunHash = (command: StartRunPayload) =>
  payloadHash({
    threadId: command.threadId,
    provider: command.provider,
    message: command.message,
    model: command.model ?? null,
    cleanContext: command.cleanContext ?? false,
    handoffBudgetTokens: command.handoffBudgetTokens ?? null
  })

/** What receipts of run.start / run.interrupt, approval.respond, thread.mergeBack and thread.rollback hold. */
const RunReceipt = Schema.Struct({ runId: RunId })
/** The run makes the replay's read of the item an indexed one; receipts written before it have none. */
const ItemReceipt = Schema.Struct({ itemId: TurnItemId, runId: Schema.optional(RunId) })
const TransferReceipt = Schema.Struct({ transferId: ContextTransferId })
const RollbackReceipt = Schema.Struct({ toRunOrdinal: Schema.Int, restoreId: Schema.optional(Schema.String) })

/** Incoming transfers whose source run was rolled back since: superseded, never delivered. */
const supersede = (stale: ReadonlyArray<ContextTransfer>, _now: string): Array<ThreadEvent> =>
  stale.map((transfer) => new TransferRecorded({ transfer: { ...transfer, status: "superseded" } }))

const interrupted: RunFailure = { reason: "user_interrupt", message: "The run was interrupted" }

/** A provider's own subagent, reported as an item of the run (see `observeChildren`). */
const isChildAgentItem = (
  event: ThreadEvent
): event is TurnItemRecorded & { readonly item: Extract<TurnItem, { readonly type: "child_agent" }> } =>
  event._tag === "TurnItemRecorded" && event.item.type === "child_agent"

/** One line for a log or a record: the failure or defect, not a stack. */
const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
  const value = Option.getOrUndefined(failure)
  const text =
    value instanceof Error
      ? `${(value as { _tag?: string })._tag ?? value.name}: ${value.message}`
      : value !== undefined
        ? String(value)
        : Cause.isInterruptedOnly(cause)
          ? "interrupted"
          : Cause.pretty(cause)
  return text.length > 400 ? `${text.slice(0, 399)}…` : text
}

/**
 * Make the actor for one thread, loading its state from storage.
 * `retain` keeps the actor from passivating while a run is in flight.
 */
export const makeThreadActor = (
  threadId: ThreadId,
  retain: Effect.Effect<void, never, Scope.Scope>,
  spawn: (input: SpawnInput) => Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError>,
  /** Called once if the actor stops for good (a failed restart): its holder drops it. */
  onStopped: () => void = () => {}
): Effect.Effect<
  ThreadActor,
  SkeinError,
  Scope.Scope | EventStore | ProviderSessions | RuntimeConfig | WorkspaceCheckpoints
> =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const sessions = yield* ProviderSessions
    const config = yield* RuntimeConfig
    const checkpoints = yield* WorkspaceCheckpoints
    const loaded = yield* store.loadThread(threadId)
    if (Option.isNone(loaded)) return yield* new ThreadNotFound({ threadId })
    let state: ThreadState = loaded.value
    let current: ActiveRun | null = null
    /** What this thread inherited, read from its source once (it does not change). */
    let inheritedCache: Map<string, Omit<InheritedContext, "transfer" | "open">> | undefined
    /** Approvals whose decision is on its way to the provider. */
    let answering: Set<string> | undefined
    /**
     * Whether a subagent child of this thread may have a result its log does not hold
     * yet, so that a run start must look in storage (`childResults`). Unknown when the
     * actor starts or restarts; set by `childSpawned`; cleared by a look that finds no
     * child waiting. A child's result comes back through `RecordTransfer` as soon as its
     * run ends; storage is for when that was lost (a crash, a failed commit), and a look
     * costs a run start 0.08-0.2 ms on cold caches.
     */
    let childrenMayReturn = true
    const gate = yield* CheckpointGate.make(threadId)
    const settled = gate.settled
    /** A command that must not run while a checkpoint is taken, told so (its caller waits and asks again). */
    const refuseWhileCapturing = gate.refuse
    // Set once the actor exists: runs' drivers talk to their own actor.
    let ask: ThreadAsk = () => Effect.fail(new ActorStopped({ threadId }))
    const actorScope = yield* Effect.scope

    /**
     * The actor's behaviour: its helpers and message handlers, made when a worker starts
     * serving messages and dropped when it stops, so that an idle actor keeps its state
     * and little else (they close over the variables above).
     */
    const behaviour = () => {
      const load = store
        .loadThread(threadId)
        .pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.fail(new ThreadNotFound({ threadId })), onSome: Effect.succeed })
          )
        )
      /**
       * A pure function of the state, with whatever it touches that a compact state does
       * not hold read from storage first (see ThreadState).
       */
      const demand = <A>(f: (state: ThreadState) => A): Effect.Effect<A, StorageError> =>
        Effect.suspend(() => {
          const s = state
          return store.demand(s, () => f(s))
        })

      const now = () => new Date().toISOString()
      const reload = Effect.tap(load, (fresh) => Effect.sync(() => void (state = fresh)))

      const commit = (
        events: ReadonlyArray<ThreadEvent>,
        commandId?: CommandId,
        receipt?: { method: string; hash: string; result: unknown }
      ) =>
        events.length === 0
          ? Effect.void
          : store
              .append({
                threadId,
                events,
                expectedSequence: state.lastThreadSequence,
                commandId,
                receipt:
                  receipt && commandId
                    ? { commandId, method: receipt.method, payloadHash: receipt.hash, result: receipt.result }
                    : undefined
              })
              .pipe(
                Effect.tap((stored) =>
                  Effect.sync(() => {
                    for (const e of stored) state = applyEvent(state, e.event)
                  })
                ),
                // Someone else wrote to this thread: what memory holds is stale.
                Effect.tapError((error) => (error._tag === "SequenceConflict" ? Effect.ignore(reload) : Effect.void)),
                Effect.asVoid
              )

      const accepted = (runId: TurnItem["runId"]): Effect.Effect<RunAccepted, RunNotFound | StorageError> =>
        Effect.flatMap(
          demand((s) => runById(s, runId)),
          (run) =>
            run ? Effect.succeed({ run, sequence: state.lastThreadSequence }) : Effect.fail(new RunNotFound({ runId }))
        )

      /** A thread whose files are owed a restore takes no run and no other rollback until they are back. */
      const refuseWhileRestoring = Effect.suspend(() => {
        const owed = state.thread.restore
        return owed?.status === "owed"
          ? Effect.fail(new RestorePending({ threadId, toRunOrdinal: owed.toRunOrdinal }))
          : Effect.void
      })

      /**
       * The file restore a rollback to run `toRunOrdinal` owes, refused before anything is
       * written when that run's checkpoint cannot serve it.
       */
      const owedRestore = (toRunOrdinal: number, at: string) =>
        Effect.gen(function* () {
          const workspace = state.thread.workspace
          const checkpoint = Option.getOrUndefined(yield* store.lookup.gitCheckpointOfRun(threadId, toRunOrdinal))
          if (checkpoint?.commitSha === undefined || workspace === null) {
            return yield* new InvalidSourcePoint({
              threadId,
              detail: `run ${toRunOrdinal} has no git checkpoint to restore files from (its workspace is not a git repository, or the run did not complete)`
            })
          }
          if (!(yield* checkpoints.checkpointExists(workspace, checkpoint.commitSha, checkpoint.gitRef))) {
            return yield* new InvalidSourcePoint({
              threadId,
              detail: `run ${toRunOrdinal}'s checkpoint ${checkpoint.commitSha.slice(0, 12)} is no longer in the repository of ${workspace} (pruned); roll back without restoreFiles`
            })
          }
          const restore: ThreadRestore = {
            id: makeId.restore(),
            toRunOrdinal,
            commit: checkpoint.commitSha,
            workspace,
            status: "owed",
            requestedAt: at,
            finishedAt: null,
            outcome: null,
            detail: null
          }
          return restore
        })

      const replay = <A, I>(
        commandId: CommandId | undefined,
        method: string,
        hash: string,
        result: Schema.Schema<A, I>
      ) => replayReceipt(store.receipt, commandId, method, hash, result)

      /**
       * A run left active with no driver to end it (its driver died with a previous
       * incarnation of this actor, or its end could not be recorded): end it now.
       */
      const endOrphan = (why: string) =>
        Effect.suspend(() => {
          const active = activeRun(state)
          if (active === undefined) {
            current = null
            return Effect.void
          }
          if (current !== null && current.runId === active.id && !current.driverExited) return Effect.void
          current = null
          const at = now()
          return Effect.flatMap(
            demand((s) =>
              planFinish(s, {
                runId: active.id,
                outcome: "failed",
                failure: { reason: "runtime_error", message: why },
                turnRef: null,
                now: at
              })
            ),
            (events) => commit(events)
          )
        })

      /**
       * Child agents the provider ran natively that have ended with a thread of their own
       * get an observe-only app thread (a new log, written here once): the item names it.
       */
      const observeChildren = (
        runId: RunId,
        events: ReadonlyArray<ThreadEvent>
      ): Effect.Effect<ReadonlyArray<ThreadEvent>, SkeinError> =>
        // Most runs end with no child agent item: nothing to walk.
        !events.some(isChildAgentItem)
          ? Effect.succeed(events)
          : Effect.forEach(events, (event) => {
              if (!isChildAgentItem(event)) return Effect.succeed(event)
              const run = runById(state, runId)
              if (run === undefined) return Effect.succeed(event)
              const observed = planObservedChild(state, run, event.item, now())
              if (observed === null) return Effect.succeed(event)
              return store
                .append({ threadId: observed.threadId, events: observed.events, expectedSequence: 0 })
                .pipe(Effect.as(new TurnItemRecorded({ item: observed.item }) as ThreadEvent))
            })

      /** What a run's driver needs of the workspace's checkpoints; null without a workspace. */
      const checkpointsOf = (workspace: string | null, ordinal: number) =>
        workspace === null
          ? null
          : {
              isRepository: checkpoints.isRepository(workspace),
              capture: checkpoints.capture({
                workspace,
                threadId,
                ordinal,
                // Read when a capture needs it, after the previous one is recorded.
                previous: Effect.suspend(() => store.lookup.previousGitCommit(threadId)).pipe(
                  Effect.mapError((error) => new GitFailed({ workspace, detail: error.message }))
                )
              })
            }

      /**
       * Git checkpoints left pending with nobody taking them (Skein or this actor stopped
       * first): recorded as not taken, each a logical checkpoint with an error item on its run.
       */
      const settleAbandonedCheckpoints = (why: string) =>
        Effect.flatMap(gate.capturing, (capturing) =>
          capturing
            ? Effect.void
            : Effect.flatMap(store.pendingCheckpoints(threadId), (pending) =>
                Effect.forEach(
                  pending,
                  (checkpoint) =>
                    Effect.flatMap(
                      demand((s) => planCheckpointTaken(s, checkpoint, { _tag: "Failed", detail: why }, now())),
                      (events) => commit(events)
                    ),
                  { discard: true }
                )
              )
        )

      const launch = (plan: StartPlan, control: ActiveRun) =>
        driveRun({
          run: plan.run,
          context: plan.context,
          workspace: state.thread.workspace,
          sessions,
          ask: (tag, payload) => ask(tag, payload),
          checkpoint: checkpointsOf(state.thread.workspace, plan.run.ordinal),
          gate,
          spawn: (provider, prompt) =>
            Effect.map(
              spawn({ parentThreadId: threadId, provider, prompt, createdBy: "agent" }),
              ({ run, thread }) => ({
                threadId: thread.id,
                runId: run.id
              })
            ),
          stop: control.stop,
          graceMs: config.interruptGraceMs,
          itemDelayMs: config.itemDelayMs
        }).pipe(
          Effect.onExit((exit) =>
            Effect.suspend(() => {
              control.driverExited = true
              // A run whose end is recorded is no longer `current`: nothing to tell.
              if (current !== control) return Effect.void
              const detail = Exit.isSuccess(exit) ? "it ended early" : describeCause(exit.cause)
              return Effect.ignore(ask("DriverExited", { runId: plan.run.id, detail }))
            })
          ),
          // Held while the run is in flight: the actor cannot passivate under it.
          (drive) => Effect.zipRight(retain, drive),
          Effect.scoped,
          forkNowIn(actorScope)
        )

      /** Undefined for an instance no longer configured. */
      const capabilitiesOf = (name: string) => sessions.adapters.find((a) => a.name === name)?.capabilities
      const canSummarise = (name: string) => capabilitiesOf(name)?.summarise ?? false
      /** Unknown instance: the provider is asked, as it decides. */
      const approvalsOutliveTurn = (name: string) => capabilitiesOf(name)?.approvalsOutliveTurn ?? true

      const handlers: SupervisedActor.Handlers<ThreadMessage> = {
        StartRun: (command) =>
          Effect.gen(function* () {
            // Only a command with an id has a receipt to compare with or write.
            const hash = command.commandId === undefined ? "" : startRunHash(command)
            const replayed = yield* replay(command.commandId, "run.start", hash, RunReceipt)
            if (Option.isSome(replayed)) return yield* accepted(replayed.value.runId)
            if (state.thread.lineage.observeOnly) return yield* new ObserveOnlyThread({ threadId })
            yield* refuseWhileRestoring
            const adapter = yield* sessions.adapter(command.provider)
            const busy = activeRun(state)
            if (busy) return yield* new RunAlreadyActive({ threadId, runId: busy.id })
            yield* refuseWhileCapturing
            const provider = infoOf(adapter)
            const budgetTokens = command.handoffBudgetTokens ?? config.handoffBudgetTokens
            // What this thread takes in from others: read now, when a run needs it.
            if (childrenMayReturn) {
              // Cleared first: a child spawned meanwhile sets it again.
              childrenMayReturn = false
              const children = yield* childResults(store, state, now()).pipe(
                Effect.tap(({ events }) => (events.length > 0 ? commit(events) : Effect.void)),
                Effect.onError(() => Effect.sync(() => void (childrenMayReturn = true)))
              )
              if (children.waiting > 0) childrenMayReturn = true
            }
            const { incoming, stale } = yield* loadIncoming(store, state)
            const inherited = yield* loadInherited(store, state, (inheritedCache ??= new Map()))
            const decision = yield* demand((s) =>
              decideContext(s, {
                provider,
                model: command.model ?? adapter.model,
                cleanContext: command.cleanContext ?? false,
                resumeFailed: false,
                budgetTokens,
                options: config,
                inherited,
                incoming
              })
            )
            if (decision._tag === "unsupported") {
              return yield* new UnsupportedContextTransfer({ provider: command.provider, detail: decision.detail })
            }
            const draft = localHandoff(decision, budgetTokens)
            const extras = extraHandoffs(decision, budgetTokens)
            const at = now()
            const plan = yield* demand((s) =>
              planRunStart(s, {
                message: command.message,
                model: command.model ?? null,
                commandId: command.commandId ?? null,
                provider,
                decision,
                draft,
                extras,
                summaryBy: draft ? summaryWriter(s, decision, provider, config, canSummarise) : null,
                now: at
              })
            )
            yield* commit([...supersede(stale, now()), ...plan.events], command.commandId, {
              method: "run.start",
              hash,
              result: { runId: plan.run.id }
            })
            const control: ActiveRun = {
              runId: plan.run.id,
              context: plan.context,
              stop: yield* Deferred.make<RunFailure>(),
              stopCommandId: null,
              driverExited: false
            }
            current = control
            yield* launch(plan, control)
            return { run: plan.run, sequence: state.lastThreadSequence }
          }),

        InterruptRun: (command) =>
          Effect.gen(function* () {
            const replayed = yield* replay(command.commandId, "run.interrupt", payloadHash({ threadId }), RunReceipt)
            if (Option.isSome(replayed)) return yield* accepted(replayed.value.runId)
            if (current === null) return yield* new NoActiveRun({ threadId })
            current.stopCommandId = command.commandId ?? current.stopCommandId
            yield* Deferred.succeed(current.stop, interrupted)
            return yield* accepted(current.runId)
          }),

        StopRun: ({ failure }) =>
          Effect.gen(function* () {
            if (current === null) return yield* new NoActiveRun({ threadId })
            yield* Deferred.succeed(current.stop, failure)
            return yield* accepted(current.runId)
          }),

        RespondApproval: (command) =>
          Effect.gen(function* () {
            const hash = payloadHash({ threadId, approvalId: command.approvalId, decision: command.decision })
            const replayed = yield* replay(command.commandId, "approval.respond", hash, ItemReceipt)
            if (Option.isSome(replayed)) {
              const found = yield* store.lookup.turnItem(threadId, replayed.value.itemId, replayed.value.runId)
              if (Option.isSome(found)) return { _tag: "Recorded" as const, item: found.value }
            }
            const requests = answering?.has(command.approvalId)
              ? undefined
              : yield* store.lookup.approvalRequests(threadId, command.approvalId)
            const updated = requests && planApproval(requests, command.approvalId, command.decision)
            if (!updated) {
              const answered = requests && approvalAnswer(requests, command.approvalId)
              return yield* new ApprovalNotFound({
                threadId,
                approvalId: command.approvalId,
                ...(answered === undefined ? {} : { answered })
              })
            }
            const { pt, run } = yield* demand((s) => {
              const found = runById(s, updated.runId)!
              return {
                run: found,
                pt: found.providerThreadId ? providerThreadHead(s, found.providerThreadId) : undefined
              }
            })
            if (current?.runId !== run.id && !approvalsOutliveTurn(run.provider)) {
              return yield* new ProviderFailure({
                provider: run.provider,
                kind: "error",
                code: "approval_not_pending",
                detail: `${run.provider} is not waiting for approval ${command.approvalId}: its run ${run.id} is over, and this provider takes a decision only while the turn that asked waits for it`
              })
            }
            answering = answering ?? new Set()
            answering.add(command.approvalId)
            return { _tag: "Deliver" as const, runId: run.id, provider: run.provider, nativeRef: pt?.nativeRef ?? null }
          }),

        RecordApproval: ({ approvalId, commandId, decision }) =>
          Effect.gen(function* () {
            answering?.delete(approvalId)
            const updated = planApproval(
              yield* store.lookup.approvalRequests(threadId, approvalId),
              approvalId,
              decision
            )
            if (!updated) return yield* new ApprovalNotFound({ threadId, approvalId })
            yield* commit([new TurnItemRecorded({ item: updated })], commandId, {
              method: "approval.respond",
              hash: payloadHash({ threadId, approvalId, decision }),
              result: { itemId: updated.id, runId: updated.runId }
            })
            return updated
          }),

        ReleaseApproval: ({ approvalId, failure }) =>
          Effect.gen(function* () {
            answering?.delete(approvalId)
            const open = planApproval(yield* store.lookup.approvalRequests(threadId, approvalId), approvalId, "cancel")
            // The provider cannot take decisions: the run that waits for one cannot go on.
            if (failure === null || current === null || open === undefined || open.runId !== current.runId) return
            yield* Deferred.succeed(current.stop, failure)
          }),

        GetRun: ({ runId }) =>
          Effect.flatMap(
            demand((s) => {
              const run = runById(s, runId)
              return run === undefined ? undefined : toRunView(run, itemsOf(s, runId))
            }),
            (view) => (view === undefined ? Effect.fail(new RunNotFound({ runId })) : Effect.succeed(view))
          ),

        Status: () =>
          Effect.sync(() => ({
            lastSequence: state.lastThreadSequence,
            activeRunId: current?.runId ?? activeRun(state)?.id ?? null
          })),

        RecordItems: ({ items, runId }) =>
          current?.runId === runId
            ? Effect.flatMap(observeChildren(runId, planItems(state, runId, items, now())), (events) => commit(events))
            : Effect.void,

        BindNativeThread: ({ forked, nativeRef, providerThreadId, runId, strength }) => {
          if (current?.runId !== runId) return Effect.void
          const at = now()
          return Effect.flatMap(
            demand((s) => planBindNativeThread(s, { runId, providerThreadId, nativeRef, strength, forked, now: at })),
            (events) => commit(events)
          )
        },

        RecordSummary: ({ handoffId, runId, summary }) =>
          Effect.gen(function* () {
            const control = current?.runId === runId ? current : null
            const delivery = control?.context.delivery ?? null
            const at = now()
            const planned =
              control && delivery
                ? yield* demand((s) => planSummary(s, { runId, handoffId, summary, delivery, now: at }))
                : undefined
            if (control === null || planned === undefined) return yield* new HandoffNotFound({ handoffId })
            yield* commit(planned.events)
            control.context = { ...control.context, handoff: planned.handoff, summaryBy: null }
            return planned.handoff
          }),

        ResumeFailed: ({ detail, runId }) =>
          Effect.gen(function* () {
            const control = current?.runId === runId ? current : null
            const run = control === null ? undefined : yield* demand((s) => runById(s, runId))
            if (!run || control === null) return yield* new RunNotFound({ runId })
            const adapter = yield* sessions.adapter(run.provider)
            const provider = infoOf(adapter)
            const budgetTokens = config.handoffBudgetTokens
            const inherited = yield* loadInherited(store, state, (inheritedCache ??= new Map()))
            const decision = yield* demand((s) =>
              decideContext(s, {
                provider,
                model: run.model ?? adapter.model,
                cleanContext: false,
                resumeFailed: true,
                budgetTokens,
                options: config,
                forRun: run.id,
                inherited
              })
            )
            if (decision._tag === "unsupported") {
              return yield* new UnsupportedContextTransfer({ provider: run.provider, detail: decision.detail })
            }
            const draft = localHandoff(decision, budgetTokens)
            const at = now()
            const plan = yield* demand((s) =>
              planResumeFallback(s, {
                runId: run.id,
                provider,
                decision,
                draft,
                summaryBy: draft ? summaryWriter(s, decision, provider, config, canSummarise) : null,
                detail,
                now: at
              })
            )
            yield* commit(plan.events)
            // What else the run delivers (merged work) was recorded at its start and stays.
            control.context = { ...plan.context, extras: control.context.extras }
            return control.context
          }),

        RecordCheckpoint: ({ runId, taken }) =>
          Effect.gen(function* () {
            const checkpoint = yield* store
              .pendingCheckpoints(threadId)
              .pipe(Effect.map((pending) => pending.find((c) => c.runId === runId)))
            if (checkpoint === undefined) return
            const at = now()
            yield* commit(yield* demand((s) => planCheckpointTaken(s, checkpoint, taken, at)))
          }),

        FinishRun: (message) =>
          Effect.gen(function* () {
            const at = now()
            const planned = yield* demand((s) => planFinish(s, { ...message, now: at }))
            const events = yield* observeChildren(message.runId, planned)
            const control = current !== null && current.runId === message.runId ? current : null
            const stopCommandId = control?.stopCommandId ?? undefined
            yield* commit(
              events,
              stopCommandId,
              stopCommandId
                ? { method: "run.interrupt", hash: payloadHash({ threadId }), result: { runId: message.runId } }
                : undefined
            )
            if (control) current = null
          }),

        RecordTransfer: ({ receipt, transfer }) =>
          Effect.gen(function* () {
            if (receipt !== null) {
              const replayed = yield* replay(receipt.commandId, receipt.method, receipt.hash, TransferReceipt)
              if (Option.isSome(replayed)) {
                const transferId = replayed.value.transferId
                const recorded = yield* demand((s) => transferById(s, transferId))
                if (recorded) return recorded
              }
            }
            // The same source run sent here twice (a retry, a reconciliation): one transfer.
            for (const existing of openTransfers(state)) {
              if (
                existing.type === transfer.type &&
                existing.sourceThreadId === transfer.sourceThreadId &&
                existing.sourcePoint.runId === transfer.sourcePoint.runId &&
                existing.status === "pending"
              ) {
                return existing
              }
            }
            yield* commit(
              [new TransferRecorded({ transfer })],
              receipt?.commandId,
              receipt ? { method: receipt.method, hash: receipt.hash, result: { transferId: transfer.id } } : undefined
            )
            return transfer
          }),

        Rollback: ({ commandId, restoreFiles, toRunOrdinal }) =>
          Effect.gen(function* () {
            const hash = payloadHash({ threadId, toRunOrdinal, restoreFiles })
            const replayed = yield* replay(commandId, "thread.rollback", hash, RollbackReceipt)
            if (Option.isSome(replayed)) {
              // The restore this command asked for, as it now stands (a later one replaces it).
              const asked = replayed.value.restoreId
              const restore = asked !== undefined && state.thread.restore?.id === asked ? state.thread.restore : null
              if (restore?.status !== "failed") return { replayed: true, native: [], restore }
              // Tried again: owed again, so that no run changes the files meanwhile.
              const busy = activeRun(state)
              if (busy) return yield* new RunAlreadyActive({ threadId, runId: busy.id })
              yield* refuseWhileCapturing
              const again: ThreadRestore = { ...restore, status: "owed", finishedAt: null, detail: null }
              yield* commit([new ThreadUpdated({ thread: { ...state.thread, restore: again, updatedAt: now() } })])
              return { replayed: true, native: [], restore: again }
            }
            yield* refuseWhileRestoring
            const busy = activeRun(state)
            if (busy) return yield* new RunAlreadyActive({ threadId, runId: busy.id })
            yield* refuseWhileCapturing
            const last = state.runCount
            if (toRunOrdinal > last) {
              return yield* new InvalidInput({
                detail: `thread ${threadId} has ${last} run(s): it cannot be rolled back to run ${toRunOrdinal}`
              })
            }
            const at = now()
            const restore = restoreFiles ? yield* owedRestore(toRunOrdinal, at) : null
            // A whole-thread change: planned on the complete state, read here.
            const plan = yield* demand((s) =>
              planRollback(s, {
                toRunOrdinal,
                capabilitiesOf: (name) => sessions.adapters.find((a) => a.name === name)?.capabilities,
                now: at
              })
            )
            // The restore is owed from the same commit as the rollback, before any file changes.
            const events =
              restore === null
                ? plan.events
                : [...plan.events, new ThreadUpdated({ thread: { ...state.thread, restore, updatedAt: at } })]
            // Recorded even when nothing changes, so that the commandId answers the same.
            yield* commit(events, commandId, {
              method: "thread.rollback",
              hash,
              result: restore === null ? { toRunOrdinal } : { toRunOrdinal, restoreId: restore.id }
            })
            return { replayed: false, native: plan.native, restore }
          }),

        RestoreFinished: ({ detail, outcome, restoreId }) =>
          Effect.gen(function* () {
            const owed = state.thread.restore
            if (owed === undefined || owed.id !== restoreId) return null
            if (owed.status !== "owed" && outcome === null) return owed
            const at = now()
            const finished: ThreadRestore = {
              ...owed,
              status: outcome === null ? "failed" : "done",
              finishedAt: at,
              outcome,
              detail: outcome === null ? detail : null
            }
            yield* commit([new ThreadUpdated({ thread: { ...state.thread, restore: finished, updatedAt: at } })])
            return finished
          }),

        RollbackSettled: ({ results, toRunOrdinal }) => {
          const at = now()
          return Effect.flatMap(
            demand((s) => planRollbackSettled(s, { toRunOrdinal, results, now: at })),
            (events) => commit(events)
          )
        },

        RevalidateIncoming: () =>
          Effect.flatMap(loadIncoming(store, state), ({ stale }) => commit(supersede(stale, now()))),

        DriverExited: ({ detail, runId }) =>
          current !== null && current.runId === runId
            ? Effect.suspend(() => {
                current!.driverExited = true
                return endOrphan(`the run's driver stopped without recording the end of the run: ${detail}`)
              })
            : Effect.void
      }

      return {
        handlers,
        // A defect may have left memory ahead of storage: start again from what is
        // persisted, and end a run that lost its driver on the way.
        restart: () =>
          Effect.gen(function* () {
            answering = undefined
            childrenMayReturn = true
            yield* reload
            yield* endOrphan("the thread's actor restarted while this run was in flight and its driver was gone")
            yield* settleAbandonedCheckpoints("the thread's actor restarted before it was taken")
          }),
        endOrphan,
        settleAbandonedCheckpoints
      }
    }

    const actor = yield* SupervisedActor.make<ThreadMessage, SkeinError>({
      name: `thread ${threadId}`,
      behaviour,
      // What a message read for its decision does not stay: an idle actor holds the compact
      // state. While a run is in flight its end's message trims (the trim after a run's
      // start would run beside the provider's turn, just sent, on the same cores).
      afterEach: () => {
        if (current === null) trimThread(state)
      },
      // A run in flight reports soon (its items, its end), each handled in place.
      keepBehaviour: () => current !== null,
      onStopped,
      stopped: () => new ActorStopped({ threadId }),
      failed: (tag, cause) => new ActorFailed({ threadId, command: tag, detail: describeCause(cause) })
    })
    // A run's driver reports on its own fiber when the actor is idle (its handlers only
    // write to storage): no worker is woken for its items and its end, and the driver
    // is not woken again for each reply.
    ask = actor.askInPlace
    const askSettled = ((tag: ThreadMessage["_tag"], payload: never) => {
      const attempt = (retries: number): Effect.Effect<unknown, SkeinError> =>
        Effect.zipRight(settled, actor.askInPlace(tag, payload) as Effect.Effect<unknown, SkeinError>).pipe(
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

    // A run active in storage has no driver in a fresh actor: its driver died with the
    // actor before this one (evicted after a failed restart).
    const fresh = behaviour()
    yield* fresh.endOrphan("the thread's actor was restarted while this run was in flight")
    yield* fresh.settleAbandonedCheckpoints("the thread's actor stopped before it was taken")

    const respondApproval = (command: RespondApprovalPayload): Effect.Effect<TurnItem, SkeinError> =>
      Effect.gen(function* () {
        const answer = yield* actor.ask("RespondApproval", command)
        if (answer._tag === "Recorded") return answer.item
        const { nativeRef } = answer
        if (nativeRef !== null) {
          const told = yield* Effect.either(
            sessions.use(answer.provider, state.thread.workspace, (lease) =>
              lease.handle.respondApproval(nativeRef, command.approvalId, command.decision)
            )
          )
          if (Either.isLeft(told)) {
            const error = told.left
            const failure = error._tag === "ProviderFailure" ? failureOf(error) : null
            yield* Effect.ignore(actor.ask("ReleaseApproval", { approvalId: command.approvalId, failure }))
            return yield* Effect.fail(error)
          }
        }
        return yield* actor.ask("RecordApproval", {
          approvalId: command.approvalId,
          decision: command.decision,
          commandId: command.commandId
        })
      }).pipe(
        // In the actor's scope, not the caller's: once reserved, the approval is released
        // or recorded even if the caller goes away (the provider call has its deadline).
        Effect.forkIn(actorScope),
        Effect.flatMap(Fiber.join)
      )

    return {
      threadId,
      ask: actor.ask,
      respondApproval,
      done: actor.done,
      childSpawned: () => void (childrenMayReturn = true),
      settled,
      askSettled
    } satisfies ThreadActor
  })
