/**
 * A thread actor's steering: `run.start` with `whenBusy: steer` adds the message to the
 * turn running on the thread, where its provider can take it (capability `steer`). As
 * with an approval's decision, the provider hears it first, outside the mailbox
 * (`steerRun`): `SteerTarget` says where the message goes (or why it cannot), and
 * `RecordSteer` records it as a user message of the run, with the command's receipt,
 * once the provider took it. A message the provider did not take is not recorded.
 */
import type { ProviderName, SkeinError, StartRunFields } from "@skein/domain"
import { CannotSteer } from "@skein/domain"
import { Effect, Either, Fiber, Option, Ref } from "effect"
import type { Schema, Scope } from "effect"
import { providerThreadHead, runById } from "../../store/ThreadState.js"
import type { Handlers } from "../SupervisedActor.js"
import type { RunAccepted, ThreadAsk, ThreadMessage } from "../ThreadProtocol.js"
import { planItems } from "../ThreadPlanner.js"
import { accepted, RunReceipt, startRunHash } from "./RunHandlers.js"
import type { ThreadContext, ThreadParts } from "./ThreadContext.js"
import { capabilitiesOf } from "./ThreadContext.js"

export type SteerMessages = "SteerTarget" | "RecordSteer"
export type StartRunPayload = Schema.Struct.Type<typeof StartRunFields>

/** Why the running turn cannot take the message, or null when it can. */
const cannot = (
  ctx: ThreadContext,
  command: StartRunPayload,
  run: { readonly provider: ProviderName; readonly nativeRef: string | null }
): string | null => {
  if (command.cleanContext === true) return "a clean context needs a run of its own"
  if (run.provider !== command.provider) return `the running turn is ${run.provider}'s, not ${command.provider}'s`
  if (capabilitiesOf(ctx.sessions, run.provider)?.steer !== true) return `${run.provider} cannot steer a running turn`
  if (run.nativeRef === null) return "its turn has not reached the provider yet"
  return null
}

/** The steering handlers, one set for every thread's actor. */
export const steerHandlers: Pick<Handlers<ThreadMessage, ThreadParts>, SteerMessages> = {
  SteerTarget: (command, { ctx }) =>
    Effect.gen(function* () {
      const hash = command.commandId === undefined ? "" : startRunHash(command)
      const replayed = yield* ctx.cell.replay(command.commandId, "run.start", hash, RunReceipt)
      if (Option.isSome(replayed)) {
        return { _tag: "Replayed" as const, accepted: yield* accepted(ctx, replayed.value.runId) }
      }
      const current = yield* Ref.get(ctx.current)
      if (current === null) return { _tag: "Idle" as const }
      const target = yield* ctx.cell.demand((s) => {
        const run = runById(s, current.runId)!
        const pt = run.providerThreadId ? providerThreadHead(s, run.providerThreadId) : undefined
        return { provider: run.provider, nativeRef: pt?.nativeRef ?? null }
      })
      const why = cannot(ctx, command, target)
      if (why !== null) return yield* new CannotSteer({ threadId: ctx.threadId, runId: current.runId, reason: why })
      return { _tag: "Steer" as const, runId: current.runId, provider: target.provider, nativeRef: target.nativeRef! }
    }),

  RecordSteer: ({ commandId, hash, message, runId }, { ctx }) =>
    Effect.gen(function* () {
      const at = ctx.cell.now()
      const events = yield* ctx.cell.demand((s) =>
        runById(s, runId) === undefined ? [] : planItems(s, runId, [{ type: "user_message", text: message }], at)
      )
      yield* ctx.cell.commit(
        events,
        commandId,
        commandId === undefined ? undefined : { method: "run.start", hash, result: { runId } }
      )
      return yield* accepted(ctx, runId)
    })
}

/**
 * `run.start` with `whenBusy: steer` on a busy thread: the provider takes the message
 * into the running turn, then it is recorded. Answers the run it joined; `Idle` when
 * no run was going by then (the caller starts one). Runs in the actor's scope: once the
 * provider took the message, it is recorded even if the caller went away.
 */
export const steerRun =
  (ctx: ThreadContext, ask: ThreadAsk, scope: Scope.Scope) =>
  (command: StartRunPayload): Effect.Effect<RunAccepted | "idle", SkeinError> =>
    Effect.gen(function* () {
      const target = yield* ask("SteerTarget", command)
      if (target._tag === "Replayed") return target.accepted
      if (target._tag === "Idle") return "idle" as const
      const { nativeRef, provider, runId } = target
      const told = yield* Effect.either(
        ctx.sessions.use(provider, ctx.cell.state().thread.workspace, (lease) =>
          lease.handle.steer === undefined
            ? Effect.fail(`${provider}'s sessions cannot steer`)
            : Effect.mapError(lease.handle.steer(nativeRef, command.message), (failure) => failure.detail)
        )
      )
      if (Either.isLeft(told)) {
        const reason = typeof told.left === "string" ? told.left : told.left.message
        return yield* new CannotSteer({ threadId: ctx.threadId, runId, reason })
      }
      return yield* ask("RecordSteer", {
        runId,
        message: command.message,
        commandId: command.commandId,
        hash: command.commandId === undefined ? "" : startRunHash(command)
      })
    }).pipe(Effect.forkIn(scope), Effect.flatMap(Fiber.join))
