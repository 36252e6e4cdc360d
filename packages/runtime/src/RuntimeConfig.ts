/**
 * Tunables of the runtime, with defaults a host can override. What a host overrides is
 * checked when the runtime's layer is built: a duration that is negative, not a
 * number, or longer than a Node timer can wait (longer ones fire at once), a handoff
 * budget out of range, or a staleness threshold out of its range is `InvalidInput`
 * naming the option, and the runtime does not start.
 */
import { DEFAULT_HANDOFF_BUDGET_TOKENS, formatParseError, HandoffBudgetTokens, InvalidInput } from "@skein/domain"
import { Context, Effect, Either, Layer, Schema } from "effect"
import { StalenessPolicy } from "./context/Staleness.js"
import { defaultStalenessPolicy } from "./context/Staleness.js"

/** How long a provider may take for each kind of call before the guard fails it (ProviderGuard). */
export interface ProviderDeadlines {
  /** openSession: starting a provider process and its handshake. */
  readonly openMs: number
  /** startThread, resumeThread, forkThread, rollbackThread, respondApproval. */
  readonly callMs: number
  /** How long the provider may take to acknowledge an interrupt request. */
  readonly interruptMs: number
  /** From sending a turn until its first event. */
  readonly firstEventMs: number
  /** Between two events of a turn (a turn that goes silent this long has hung). */
  readonly idleMs: number
  /** A provider writing a handoff summary (the local summariser takes over after it). */
  readonly summaryMs: number
}

export const defaultDeadlines: ProviderDeadlines = {
  openMs: 60_000,
  callMs: 60_000,
  interruptMs: 5_000,
  firstEventMs: 120_000,
  idleMs: 600_000,
  summaryMs: 10_000
}

export const SummarySource = Schema.Union(
  Schema.TaggedStruct("local", {}),
  Schema.TaggedStruct("leaving", {}),
  Schema.TaggedStruct("entering", {}),
  Schema.TaggedStruct("provider", { provider: Schema.String })
)
export type SummarySource = typeof SummarySource.Type

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
   * there). The adapter holds the items (`TurnInput.itemDelayMs`), so the run's driver
   * is not woken for each. Approval requests never wait. Items still held do not count
   * as the turn's activity for `deadlines.idleMs`: keep this well below it (the
   * defaults are 50 ms and 10 minutes).
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
  /** Git checkpoints of workspaces that are repositories. */
  readonly checkpoints: CheckpointOptions
}

export interface CheckpointOptions {
  /**
   * A file larger than this is left out of a checkpoint (never written into the user's
   * repository) and recorded as omitted; a restore leaves it alone (default 50 MiB).
   */
  readonly maxFileBytes: number
  /**
   * How many of a thread's newest run checkpoints keep their refs; older ones are
   * pruned after each capture, and a rollback can no longer restore their files
   * (default null: all are kept).
   */
  readonly keepRuns: number | null
}

export const defaultCheckpointOptions: CheckpointOptions = { maxFileBytes: 50 * 1024 * 1024, keepRuns: null }

export const defaultRuntimeOptions: RuntimeOptions = {
  passivateAfterMs: 60_000,
  sessionIdleMs: 120_000,
  interruptGraceMs: 500,
  itemDelayMs: 50,
  handoffBudgetTokens: DEFAULT_HANDOFF_BUDGET_TOKENS,
  summarySource: { _tag: "local" },
  deadlines: defaultDeadlines,
  staleness: defaultStalenessPolicy,
  workspaceRoots: null,
  checkpoints: defaultCheckpointOptions
}

/** Options a host may give: any subset, deadlines too (`{ deadlines: { callMs: 5000 } }`). */
export type RuntimeOverrides = Partial<Omit<RuntimeOptions, "deadlines" | "checkpoints">> & {
  readonly deadlines?: Partial<ProviderDeadlines> | undefined
  readonly checkpoints?:
    { readonly maxFileBytes?: number | undefined; readonly keepRuns?: number | null | undefined } | undefined
}

export const runtimeOptions = (overrides: RuntimeOverrides = {}): RuntimeOptions => ({
  ...defaultRuntimeOptions,
  ...overrides,
  deadlines: { ...defaultDeadlines, ...overrides.deadlines },
  checkpoints: {
    maxFileBytes: overrides.checkpoints?.maxFileBytes ?? defaultCheckpointOptions.maxFileBytes,
    keepRuns:
      overrides.checkpoints?.keepRuns === undefined ? defaultCheckpointOptions.keepRuns : overrides.checkpoints.keepRuns
  }
})

/** The longest delay a Node timer waits (2^31 - 1 ms, some 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647
const Millis = Schema.Number.pipe(Schema.finite(), Schema.between(0, MAX_TIMER_MS))
const optional = Schema.optional

/**
 * What a host may override, as a schema: the check of `RuntimeConfig.layer`. One field
 * per option of `RuntimeOptions`, and one per deadline (the compiler holds it to that).
 */
const Overrides = Schema.Struct({
  passivateAfterMs: optional(Millis),
  sessionIdleMs: optional(Millis),
  interruptGraceMs: optional(Millis),
  itemDelayMs: optional(Millis),
  handoffBudgetTokens: optional(HandoffBudgetTokens),
  summarySource: optional(SummarySource),
  deadlines: optional(
    Schema.Struct({
      openMs: optional(Millis),
      callMs: optional(Millis),
      interruptMs: optional(Millis),
      firstEventMs: optional(Millis),
      idleMs: optional(Millis),
      summaryMs: optional(Millis)
    } satisfies Record<keyof ProviderDeadlines, Schema.Struct.Field>)
  ),
  staleness: optional(Schema.typeSchema(StalenessPolicy)),
  workspaceRoots: optional(Schema.NullOr(Schema.Array(Schema.String))),
  checkpoints: optional(
    Schema.Struct({
      maxFileBytes: optional(Schema.Int.pipe(Schema.between(1, Number.MAX_SAFE_INTEGER))),
      keepRuns: optional(Schema.NullOr(Schema.Int.pipe(Schema.between(1, 1_000_000))))
    } satisfies Record<keyof CheckpointOptions, Schema.Struct.Field>)
  )
} satisfies Record<keyof RuntimeOptions, Schema.Struct.Field>).annotations({ identifier: "RuntimeOverrides" })
const checkOverrides = Schema.validateEither(Overrides)

export class RuntimeConfig extends Context.Tag("@skein/runtime/RuntimeConfig")<RuntimeConfig, RuntimeOptions>() {
  static layer = (options: RuntimeOverrides = {}): Layer.Layer<RuntimeConfig, InvalidInput> =>
    Layer.effect(
      RuntimeConfig,
      Either.match(checkOverrides(options), {
        onLeft: (error) => Effect.fail(new InvalidInput({ detail: `runtime options: ${formatParseError(error)}` })),
        onRight: () => Effect.succeed(runtimeOptions(options))
      })
    )
}
