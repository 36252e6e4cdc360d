/**
 * ThreadActor: one fiber and mailbox per AppThread. It owns the thread's state in
 * memory, decides with the pure planner and context core, persists events (with the
 * command receipt) before it answers, and drives runs through RunDriver fibers that
 * report back through the same mailbox, so every change to a thread is serialised.
 */
import type {
  CommandId,
  ProviderAdapter,
  Run,
  RunView,
  SkeinError,
  ThreadEvent,
  ThreadId,
  TurnItem
} from "@skein/domain"
import {
  ActorStopped,
  CommandConflict,
  ApprovalNotFound,
  NoActiveRun,
  RunAlreadyActive,
  RunNotFound,
  ThreadNotFound,
  TurnItemRecorded,
  UnsupportedContextTransfer
} from "@skein/domain"
import type { InterruptRun, RespondApproval, StartRun } from "@skein/domain"
import { Deferred, Effect, Either, Option } from "effect"
import type { Scope } from "effect"
import { RuntimeConfig } from "../RuntimeConfig.js"
import { EventStore } from "../store/EventStore.js"
import { applyEvent } from "../store/Projection.js"
import type { ThreadState } from "../store/ThreadState.js"
import { activeRun, itemsOf, runById } from "../store/ThreadState.js"
import { decideContext, draftHandoff } from "./ContextPlanning.js"
import * as Mailbox from "./Mailbox.js"
import { ProviderSessions } from "./ProviderSessions.js"
import { driveRun } from "./RunDriver.js"
import type { StopReason } from "./RunDriver.js"
import { payloadHash } from "./Receipts.js"
import type { BindNativeThread, FinishRun, RecordItems, ResumeFailed, ThreadMessage } from "./ThreadMessages.js"
import { Inspect, StopRun } from "./ThreadMessages.js"
import type { ProviderInfo, StartPlan } from "./ThreadPlanner.js"
import {
  planApproval,
  planBindNativeThread,
  planFinish,
  planItems,
  planResumeFallback,
  planRunStart
} from "./ThreadPlanner.js"

interface ActiveRunControl {
  readonly runId: Run["id"]
  readonly provider: ProviderInfo
  readonly done: Deferred.Deferred<Run>
  readonly stop: Deferred.Deferred<StopReason>
  stopCommandId: CommandId | null
}

export interface RunTicket {
  readonly run: Run
  /** Completes with the terminal run. */
  readonly done: Deferred.Deferred<Run>
}

export interface ThreadActor {
  readonly threadId: ThreadId
  readonly startRun: (command: StartRun) => Effect.Effect<RunTicket, SkeinError>
  readonly interruptRun: (command: InterruptRun | StopRun) => Effect.Effect<RunTicket, SkeinError>
  readonly respondApproval: (command: RespondApproval) => Effect.Effect<TurnItem, SkeinError>
  readonly inspect: Effect.Effect<ThreadState, SkeinError>
  /** A run with its turn items, from the actor's memory. */
  readonly runView: (runId: Run["id"]) => Effect.Effect<RunView, SkeinError>
  /** The run in flight, if any, with its completion. */
  readonly active: Effect.Effect<Option.Option<RunTicket>>
}

const infoOf = (adapter: ProviderAdapter): ProviderInfo => ({
  name: adapter.name,
  driver: adapter.driver,
  capabilities: adapter.capabilities,
  runtimeMode: adapter.runtimeMode,
  model: adapter.model
})

const startRunHash = (command: StartRun) =>
  payloadHash({
    threadId: command.threadId,
    provider: command.provider,
    message: command.message,
    model: command.model ?? null,
    cleanContext: command.cleanContext ?? false,
    handoffBudgetTokens: command.handoffBudgetTokens ?? null
  })

/**
 * Make the actor for one thread, loading its state from storage.
 * `retain` keeps the actor from passivating while a run is in flight.
 */
