/**
 * A thread actor's approvals. An approval decision goes to the provider before it is
 * recorded, and only if the provider took it: `RespondApproval` reserves the approval
 * (so that a second decision for it is refused meanwhile) and says where to deliver
 * it; the delivery runs outside the mailbox (`respondApproval`), so the thread keeps
 * answering; then `RecordApproval` records it, or `ReleaseApproval` lets it go (and
 * stops the run when the provider cannot take decisions at all).
 */
import type { RespondApprovalFields, SkeinError, TurnItem } from "@skein/domain"
import { ApprovalNotFound, ProviderFailure, TurnItemId, RunId, TurnItemRecorded } from "@skein/domain"
import { Deferred, Effect, Either, Fiber, Option, Ref, Schema } from "effect"
import type { Scope } from "effect"
import { payloadHash } from "../../store/Receipts.js"
import { providerThreadHead, runById } from "../../store/ThreadState.js"
import { failureOf } from "../RunDriver.js"
import type { Handlers } from "../SupervisedActor.js"
import type { ThreadAsk, ThreadMessage } from "../ThreadProtocol.js"
import { approvalAnswer, planApproval } from "../ThreadPlanner.js"
import type { ThreadContext } from "./ThreadContext.js"
import { capabilitiesOf } from "./ThreadContext.js"

export type ApprovalMessages = "RespondApproval" | "RecordApproval" | "ReleaseApproval"
export type RespondApprovalPayload = Schema.Struct.Type<typeof RespondApprovalFields>

/** The run makes the replay's read of the item an indexed one; receipts written before it have none. */
const ItemReceipt = Schema.Struct({ itemId: TurnItemId, runId: Schema.optional(RunId) })

/** Approvals whose decision is on its way to the provider. */
export type Answering = Ref.Ref<ReadonlySet<string>>

const without = (set: ReadonlySet<string>, id: string): ReadonlySet<string> => {
  if (!set.has(id)) return set
  const next = new Set(set)
  next.delete(id)
  return next
}

const respond =
  (ctx: ThreadContext, answering: Answering): Handlers<ThreadMessage>["RespondApproval"] =>
  (command) =>
    Effect.gen(function* () {
      const { cell, store, threadId } = ctx
      const hash = payloadHash({ threadId, approvalId: command.approvalId, decision: command.decision })
      const replayed = yield* cell.replay(command.commandId, "approval.respond", hash, ItemReceipt)
      if (Option.isSome(replayed)) {
        const found = yield* store.lookup.turnItem(threadId, replayed.value.itemId, replayed.value.runId)
        if (Option.isSome(found)) return { _tag: "Recorded" as const, item: found.value }
      }
      const requests = (yield* Ref.get(answering)).has(command.approvalId)
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
      const { pt, run } = yield* cell.demand((s) => {
        const found = runById(s, updated.runId)!
        return { run: found, pt: found.providerThreadId ? providerThreadHead(s, found.providerThreadId) : undefined }
      })
      const current = yield* Ref.get(ctx.current)
      // Unknown instance: the provider is asked, as it decides.
      const outlives = capabilitiesOf(ctx.sessions, run.provider)?.approvalsOutliveTurn ?? true
      if (current?.runId !== run.id && !outlives) {
        return yield* new ProviderFailure({
          provider: run.provider,
          kind: "error",
          code: "approval_not_pending",
          detail: `${run.provider} is not waiting for approval ${command.approvalId}: its run ${run.id} is over, and this provider takes a decision only while the turn that asked waits for it`
        })
      }
      yield* Ref.update(answering, (set) => new Set([...set, command.approvalId]))
      return { _tag: "Deliver" as const, runId: run.id, provider: run.provider, nativeRef: pt?.nativeRef ?? null }
    })

/** What each approval handler is given with its message. */
export interface ApprovalParts {
  readonly ctx: ThreadContext
  readonly answering: Answering
}

/** The approval handlers, one set for every thread's actor. */
export const approvalHandlers: Pick<Handlers<ThreadMessage, ApprovalParts>, ApprovalMessages> = {
  RespondApproval: (command, { answering, ctx }) => respond(ctx, answering)(command),

  RecordApproval: ({ approvalId, commandId, decision }, { answering, ctx }) =>
    Effect.gen(function* () {
      yield* Ref.update(answering, (set) => without(set, approvalId))
      const requests = yield* ctx.store.lookup.approvalRequests(ctx.threadId, approvalId)
      const updated = planApproval(requests, approvalId, decision)
      if (!updated) return yield* new ApprovalNotFound({ threadId: ctx.threadId, approvalId })
      yield* ctx.cell.commit([new TurnItemRecorded({ item: updated })], commandId, {
        method: "approval.respond",
        hash: payloadHash({ threadId: ctx.threadId, approvalId, decision }),
        result: { itemId: updated.id, runId: updated.runId }
      })
      return updated
    }),

  ReleaseApproval: ({ approvalId, failure }, { answering, ctx }) =>
    Effect.gen(function* () {
      yield* Ref.update(answering, (set) => without(set, approvalId))
      const requests = yield* ctx.store.lookup.approvalRequests(ctx.threadId, approvalId)
      const open = planApproval(requests, approvalId, "cancel")
      const current = yield* Ref.get(ctx.current)
      // The provider cannot take decisions: the run that waits for one cannot go on.
      if (failure === null || current === null || open === undefined || open.runId !== current.runId) return
      yield* Deferred.succeed(current.stop, failure)
    })
}

/**
 * approval.respond: the provider hears the decision first; it is recorded only if it
 * took it. Runs in the actor's scope, not the caller's: once reserved, the approval is
 * released or recorded even if the caller goes away (the provider call has its deadline).
 */
export const respondApproval =
  (ctx: ThreadContext, ask: ThreadAsk, scope: Scope.Scope) =>
  (command: RespondApprovalPayload): Effect.Effect<TurnItem, SkeinError> =>
    Effect.gen(function* () {
      const answer = yield* ask("RespondApproval", command)
      if (answer._tag === "Recorded") return answer.item
      const { nativeRef } = answer
      if (nativeRef !== null) {
        const told = yield* Effect.either(
          ctx.sessions.use(answer.provider, ctx.cell.state().thread.workspace, (lease) =>
            lease.handle.respondApproval(nativeRef, command.approvalId, command.decision)
          )
        )
        if (Either.isLeft(told)) {
          const error = told.left
          const failure = error._tag === "ProviderFailure" ? failureOf(error) : null
          yield* Effect.ignore(ask("ReleaseApproval", { approvalId: command.approvalId, failure }))
          return yield* Effect.fail(error)
        }
      }
      return yield* ask("RecordApproval", {
        approvalId: command.approvalId,
        decision: command.decision,
        commandId: command.commandId
      })
    }).pipe(Effect.forkIn(scope), Effect.flatMap(Fiber.join))
