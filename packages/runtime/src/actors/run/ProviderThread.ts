/**
 * Before a run's turn is sent: the handoff's summary written by a provider when one is
 * to write it, and the provider thread the turn goes to, started, resumed or forked
 * natively and bound to the run (`BindNativeThread`). A native resume or fork the
 * provider refuses falls back to a portable handoff into a new provider thread
 * (`ResumeFailed` re-plans the run with a full summary); a broken session fails the run.
 */
import type { NativeRefStrength, ProviderFailure, Run, SkeinError } from "@skein/domain"
import { Effect, Either } from "effect"
import * as Telemetry from "../../resources/Telemetry.js"
import type { ProviderSessionsShape, SessionLease } from "../ProviderSessions.js"
import type { RunContext, SummaryOutcome, ThreadAsk } from "../ThreadProtocol.js"

export interface ProviderThreadInput {
  readonly run: Run
  readonly workspace: string | null
  readonly sessions: ProviderSessionsShape
  readonly ask: ThreadAsk
}

/** A native operation the provider refused (not a broken session): fall back to a portable handoff. */
const recoverable = (error: ProviderFailure): boolean =>
  error.kind === "resume_failed" || error.kind === "error" || error.kind === "unsupported"

/** A provider writes the pending handoff's summary; any failure keeps the local one. */
export const ensureSummary = (
  input: ProviderThreadInput,
  context: RunContext
): Effect.Effect<RunContext, SkeinError> => {
  const writer = context.summaryBy
  const handoff = context.handoff
  if (writer === null || handoff === null) return Effect.succeed(context)
  return input.sessions
    .use(writer, input.workspace, (lease) =>
      lease.handle.summarise({ payload: handoff.payload, budgetTokens: handoff.budgetTokens })
    )
    .pipe(
      Telemetry.traced("handoff.summarise", {
        attributes: {
          "skein.handoff.id": handoff.id,
          "skein.handoff.strategy": handoff.strategy,
          "gen_ai.agent.name": writer
        }
      }),
      Effect.map((text): SummaryOutcome => ({ _tag: "Written", text, provider: writer })),
      Effect.catchAll((error) =>
        Effect.logWarning(`summary by ${writer} failed, using the local summariser`, error).pipe(
          Effect.as<SummaryOutcome>({ _tag: "Failed", provider: writer, detail: error.message })
        )
      ),
      Effect.flatMap((summary) => input.ask("RecordSummary", { runId: input.run.id, handoffId: handoff.id, summary })),
      Effect.map((ready): RunContext => ({ ...context, handoff: ready, summaryBy: null }))
    )
}

/** The run's provider thread on `lease`, ready for its turn: its native ref, and the context the turn goes with. */
export const ensureThread = Effect.fnUntraced(function* (
  input: ProviderThreadInput,
  lease: SessionLease,
  initial: RunContext
): Effect.fn.Return<{ readonly nativeRef: string; readonly context: RunContext }, ProviderFailure | SkeinError> {
  const { ask, run } = input
  // Skein's tools for the agent, with a credential of this session's.
  const tools = lease.tools(run.threadId)
  const bind = (ctx: RunContext, forked: boolean) => (native: { nativeRef: string; strength: NativeRefStrength }) =>
    ask("BindNativeThread", {
      runId: run.id,
      providerThreadId: ctx.providerThread.id,
      nativeRef: native.nativeRef,
      strength: native.strength,
      forked
    }).pipe(Effect.as(native.nativeRef))
  const start = (ctx: RunContext) =>
    lease.handle
      .startThread({ workspace: input.workspace, model: ctx.providerThread.settings.model, tools })
      .pipe(Effect.flatMap(bind(ctx, false)))
  /** Re-plan with a full summary into a new provider thread, and start it. */
  const fallBack = (detail: string) =>
    Effect.gen(function* () {
      const replanned = yield* ask("ResumeFailed", { runId: run.id, detail })
      const context = yield* ensureSummary(input, replanned)
      return { nativeRef: yield* start(context), context }
    })
  const known = initial.providerThread.nativeRef
  const ready = (nativeRef: string) => ({ nativeRef, context: initial })
  let thread: { readonly nativeRef: string; readonly context: RunContext }
  if (known === null && initial.fork !== null) {
    // Inherit natively: fork the source's own provider thread at the source turn.
    const forked = yield* Effect.either(
      lease.handle.forkThread(initial.fork.nativeRef, initial.fork.turnRef, { tools })
    )
    if (Either.isRight(forked)) thread = ready(yield* bind(initial, true)(forked.right))
    else if (recoverable(forked.left)) thread = yield* fallBack(`native fork failed: ${forked.left.detail}`)
    else return yield* forked.left
  } else if (known === null) {
    thread = ready(yield* start(initial))
  } else if (!lease.loadedRefs.has(known) || run.contextResolution !== "none") {
    // Coming back after other runs: resume explicitly even in a warm process, since
    // the provider may have dropped the thread meanwhile.
    const resumed = yield* Effect.either(lease.handle.resumeThread(known, { tools }))
    if (Either.isRight(resumed)) thread = ready(known)
    else if (resumed.left.kind === "resume_failed") thread = yield* fallBack(resumed.left.detail)
    else return yield* resumed.left
  } else {
    thread = ready(known)
  }
  lease.loadedRefs.add(thread.nativeRef)
  return thread
})