export const makeThreadActor = (
  threadId: ThreadId,
  retain: Effect.Effect<void, never, Scope.Scope>
): Effect.Effect<ThreadActor, SkeinError, Scope.Scope | EventStore | ProviderSessions | RuntimeConfig> =>
  Effect.gen(function* () {
    const store = yield* EventStore
    const sessions = yield* ProviderSessions
    const config = yield* RuntimeConfig
    const load = store
      .loadThread(threadId)
      .pipe(
        Effect.flatMap(
          Option.match({ onNone: () => Effect.fail(new ThreadNotFound({ threadId })), onSome: Effect.succeed })
        )
      )
    let state: ThreadState = yield* load
    let current: ActiveRunControl | null = null

    const now = () => new Date().toISOString()

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
              Effect.asVoid
            )

    const ticketOf = (control: ActiveRunControl): RunTicket => ({
      run: runById(state, control.runId)!,
      done: control.done
    })

    const handleStart = (command: StartRun) =>
      Effect.gen(function* () {
        if (command.commandId) {
          const receipt = yield* store.receipt(command.commandId)
          if (Option.isSome(receipt)) {
            if (receipt.value.method !== "run.start" || receipt.value.payloadHash !== startRunHash(command)) {
              return yield* new CommandConflict({ commandId: command.commandId, method: "run.start" })
            }
            const runId = (receipt.value.result as { runId: Run["id"] }).runId
            const run = runById(state, runId)!
            if (current && current.runId === runId) return ticketOf(current)
            const done = yield* Deferred.make<Run>()
            yield* Deferred.succeed(done, run)
            return { run, done }
          }
        }
        const adapter = yield* sessions.adapter(command.provider)
        const busy = activeRun(state)
        if (busy) return yield* new RunAlreadyActive({ threadId, runId: busy.id })
        const provider = infoOf(adapter)
        const model = command.model ?? adapter.model
        const budgetTokens = command.handoffBudgetTokens ?? config.handoffBudgetTokens
        const decided = decideContext(state, {
          provider,
          model,
          cleanContext: command.cleanContext ?? false,
          resumeFailed: false,
          budgetTokens,
          options: config
        })
        if (Either.isLeft(decided)) {
          return yield* new UnsupportedContextTransfer({ provider: command.provider, detail: decided.left })
        }
        const decision = decided.right
        const draft = decision.handoff
          ? yield* draftHandoff(state, decision, {
              budgetTokens,
              target: provider,
              sessions,
              options: config,
              workspace: state.thread.workspace
            })
          : null
        const plan = planRunStart(state, {
          message: command.message,
          model: command.model ?? null,
          commandId: command.commandId ?? null,
          provider,
          decision,
          draft,
          now: now()
        })
        yield* commit(plan.events, command.commandId, {
          method: "run.start",
          hash: startRunHash(command),
          result: { runId: plan.run.id }
        })
        const control: ActiveRunControl = {
          runId: plan.run.id,
          provider,
          done: yield* Deferred.make<Run>(),
          stop: yield* Deferred.make<StopReason>(),
          stopCommandId: null
        }
        current = control
        yield* launch(plan, control)
        return ticketOf(control)
      })

    // Set below, once the mailbox exists: the run fiber talks to its own actor.
    let ask: (message: ThreadMessage) => Effect.Effect<unknown, SkeinError> = () =>
      Effect.fail(new ActorStopped({ threadId }))

    const actorScope = yield* Effect.scope
    const launch = (plan: StartPlan, control: ActiveRunControl) =>
      Effect.forkIn(
        Effect.scoped(
          retain.pipe(
            Effect.zipRight(
              driveRun({
                run: plan.run,
                providerThread: plan.providerThread,
                handoff: plan.handoff,
                delivery: control.provider.capabilities.handoffDelivery[0] ?? "synthetic_user",
                workspace: state.thread.workspace,
                sessions,
                ask: (message) => ask(message),
                stop: control.stop,
                graceMs: config.interruptGraceMs
              })
            )
          )
        ),
        actorScope
      )

    const handleStop = (reason: StopReason, commandId: CommandId | undefined) =>
      Effect.gen(function* () {
        if (commandId) {
          const receipt = yield* store.receipt(commandId)
          if (Option.isSome(receipt)) {
            const runId = (receipt.value.result as { runId: Run["id"] }).runId
            const run = runById(state, runId)!
            const done = yield* Deferred.make<Run>()
            yield* Deferred.succeed(done, run)
            return { run, done }
          }
        }
        if (!current) return yield* new NoActiveRun({ threadId })
        current.stopCommandId = commandId ?? current.stopCommandId
        yield* Deferred.succeed(current.stop, reason)
        return ticketOf(current)
      })

    const handleResumeFailed = (message: ResumeFailed) =>
      Effect.gen(function* () {
        const run = runById(state, message.runId)!
        const adapter = yield* sessions.adapter(run.provider)
        const provider = infoOf(adapter)
        const budgetTokens = config.handoffBudgetTokens
        // Plan against the state without the failed run: it is the one being served.
        const decided = decideContext(state, {
          provider,
          model: run.model ?? adapter.model,
          cleanContext: false,
          resumeFailed: true,
          budgetTokens,
          options: config,
          forRun: run
        })
        if (Either.isLeft(decided)) {
          return yield* new UnsupportedContextTransfer({ provider: run.provider, detail: decided.left })
        }
        const decision = decided.right
        const draft = yield* draftHandoff(state, decision, {
          budgetTokens,
          target: provider,
          sessions,
          options: config,
          workspace: state.thread.workspace
        })
        const plan = planResumeFallback(state, {
          runId: run.id,
          provider,
          decision,
          draft: draft!,
          detail: message.detail,
          now: now()
        })
        yield* commit(plan.events)
        return plan
      })

    const handleFinish = (message: FinishRun) =>
      Effect.gen(function* () {
        const events = planFinish(state, { ...message, now: now() })
        const control = current && current.runId === message.runId ? current : null
        const stopCommandId = control?.stopCommandId ?? undefined
        yield* commit(
          events,
          stopCommandId,
          stopCommandId
            ? { method: "run.interrupt", hash: payloadHash({ threadId }), result: { runId: message.runId } }
            : undefined
        )
        if (control) {
          current = null
          yield* Deferred.succeed(control.done, runById(state, message.runId)!)
        }
      })

    const handleApproval = (command: RespondApproval) =>
      Effect.gen(function* () {
        const updated = planApproval(state, command.approvalId, command.decision)
        if (!updated) return yield* new ApprovalNotFound({ threadId, approvalId: command.approvalId })
        // The provider hears the decision first: if it refuses, nothing is recorded.
        const run = runById(state, updated.runId)!
        const nativeRef = run.providerThreadId ? state.providerThreads.get(run.providerThreadId)?.nativeRef : null
        if (nativeRef) {
          yield* sessions.use(run.provider, state.thread.workspace, (lease) =>
            lease.handle.respondApproval(nativeRef, command.approvalId, command.decision)
          )
        }
        yield* commit([new TurnItemRecorded({ item: updated })], command.commandId, {
          method: "approval.respond",
          hash: payloadHash({ threadId, approvalId: command.approvalId, decision: command.decision }),
          result: { itemId: updated.id }
        })
        return updated
      })

    const handle = (message: ThreadMessage): Effect.Effect<unknown, SkeinError> => {
      switch (message._tag) {
        case "StartRun":
          return handleStart(message)
        case "InterruptRun":
          return handleStop("user_interrupt", message.commandId)
        case "StopRun":
          return handleStop(message.reason, undefined)
        case "RespondApproval":
          return handleApproval(message)
        case "RecordItems": {
          const record = message as RecordItems
          return commit(planItems(state, record.runId, record.items, now()))
        }
        case "BindNativeThread": {
          const bind = message as BindNativeThread
          return commit(planBindNativeThread(state, bind.providerThreadId, bind.nativeRef, bind.strength, now()))
        }
        case "ResumeFailed":
          return handleResumeFailed(message)
        case "FinishRun":
          return handleFinish(message)
        case "Inspect":
          return Effect.succeed(state)
      }
    }

    const mailbox = yield* Mailbox.make<ThreadMessage, unknown, SkeinError, never>({
      handle,
      stopped: () => new ActorStopped({ threadId }),
      // A defect may have left memory ahead of storage: start again from what is persisted.
      onDefect: () =>
        load.pipe(
          Effect.tap((fresh) => Effect.sync(() => (state = fresh))),
          Effect.ignore
        )
    })
    ask = mailbox.ask

    return {
      threadId,
      startRun: (command) => mailbox.ask(command) as Effect.Effect<RunTicket, SkeinError>,
      interruptRun: (command) => mailbox.ask(command) as Effect.Effect<RunTicket, SkeinError>,
      respondApproval: (command) => mailbox.ask(command) as Effect.Effect<TurnItem, SkeinError>,
      inspect: mailbox.ask(new Inspect()) as Effect.Effect<ThreadState, SkeinError>,
      runView: (runId) =>
        (mailbox.ask(new Inspect()) as Effect.Effect<ThreadState, SkeinError>).pipe(
          Effect.flatMap((current) => {
            const run = runById(current, runId)
            return run
              ? Effect.succeed({ ...run, items: [...itemsOf(current, runId)] })
              : Effect.fail(new RunNotFound({ runId }))
          })
        ),
      active: Effect.sync(() => (current ? Option.some(ticketOf(current)) : Option.none()))
    } satisfies ThreadActor
  })
