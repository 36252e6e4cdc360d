/** Tunables of the runtime, with defaults a host can override. */
import { DEFAULT_HANDOFF_BUDGET_TOKENS } from "@skein/domain"
import { Context, Layer } from "effect"
import type { ProviderDeadlines } from "./actors/ProviderGuard.js"
import { defaultDeadlines } from "./actors/ProviderGuard.js"
import type { StalenessPolicy } from "./context/Staleness.js"
import { defaultStalenessPolicy } from "./context/Staleness.js"

export type { ProviderDeadlines } from "./actors/ProviderGuard.js"

export type SummarySource =
  | { readonly _tag: "local" }
  | { readonly _tag: "leaving" }
  | { readonly _tag: "entering" }
  | { readonly _tag: "provider"; readonly provider: string }

export interface RuntimeOptions {
  /** Idle time after which a thread actor passivates (default 60 s). */
  readonly passivateAfterMs: number
  /** Idle time after which a provider session closes (default 120 s). */
  readonly sessionIdleMs: number
  /** How long an interrupted turn may take before its process is killed (default 500 ms). */
  readonly interruptGraceMs: number
  /**
   * How long a run's reported items may wait to be recorded in one commit with what
   * follows them, most often the turn's end (default 50 ms; 0: each batch as it comes).
   * A Codex turn is then two commits instead of three: its last item's commit no longer
   * runs mid-turn beside the provider, though it moves onto the turn's end (+0.15 ms
   * there). Approval requests never wait.
   */
  readonly itemDelayMs: number
  readonly handoffBudgetTokens: number
  /** Who writes handoff summaries; the local deterministic summariser is always the fallback. */
  readonly summarySource: SummarySource
  /**
   * Per-call deadlines for provider adapters: a call that passes its deadline ends
   * the run as `failed` (`provider_timeout`) and its session is closed.
   */
  readonly deadlines: ProviderDeadlines
  /** Thresholds of the staleness policy (see context/Staleness). */
  readonly staleness: StalenessPolicy
  /**
   * Directories inside which thread workspaces must lie (real paths); null: any
   * directory but the filesystem root and the home directory itself.
   */
  readonly workspaceRoots: ReadonlyArray<string> | null
}

export const defaultRuntimeOptions: RuntimeOptions = {
  passivateAfterMs: 60_000,
  sessionIdleMs: 120_000,
  interruptGraceMs: 500,
  itemDelayMs: 50,
  handoffBudgetTokens: DEFAULT_HANDOFF_BUDGET_TOKENS,
  summarySource: { _tag: "local" },
  deadlines: defaultDeadlines,
  staleness: defaultStalenessPolicy,
  workspaceRoots: null
}

/** Options a host may give: any subset, deadlines too (`{ deadlines: { callMs: 5000 } }`). */
export type RuntimeOverrides = Partial<Omit<RuntimeOptions, "deadlines">> & {
  readonly deadlines?: Partial<ProviderDeadlines> | undefined
}

export const runtimeOptions = (overrides: RuntimeOverrides = {}): RuntimeOptions => ({
  ...defaultRuntimeOptions,
  ...overrides,
  deadlines: { ...defaultDeadlines, ...overrides.deadlines }
})

export class RuntimeConfig extends Context.Tag("@skein/runtime/RuntimeConfig")<RuntimeConfig, RuntimeOptions>() {
  static layer = (options: RuntimeOverrides = {}) => Layer.succeed(RuntimeConfig, runtimeOptions(options))
}
