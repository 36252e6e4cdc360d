/**
 * The actor's questions to the context core for one run, as pure functions: the
 * decision (the resolver, given what the runtime knows of the target provider), the
 * local handoff assembled from the decision's own material, and who, if anyone, should
 * write the summary instead of the local summariser. Asking that provider is the run
 * driver's work, outside the actor's message handler.
 */
import type { ProviderName, RunId } from "@skein/domain"
import type { BuiltHandoff } from "../context/HandoffBuilder.js"
import { assembleHandoff } from "../context/HandoffBuilder.js"
import type { ContextDecision, IncomingTransfer, InheritedContext } from "../context/ContextDecision.js"
import { resolveStartContext } from "../context/ContextResolver.js"
import type { RuntimeOptions } from "../RuntimeConfig.js"
import type { ThreadState } from "../store/ThreadState.js"
import { runAt, runById } from "../store/ThreadState.js"
import type { ProviderInfo } from "./ThreadPlanner.js"

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
    readonly forRun?: RunId
    readonly inherited?: InheritedContext | null
    readonly incoming?: ReadonlyArray<IncomingTransfer>
  }
): ContextDecision => {
  const run = input.forRun === undefined ? undefined : runById(state, input.forRun)
  return resolveStartContext({
    state,
    provider: input.provider.name,
    capabilities: input.provider.capabilities,
    settings: { model: input.model, runtimeMode: input.provider.runtimeMode },
    cleanContext: input.cleanContext,
    resumeFailed: input.resumeFailed,
    budgetTokens: input.budgetTokens,
    policy: input.options.staleness,
    inherited: input.inherited ?? null,
    incoming: input.incoming ?? [],
    ...(run ? { runOrdinal: run.ordinal } : {})
  })
}

/** The handoff the local summariser writes for a decision, from the material it carries. */
export const localHandoff = (decision: ContextDecision, budgetTokens: number): BuiltHandoff | null =>
  decision._tag === "delta" || decision._tag === "portable" ? assembleHandoff(decision.material, budgetTokens) : null

/** The handoffs delivered beside the decision's own (merged forks, subagent results), in order. */
export const extraHandoffs = (decision: ContextDecision, budgetTokens: number): ReadonlyArray<BuiltHandoff> =>
  decision.extras.map((extra) => assembleHandoff(extra.material, budgetTokens))

/**
 * Which provider instance should write the summary, if not the local summariser: only
 * one that is configured and says it can (`capabilities.summarise`).
 */
export const summaryWriter = (
  state: ThreadState,
  decision: ContextDecision,
  target: ProviderInfo,
  options: RuntimeOptions,
  canSummarise: (provider: string) => boolean
): ProviderName | null => {
  if (decision._tag !== "delta" && decision._tag !== "portable") return null
  let writer: string | null
  switch (options.summarySource._tag) {
    case "local":
      writer = null
      break
    case "entering":
      writer = target.name
      break
    case "provider":
      writer = options.summarySource.provider
      break
    case "leaving":
      writer = runAt(state, decision.covered.to)?.provider ?? null
      break
  }
  return writer !== null && canSummarise(writer) ? (writer as ProviderName) : null
}
