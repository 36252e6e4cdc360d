/**
 * The one provider-agnostic hook before a run: how does the target provider learn
 * what it has not seen of this app thread? Pure and deterministic. Its answer, a
 * `ContextDecision` (ContextDecision.ts), is the one type the decision lives in from
 * here to the run's plan: the actor's planner records it as it is (retires and creates
 * provider threads, records the handoff assembled from the decision's own material),
 * and the run's driver delivers the handoff through the decision's channel.
 */
import type {
  CoveredRunOrdinals,
  HandoffDelivery,
  ProviderCapabilities,
  ProviderName,
  ProviderThreadHead,
  SettingsFingerprint,
  StalenessReason
} from "@skein/domain"
import type { ThreadState } from "../store/ThreadState.js"
import type {
  ContextDecision,
  ExtraHandoff,
  IncomingTransfer,
  InheritedContext,
  ResolvedUnsupported
} from "./ContextDecision.js"
import {
  chainedHandoffCount,
  contiguousRange,
  liveSpan,
  missingFor,
  nextRunOrdinal,
  targetProviderThread
} from "./Coverage.js"
import type { HandoffMaterial } from "./HandoffBuilder.js"
import { collectHandoffMaterial, combineMaterials, handoffMaterialTokens } from "./HandoffBuilder.js"
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
  /** What this thread inherited from its source (a fork's, a subagent's), when it has a source. */
  readonly inherited?: InheritedContext | null
  /** Transfers into this thread that the run takes in with the user's message, in creation order. */
  readonly incoming?: ReadonlyArray<IncomingTransfer>
}

const runsText = (r: CoveredRunOrdinals): string => (r.from === r.to ? `run ${r.from}` : `runs ${r.from}-${r.to}`)

/** Decides how the run's provider gets the context it lacks. */
export const resolveStartContext = (input: StartContextInput): ContextDecision => {
  const decision = resolveOwn(input)
  const incoming = input.incoming ?? []
  if (decision._tag === "unsupported" || incoming.length === 0) return decision
  if (input.capabilities.handoffDelivery[0] === undefined) {
    return {
      _tag: "unsupported",
      provider: input.provider,
      detail: `work from ${incoming.length} other thread(s) must be brought in, but "${input.provider}" accepts no handoff context (its handoffDelivery is empty)`,
      reasons: decision.reasons,
      explanation: `Cannot start: "${input.provider}" cannot receive the work merged into this thread.`,
      extras: [],
      resolves: null
    }
  }
  const extras = incoming.map(({ material, transfer }): ExtraHandoff => ({
    transfer,
    material,
    kind: "delta_context",
    strategy: "fork_delta"
  }))
  return {
    ...decision,
    extras,
    explanation: `${decision.explanation} It also brings in the work of ${extras.length} other thread(s).`
  }
}

/** What a decision about the thread's own runs is taken from. */
interface Resolving {
  readonly input: StartContextInput
  /** The run being started. */
  readonly ordinal: number
  /** The live runs before it, if any. */
  readonly history: CoveredRunOrdinals | null
  /** The provider's first handoff channel; none when it takes no handoff. */
  readonly delivery: HandoffDelivery | undefined
  /** The provider thread a run on this provider would continue. */
  readonly target: ProviderThreadHead | null
  readonly inherited: InheritedContext | null
}

/** A decision about this thread alone: no handoffs beside its own, no transfer resolved. */
const ownOnly = { extras: [], resolves: null } as const

const unsupported = (
  { input: { provider } }: Resolving,
  reasons: ReadonlyArray<StalenessReason>,
  why: string
): ResolvedUnsupported => ({
  _tag: "unsupported",
  provider,
  detail: `${why}, but "${provider}" accepts no handoff context (its handoffDelivery is empty)`,
  reasons,
  explanation: `Cannot start: ${why} and "${provider}" cannot receive handoff context.`,
  ...ownOnly
})

/** A full summary for a new provider thread: what the thread inherited, then its own runs. */
const fullMaterial = ({
  history,
  inherited,
  input: { state }
}: Resolving): { material: HandoffMaterial; covered: CoveredRunOrdinals } | null => {
  const own =
    history === null
      ? null
      : collectHandoffMaterial(state, {
          fromOrdinal: history.from,
          toOrdinal: history.to,
          strategy: "full_thread_summary"
        })
  if (inherited === null) return own === null || history === null ? null : { material: own, covered: history }
  const covered = history ?? { from: 1, to: 0 }
  // The inherited material's lines already name the threads they come from.
  const parts: Array<{ readonly label: string | null; readonly material: HandoffMaterial }> = [
    { label: null, material: inherited.material }
  ]
  if (own !== null) parts.push({ label: null, material: own })
  return {
    covered,
    material: combineMaterials(parts, {
      strategy: inherited.strategy,
      from: covered.from,
      to: covered.to,
      subject:
        own === null
          ? `what this conversation starts from: ${inherited.label} up to its source point`
          : `this conversation so far (${runsText(covered)}), after what it took from ${inherited.label}`
    })
  }
}

