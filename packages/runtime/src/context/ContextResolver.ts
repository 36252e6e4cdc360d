/**
 * The one provider-agnostic hook before a run: how does the target provider learn
 * what it has not seen of this app thread? Pure and deterministic. Its answer, a
 * `ContextDecision`, is the one type the decision lives in from here to the run's
 * plan: the actor's planner records it as it is (retires and creates provider
 * threads, records the handoff assembled from the decision's own material), and the
 * run's driver delivers the handoff through the decision's channel.
 */
import type {
  CoveredRunOrdinals,
  HandoffDelivery,
  HandoffKind,
  NativeTurnRef,
  ProviderCapabilities,
  ProviderName,
  ProviderThread,
  SettingsFingerprint,
  StalenessReason
} from "@skein/domain"
import { UnsupportedContextTransfer } from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import {
  chainedHandoffCount,
  contiguousRange,
  liveSpan,
  missingFor,
  nextRunOrdinal,
  targetProviderThread
} from "./Coverage.js"
import type { HandoffMaterial } from "./HandoffBuilder.js"
import { collectHandoffMaterial, handoffMaterialTokens } from "./HandoffBuilder.js"
import type { StalenessPolicy } from "./Staleness.js"
import { describeReasons, stalenessReasons } from "./Staleness.js"
import { clampHandoffBudget } from "./Tokens.js"

export interface StartContextInput {
  readonly state: ThreadState
  readonly provider: ProviderName
  readonly capabilities: ProviderCapabilities
  /** The settings the run asks for (model null: no preference). */
  readonly settings: SettingsFingerprint
  readonly cleanContext: boolean
  /** The caller tried to resume the target provider thread and it failed. */
  readonly resumeFailed: boolean
  readonly budgetTokens: number
  readonly policy: StalenessPolicy
  /** The run being started; default: the queued/running run, else one past the last run. */
  readonly runOrdinal?: number
}

interface Common {
  /** Staleness reasons that shaped the decision (empty when none applied). */
  readonly reasons: ReadonlyArray<StalenessReason>
  /** One or two sentences a user can read. */
  readonly explanation: string
}

/** The target already knows every live run (or there is none): no handoff. null = start a new provider thread. */
export interface ResolvedNone extends Common {
  readonly _tag: "none"
  readonly providerThread: ProviderThread | null
  /** A provider thread retired by this decision (mark it stale with the reasons), if any. */
  readonly replaces: ProviderThread | null
}

/** Native fork/resume at a source turn (forks; not produced for plain runs). */
export interface ResolvedNative extends Common {
  readonly _tag: "native"
  readonly providerThread: ProviderThread
  readonly sourceTurnRef: typeof NativeTurnRef.Type
}

/** What a decision that needs a handoff carries: which runs, how, and the material, collected once. */
interface WithHandoff {
  readonly kind: HandoffKind
  readonly covered: CoveredRunOrdinals
  /** The channel the target's adapter takes the block through (its first preference). */
  readonly delivery: HandoffDelivery
  readonly material: HandoffMaterial
}

/** Resume the target and inject a handoff for the runs it missed. */
export interface ResolvedDelta extends Common, WithHandoff {
  readonly _tag: "delta"
  readonly providerThread: ProviderThread
  readonly strategy: "delta_since_target_last_seen"
}

/** A full-thread summary, into the existing provider thread or a new one. */
export type ResolvedPortable = Common &
  WithHandoff & {
    readonly _tag: "portable"
    readonly strategy: "full_thread_summary"
  } & (
    | { readonly into: "existing"; readonly providerThread: ProviderThread; readonly replaces: null }
    | { readonly into: "new"; readonly providerThread: null; readonly replaces: ProviderThread | null }
  )

/** A handoff is needed but the provider cannot receive one: fail before any provider work. */
export interface ResolvedUnsupported extends Common {
  readonly _tag: "unsupported"
  readonly provider: ProviderName
  readonly detail: string
}

export type ContextDecision = ResolvedNone | ResolvedNative | ResolvedDelta | ResolvedPortable | ResolvedUnsupported

/** The typed error for an `unsupported` decision. */
export const unsupportedContextError = (resolution: ResolvedUnsupported): UnsupportedContextTransfer =>
  new UnsupportedContextTransfer({ provider: resolution.provider, detail: resolution.detail })

const runsText = (r: CoveredRunOrdinals): string => (r.from === r.to ? `run ${r.from}` : `runs ${r.from}-${r.to}`)

