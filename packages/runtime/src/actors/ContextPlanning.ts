/**
 * The shell around the context core for one run: ask the resolver, and when a
 * handoff is needed build it — locally, or by the configured summary provider with a
 * timeout and the local deterministic summariser as the fallback.
 */
import type { ProviderName, Run } from "@skein/domain"
import { Duration, Effect, Either } from "effect"
import { buildHandoffPayload } from "../context/HandoffBuilder.js"
import { resolveStartContext } from "../context/ContextResolver.js"
import { estimateTokens } from "../context/Tokens.js"
import type { RuntimeOptions } from "../RuntimeConfig.js"
import type { ThreadState } from "../store/ThreadState.js"
import type { ProviderSessionsShape } from "./ProviderSessions.js"
import type { ContextDecision, HandoffDraft, ProviderInfo } from "./ThreadPlanner.js"

export const decideContext = (
  state: ThreadState,
  input: {
    readonly provider: ProviderInfo
    readonly model: string | null
    readonly cleanContext: boolean
    readonly resumeFailed: boolean
    readonly budgetTokens: number
    readonly options: RuntimeOptions
    /** Re-planning a run already recorded (resume fallback). */
    readonly forRun?: Run
  }
): Either.Either<ContextDecision, string> => {
  const resolution = resolveStartContext({
    state,
    provider: input.provider.name,
    capabilities: input.provider.capabilities,
    settings: { model: input.model, runtimeMode: input.provider.runtimeMode },
    cleanContext: input.cleanContext,
    resumeFailed: input.resumeFailed,
    budgetTokens: input.budgetTokens,
    policy: input.options.staleness,
    ...(input.forRun ? { runOrdinal: input.forRun.ordinal } : {})
  })
  switch (resolution._tag) {
    case "unsupported":
      return Either.left(resolution.detail)
    case "none":
      return Either.right({
        kind: "none",
        reuse: resolution.providerThread,
        retire: resolution.replaces,
        reasons: resolution.reasons,
        handoff: null
      })
    case "native":
      return Either.right({
        kind: "none",
        reuse: resolution.providerThread,
        retire: null,
        reasons: resolution.reasons,
        handoff: null
      })
    case "delta":
      return Either.right({
        kind: "delta",
        reuse: resolution.providerThread,
        retire: null,
        reasons: resolution.reasons,
        handoff: {
          kind: "delta_context",
          strategy: resolution.strategy,
          from: resolution.covered.from,
          to: resolution.covered.to
        }
      })
    case "portable":
      return Either.right({
        kind: "portable",
        reuse: resolution.into === "existing" ? resolution.providerThread : null,
        retire: resolution.into === "new" ? resolution.replaces : null,
        reasons: resolution.reasons,
        handoff: {
          kind: "portable_context",
          strategy: resolution.strategy,
          from: resolution.covered.from,
          to: resolution.covered.to
        }
      })
  }
}

/** Which provider instance should write the summary, if not the local summariser. */
const summaryWriter = (
  state: ThreadState,
  decision: ContextDecision,
  target: ProviderInfo,
  options: RuntimeOptions
) => {
  switch (options.summarySource._tag) {
    case "local":
      return null
    case "entering":
      return target.name
    case "provider":
      return options.summarySource.provider as ProviderName
    case "leaving":
      return state.runs[(decision.handoff?.to ?? 0) - 1]?.provider ?? null
  }
}

export const draftHandoff = (
  state: ThreadState,
  decision: ContextDecision,
  input: {
    readonly budgetTokens: number
    readonly target: ProviderInfo
    readonly sessions: ProviderSessionsShape
    readonly options: RuntimeOptions
    readonly workspace: string | null
  }
): Effect.Effect<HandoffDraft | null> =>
  Effect.gen(function* () {
    const spec = decision.handoff
    if (!spec) return null
    const built = buildHandoffPayload(state, {
      fromOrdinal: spec.from,
      toOrdinal: spec.to,
      strategy: spec.strategy,
      budgetTokens: input.budgetTokens
    })
    const local: HandoffDraft = { ...built, createdByProvider: null }
    const writer = summaryWriter(state, decision, input.target, input.options)
    if (writer === null) return local
    const adapter = yield* Effect.either(input.sessions.adapter(writer))
    if (Either.isLeft(adapter) || !adapter.right.capabilities.summarise) return local
    return yield* input.sessions
      .use(writer, input.workspace, (lease) =>
        lease.handle.summarise({ payload: built.payload, budgetTokens: built.budgetTokens })
      )
      .pipe(
        Effect.timeoutFail({
          duration: Duration.millis(input.options.summaryTimeoutMs),
          onTimeout: () => "timeout" as const
        }),
        Effect.map((text): HandoffDraft => ({
          ...built,
          summaryText: text,
          tokenEstimate: estimateTokens(text),
          createdByProvider: adapter.right.name
        })),
        Effect.catchAll((error) =>
          Effect.logWarning(`summary by ${writer} failed, using the local summariser`, error).pipe(Effect.as(local))
        )
      )
  })
