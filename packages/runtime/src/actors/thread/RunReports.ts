/**
 * What a run's driver reports to its thread's actor while the run goes: the turn's
 * items, the native thread its provider thread got, the handoff's summary once written,
 * a resume that failed (the run moves to a new provider thread), the run's end, and a
 * driver that stopped without recording the end.
 */
import { HandoffNotFound, RunNotFound } from "@skein/domain"
import { Effect, Ref } from "effect"
import { payloadHash } from "../../store/Receipts.js"
import { runById } from "../../store/ThreadState.js"
import type { Handlers } from "../SupervisedActor.js"
import type { ThreadMessage } from "../ThreadProtocol.js"
import { planBindNativeThread, planFinish, planItems, planResumeFallback, planSummary } from "../ThreadPlanner.js"
import { observeChildren } from "./LineageHandlers.js"
import type { RunParts, RunsContext } from "./RunHandlers.js"
import { endOrphan } from "./RunLaunch.js"
import { decideStart } from "./RunStart.js"
import { currentIs, type ThreadContext } from "./ThreadContext.js"

export type ReportMessages =
  "ResumeFailed" | "FinishRun" | "RecordItems" | "BindNativeThread" | "RecordSummary" | "DriverExited"

const resumeFailed =
  (ctx: ThreadContext, runs: RunsContext): Handlers<ThreadMessage>["ResumeFailed"] =>
  ({ detail, runId }) =>
    Effect.gen(function* () {
      const control = currentIs(yield* Ref.get(ctx.current), runId)
      const run = control === null ? undefined : yield* ctx.cell.demand((s) => runById(s, runId))
      if (!run || control === null) return yield* new RunNotFound({ runId })
      const adapter = yield* ctx.sessions.adapter(run.provider)
      const start = yield* decideStart(ctx, runs.inheritedCache(), {
        adapter,
        model: run.model,
        cleanContext: false,
        resumeFailed: true,
        budgetTokens: ctx.config.handoffBudgetTokens,
        forRun: run.id
      })
      const at = ctx.cell.now()
      const plan = yield* ctx.cell.demand((s) =>
        planResumeFallback(s, {
          runId: run.id,
          provider: start.provider,
          decision: start.decision,
          draft: start.draft,
          summaryBy: start.summaryBy,
          detail,
          now: at
        })
      )
      yield* ctx.cell.commit(plan.events)
      // What else the run delivers (merged work) was recorded at its start and stays.
      const context = { ...plan.context, extras: control.context.extras }
      yield* Ref.set(ctx.current, { ...control, context })
      return context
    })

const finishRun = Effect.fnUntraced(function* (
  ctx: ThreadContext,
  message: Parameters<Handlers<ThreadMessage>["FinishRun"]>[0]
) {
  const { threadId } = ctx
  const at = ctx.cell.now()
  const planned = yield* ctx.cell.demand((s) => planFinish(s, { ...message, now: at }))
  const events = yield* observeChildren(ctx, message.runId, planned)
  const control = currentIs(yield* Ref.get(ctx.current), message.runId)
  const stopCommandId = control?.stopCommandId ?? undefined
  yield* ctx.cell.commit(
    events,
    stopCommandId,
    stopCommandId
      ? { method: "run.interrupt", hash: payloadHash({ threadId }), result: { runId: message.runId } }
      : undefined
  )
  if (control) yield* Ref.set(ctx.current, null)
})

const recordSummary =
  (ctx: ThreadContext): Handlers<ThreadMessage>["RecordSummary"] =>
  ({ handoffId, runId, summary }) =>
    Effect.gen(function* () {
      const control = currentIs(yield* Ref.get(ctx.current), runId)
      const delivery = control?.context.delivery ?? null
      const at = ctx.cell.now()
      const planned =
        control && delivery
          ? yield* ctx.cell.demand((s) => planSummary(s, { runId, handoffId, summary, delivery, now: at }))
          : undefined
      if (control === null || planned === undefined) return yield* new HandoffNotFound({ handoffId })
      yield* ctx.cell.commit(planned.events)
      yield* Ref.set(ctx.current, {
        ...control,
        context: { ...control.context, handoff: planned.handoff, summaryBy: null }
      })
      return planned.handoff
    })

/** The report handlers, one set for every thread's actor. */
export const reportHandlers: Pick<Handlers<ThreadMessage, RunParts>, ReportMessages> = {
  ResumeFailed: (failed, { ctx, runs }) => resumeFailed(ctx, runs)(failed),
  FinishRun: (message, { ctx }) => finishRun(ctx, message),
  RecordSummary: (summary, { ctx }) => recordSummary(ctx)(summary),

  RecordItems: ({ items, runId }, { ctx }) =>
    Effect.flatMap(Ref.get(ctx.current), (current) =>
      currentIs(current, runId) === null
        ? Effect.void
        : Effect.flatMap(
            observeChildren(ctx, runId, planItems(ctx.cell.state(), runId, items, ctx.cell.now())),
            (events) => ctx.cell.commit(events)
          )
    ),

  BindNativeThread: ({ forked, nativeRef, providerThreadId, runId, strength }, { ctx }) =>
    Effect.flatMap(Ref.get(ctx.current), (current) => {
      if (currentIs(current, runId) === null) return Effect.void
      const at = ctx.cell.now()
      return Effect.flatMap(
        ctx.cell.demand((s) =>
          planBindNativeThread(s, { runId, providerThreadId, nativeRef, strength, forked, now: at })
        ),
        (events) => ctx.cell.commit(events)
      )
    }),

  DriverExited: ({ detail, runId }, { ctx }) =>
    Effect.flatMap(Ref.get(ctx.current), (current) => {
      const control = currentIs(current, runId)
      if (control === null) return Effect.void
      return Effect.zipRight(
        Ref.set(ctx.current, { ...control, driverExited: true }),
        endOrphan(ctx, `the run's driver stopped without recording the end of the run: ${detail}`)
      )
    })
}
