/**
 * The staleness policy: named, recorded reasons why an earlier provider thread should
 * not be resumed, so that the run starts a fresh provider thread from a full summary.
 */
import type {
  ProviderCapabilities,
  ProviderThread,
  ProviderThreadHead,
  SettingsFingerprint,
  StalenessReason
} from "@skein/domain"
import { Schema } from "effect"

/** Thresholds of the staleness policy. Decode `{}` (or a config object) to get the defaults. */
export const StalenessPolicy = Schema.Struct({
  /** More live runs than this since the target last took part: stale. */
  maxForeignRuns: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 50 }),
  /** More delta handoffs than this since its last full summary (or its start): stale. */
  maxChainedHandoffs: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 8 }),
  /** A delta larger than this fraction of the handoff budget: stale. */
  deltaBudgetFraction: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(1)), {
    default: () => 1
  })
})
export type StalenessPolicy = typeof StalenessPolicy.Type

export const defaultStalenessPolicy: StalenessPolicy = Schema.decodeUnknownSync(StalenessPolicy)({})

/** Provider thread statuses that rule out resuming it. */
export const unusableProviderThreadStatuses: ReadonlyArray<ProviderThread["status"]> = [
  "divergent",
  "rolled_back",
  "stale",
  "failed"
]

/** The facts the policy judges, gathered by the resolver (cheaply: they follow the gap). */
export interface StalenessInput {
  readonly providerThread: ProviderThreadHead
  readonly capabilities: Pick<ProviderCapabilities, "resume">
  /** What the run asks for. A null model means "no preference" and never conflicts. */
  readonly settings: SettingsFingerprint
  /** Live runs since the target last took part (the runs it missed). */
  readonly missingRuns: number
  /** Delta handoffs it received since its last full summary or its start. */
  readonly chainedHandoffs: number
  /** Estimated tokens of a delta handoff for the missed runs (0 when none). */
  readonly deltaTokens: number
  readonly budgetTokens: number
  readonly cleanContext: boolean
  readonly resumeFailed: boolean
  readonly policy: StalenessPolicy
}

/** Every staleness reason that applies, in the canonical order of `StalenessReason`. Empty: resumable. */
export const stalenessReasons = (input: StalenessInput): ReadonlyArray<StalenessReason> => {
  const { policy, providerThread: pt } = input
  const reasons: Array<StalenessReason> = []
  if (input.missingRuns > policy.maxForeignRuns) reasons.push("too_many_foreign_runs")
  if (input.chainedHandoffs > policy.maxChainedHandoffs) reasons.push("too_many_chained_handoffs")
  if (settingsIncompatible(pt.settings, input.settings)) reasons.push("settings_incompatible")
  if (input.resumeFailed) reasons.push("resume_failed")
  if (unusableProviderThreadStatuses.includes(pt.status)) reasons.push("divergent")
  if (input.cleanContext) reasons.push("clean_context")
  if (input.missingRuns > 0 && input.deltaTokens > Math.floor(input.budgetTokens * policy.deltaBudgetFraction)) {
    reasons.push("delta_over_budget")
  }
  if (!input.capabilities.resume && input.missingRuns > 0) reasons.push("resume_unsupported")
  return reasons
}

/** The requested model differs from the thread's (when one is requested), or the runtime mode differs. */
export const settingsIncompatible = (thread: SettingsFingerprint, requested: SettingsFingerprint): boolean =>
  (requested.model !== null && requested.model !== thread.model) || requested.runtimeMode !== thread.runtimeMode

const reasonText: Record<StalenessReason, string> = {
  too_many_foreign_runs: "too many runs happened elsewhere since it last took part",
  too_many_chained_handoffs: "it has received too many chained delta handoffs",
  settings_incompatible: "the requested model or runtime mode differs from its settings",
  resume_failed: "resuming it failed",
  divergent: "it was rolled back, diverged or failed",
  clean_context: "a clean context was requested",
  delta_over_budget: "the delta would exceed the context budget",
  resume_unsupported: "the provider cannot resume it and it missed runs"
}

/** A short human phrase for each reason, joined. */
export const describeReasons = (reasons: ReadonlyArray<StalenessReason>): string =>
  reasons.map((r) => reasonText[r]).join("; ")