/** A new provider thread, given a full summary of what there is to know (nothing, if nothing is). */
const fresh = (
  r: Resolving,
  reasons: ReadonlyArray<StalenessReason>,
  replaces: ProviderThreadHead | null,
  why: string
): ContextDecision => {
  const { delivery, history, inherited } = r
  const { provider } = r.input
  const full = fullMaterial(r)
  const resolves = inherited?.open ? inherited.transfer : null
  if (full === null) {
    return {
      _tag: "none",
      providerThread: null,
      replaces,
      reasons,
      explanation: `${why}: start a new ${provider} provider thread; there is no earlier run to summarise.`,
      ...ownOnly
    }
  }
  const what = history === null ? `what it inherited from ${inherited?.label ?? "its source"}` : runsText(full.covered)
  if (delivery === undefined)
    return unsupported(r, reasons, `a new ${provider} provider thread needs a summary of ${what}`)
  return {
    _tag: "portable",
    into: "new",
    providerThread: null,
    replaces,
    kind: inherited !== null && history === null ? inherited.kind : "portable_context",
    strategy: inherited !== null && history === null ? inherited.strategy : "full_thread_summary",
    covered: full.covered,
    delivery,
    material: full.material,
    reasons,
    explanation: `${why}: start a new ${provider} provider thread with a full summary of ${what}${inherited !== null && history !== null ? ` (after what it inherited from ${inherited.label})` : ""}.`,
    extras: [],
    resolves
  }
}

/**
 * The first run of a fork or a child takes in what it inherited: natively when the
 * same provider can fork the source's own thread at the source turn, else portably.
 */
const takeInherited = (r: Resolving, inherited: InheritedContext): ContextDecision => {
  const { capabilities, provider, resumeFailed } = r.input
  const native = inherited.native
  const forkable = capabilities.fork === "at_turn" || (capabilities.fork === "latest" && native?.isLatestTurn === true)
  if (native !== null && native.provider === provider && forkable && !resumeFailed) {
    return {
      _tag: "native",
      providerThread: null,
      replaces: r.target,
      fork: { nativeRef: native.nativeRef, turnRef: native.turnRef },
      reasons: [],
      explanation: `Fork ${provider}'s own thread of ${inherited.label} at the source turn: the provider keeps the context natively.`,
      extras: [],
      resolves: inherited.transfer
    }
  }
  return fresh(
    r,
    resumeFailed ? ["resume_failed"] : [],
    r.target,
    `this thread takes in what it inherited from ${inherited.label}`
  )
}

/**
 * The provider thread `target` continues, told what it missed: nothing, a delta for one
 * stretch, or a full summary for several; unless it is stale, and a new one starts.
 */
const continueTarget = (r: Resolving, target: ProviderThreadHead): ContextDecision => {
  const { delivery, input, ordinal } = r
  const { provider, state } = input
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
    capabilities: input.capabilities,
    settings: input.settings,
    missingRuns: missing.length,
    chainedHandoffs: chainedHandoffCount(state, target),
    deltaTokens,
    budgetTokens: clampHandoffBudget(input.budgetTokens),
    cleanContext: input.cleanContext,
    resumeFailed: input.resumeFailed,
    policy: input.policy
  })

  if (reasons.length > 0) {
    return fresh(r, reasons, target, `${provider} provider thread ${target.id} is stale (${describeReasons(reasons)})`)
  }
  if (missing.length === 0) {
    return {
      _tag: "none",
      providerThread: target,
      replaces: null,
      reasons,
      explanation: `${provider} provider thread ${target.id} already covers every run: resume it with no handoff.`,
      ...ownOnly
    }
  }
  if (range !== null && deltaMaterial !== null) {
    if (delivery === undefined) return unsupported(r, reasons, `${provider} missed ${runsText(range)}`)
    return {
      _tag: "delta",
      providerThread: target,
      kind: "delta_context",
      strategy: "delta_since_target_last_seen",
      covered: range,
      delivery,
      material: deltaMaterial,
      reasons,
      explanation: `Resume ${provider} provider thread ${target.id} with a delta handoff for ${runsText(range)}, which it missed.`,
      ...ownOnly
    }
  }
  // Missed runs in more than one stretch: a full summary into the same provider thread.
  const span = r.history!
  if (delivery === undefined) return unsupported(r, reasons, `${provider} missed runs in several places`)
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
      `resume it with a full summary of ${runsText(span)}.`,
    ...ownOnly
  }
}

/** The decision about this thread's own runs and inheritance (no incoming work yet). */
const resolveOwn = (input: StartContextInput): ContextDecision => {
  const { provider, state } = input
  const ordinal = input.runOrdinal ?? nextRunOrdinal(state)
  const r: Resolving = {
    input,
    ordinal,
    history: liveSpan(state, ordinal),
    delivery: input.capabilities.handoffDelivery[0],
    target: targetProviderThread(state, provider),
    inherited: input.inherited ?? null
  }
  if (r.inherited?.open) return takeInherited(r, r.inherited)
  if (r.target === null) {
    return fresh(
      r,
      input.cleanContext ? ["clean_context"] : [],
      null,
      `${provider} has no provider thread on this thread yet`
    )
  }
  return continueTarget(r, r.target)
}
