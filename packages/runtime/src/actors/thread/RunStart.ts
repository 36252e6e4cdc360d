/**
 * How a run's context is decided, the same for a run start and for a run whose
 * provider could not resume its thread (`ResumeFailed`): the provider's description,
 * what the thread inherited, the context core's decision (refused as
 * `UnsupportedContextTransfer` when the provider cannot take it), the local handoff
 * drafted from it, and which provider, if any, should write its summary instead.
 */
import type { ProviderAdapter, RunId, SkeinError } from "@skein/domain"
import { UnsupportedContextTransfer } from "@skein/domain"
import { Effect } from "effect"
import type { ContextDecision, IncomingTransfer, InheritedContext } from "../../context/ContextDecision.js"
import type { BuiltHandoff } from "../../context/HandoffBuilder.js"
import { loadInherited } from "../../lineage/LineageContext.js"
import { decideContext, localHandoff, summaryWriter } from "../ContextPlanning.js"
import type { ProviderInfo } from "../ThreadPlanner.js"
import type { ThreadContext } from "./ThreadContext.js"
import { capabilitiesOf, infoOf } from "./ThreadContext.js"

/** What this thread inherited, read from its source once per actor (it does not change). */
export type InheritedCache = Map<string, Omit<InheritedContext, "transfer" | "open">>

export interface StartDecision {
  readonly provider: ProviderInfo
  readonly decision: Exclude<ContextDecision, { readonly _tag: "unsupported" }>
  readonly draft: BuiltHandoff | null
  readonly summaryBy: ProviderInfo["name"] | null
}

export const decideStart = Effect.fnUntraced(function* (
  ctx: ThreadContext,
  inheritedCache: InheritedCache,
  input: {
    readonly adapter: ProviderAdapter
    readonly model: string | null | undefined
    readonly cleanContext: boolean
    readonly resumeFailed: boolean
    readonly budgetTokens: number
    /** Re-planning a run already recorded (resume fallback). */
    readonly forRun?: RunId
    readonly incoming?: ReadonlyArray<IncomingTransfer>
  }
): Effect.fn.Return<StartDecision, SkeinError> {
  const { cell, config } = ctx
  const provider = infoOf(input.adapter)
  const inherited = yield* loadInherited(ctx.store, cell.state(), inheritedCache)
  const decision = yield* cell.demand((s) =>
    decideContext(s, {
      provider,
      model: input.model ?? input.adapter.model,
      cleanContext: input.cleanContext,
      resumeFailed: input.resumeFailed,
      budgetTokens: input.budgetTokens,
      options: config,
      inherited,
      ...(input.forRun === undefined ? {} : { forRun: input.forRun }),
      ...(input.incoming === undefined ? {} : { incoming: input.incoming })
    })
  )
  if (decision._tag === "unsupported") {
    return yield* new UnsupportedContextTransfer({ provider: input.adapter.name, detail: decision.detail })
  }
  const draft = localHandoff(decision, input.budgetTokens)
  const canSummarise = (name: string) => capabilitiesOf(ctx.sessions, name)?.summarise ?? false
  const summaryBy =
    draft === null ? null : yield* cell.demand((s) => summaryWriter(s, decision, provider, config, canSummarise))
  return { provider, decision, draft, summaryBy }
})
