/**
 * What a run is planned from: the context resolver's decision, and what the runtime
 * knows of the provider instance that takes the run.
 */
import type { ProviderCapabilities, ProviderName, ProviderThreadHead } from "@skein/domain"
import type { ContextDecision } from "../../context/ContextDecision.js"

/** What the runtime knows of a provider instance when planning. */
export interface ProviderInfo {
  readonly name: ProviderName
  readonly driver: string
  readonly capabilities: ProviderCapabilities
  readonly runtimeMode: string
  readonly model: string | null
}

/** The decisions a run can be planned from (an `unsupported` one is refused before). */
export type RunDecision = Exclude<ContextDecision, { readonly _tag: "unsupported" }>

/** A decision that carries context in a handoff. */
export type HandoffDecision = Extract<RunDecision, { readonly _tag: "delta" | "portable" }>

/** A provider thread the decision retires (marked stale with its reasons). */
export const retiredBy = (decision: RunDecision): ProviderThreadHead | null =>
  decision._tag === "none" || decision._tag === "portable" || decision._tag === "native" ? decision.replaces : null

/** The handoff part of a decision, when it has one. */
export const handoffOf = (decision: RunDecision): HandoffDecision | null =>
  decision._tag === "delta" || decision._tag === "portable" ? decision : null