/** Decides how the run's provider gets the context it lacks. */
export const resolveStartContext = (input: StartContextInput): ContextDecision => {
  const { state, provider, capabilities } = input
  const ordinal = input.runOrdinal ?? nextRunOrdinal(state)
  const budget = clampHandoffBudget(input.budgetTokens)
  const history = liveSpan(state, ordinal)
  const delivery = capabilities.handoffDelivery[0]
  const target = targetProviderThread(state, provider)

  const unsupported = (reasons: ReadonlyArray<StalenessReason>, why: string): ResolvedUnsupported => ({
    _tag: "unsupported",
    provider,
    detail: `${why}, but "${provider}" accepts no handoff context (its handoffDelivery is empty)`,
    reasons,
    explanation: `Cannot start: ${why} and "${provider}" cannot receive handoff context.`
  })

  const fresh = (
    reasons: ReadonlyArray<StalenessReason>,
    replaces: ProviderThread | null,
    why: string
  ): ContextDecision => {
    if (history === null) {
      return {
        _tag: "none",
        providerThread: null,
        replaces,
        reasons,
        explanation: `${why}: start a new ${provider} provider thread; there is no earlier run to summarise.`
      }
    }
    if (delivery === undefined)
      return unsupported(reasons, `a new ${provider} provider thread needs a summary of ${runsText(history)}`)
    return {
      _tag: "portable",
      into: "new",
      providerThread: null,
      replaces,
      kind: "portable_context",
      strategy: "full_thread_summary",
      covered: history,
      delivery,
      material: collectHandoffMaterial(state, {
        fromOrdinal: history.from,
        toOrdinal: history.to,
        strategy: "full_thread_summary"
      }),
      reasons,
      explanation: `${why}: start a new ${provider} provider thread with a full summary of ${runsText(history)}.`
    }
  }

  if (target === null) {
    return fresh(
      input.cleanContext ? ["clean_context"] : [],
      null,
      `${provider} has no provider thread on this thread yet`
    )
  }

  const missing = missingFor(state, target, ordinal)
  const range = contiguousRange(state, missing)
  // A delta is only possible for one contiguous stretch; its size is what the budget
  // judges, and the same material is what the handoff is assembled from.
  const deltaMaterial =
    range === null
      ? null
      : collectHandoffMaterial(state, {
          fromOrdinal: range.from,
          toOrdinal: range.to,
          strategy: "delta_since_target_last_seen"
        })
  const deltaTokens = deltaMaterial === null ? 0 : handoffMaterialTokens(deltaMaterial)
  const reasons = stalenessReasons({
    providerThread: target,
    capabilities,
    settings: input.settings,
    missingRuns: missing.length,
    chainedHandoffs: chainedHandoffCount(state, target),
    deltaTokens,
    budgetTokens: budget,
    cleanContext: input.cleanContext,
    resumeFailed: input.resumeFailed,
    policy: input.policy
  })

  if (reasons.length > 0) {
    return fresh(reasons, target, `${provider} provider thread ${target.id} is stale (${describeReasons(reasons)})`)
  }
  if (missing.length === 0) {
    return {
      _tag: "none",
      providerThread: target,
      replaces: null,
      reasons,
      explanation: `${provider} provider thread ${target.id} already covers every run: resume it with no handoff.`
    }
  }
  if (range !== null && deltaMaterial !== null) {
    if (delivery === undefined) return unsupported(reasons, `${provider} missed ${runsText(range)}`)
    return {
      _tag: "delta",
      providerThread: target,
      kind: "delta_context",
      strategy: "delta_since_target_last_seen",
      covered: range,
      delivery,
      material: deltaMaterial,
      reasons,
      explanation: `Resume ${provider} provider thread ${target.id} with a delta handoff for ${runsText(range)}, which it missed.`
    }
  }
  // Missed runs in more than one stretch: a full summary into the same provider thread.
  const span = history!
  if (delivery === undefined) return unsupported(reasons, `${provider} missed runs in several places`)
  return {
    _tag: "portable",
    into: "existing",
    providerThread: target,
    replaces: null,
    kind: "portable_context",
    strategy: "full_thread_summary",
    covered: span,
    delivery,
    material: collectHandoffMaterial(state, {
      fromOrdinal: span.from,
      toOrdinal: span.to,
      strategy: "full_thread_summary"
    }),
    reasons,
    explanation:
      `${provider} provider thread ${target.id} missed ${missing.length} runs in several stretches: ` +
      `resume it with a full summary of ${runsText(span)}.`
  }
}
