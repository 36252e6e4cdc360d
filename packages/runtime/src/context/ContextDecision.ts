/**
 * What the context resolver decides before a run, as data: how the target provider
 * learns what it has not seen (`ContextDecision`, one case per channel), and what the
 * decision is taken from beside the thread's own runs (what it inherited from its
 * source, the work coming in from other threads).
 */
import type {
  ContextTransfer,
  CoveredRunOrdinals,
  HandoffDelivery,
  HandoffKind,
  ProviderName,
  ProviderThreadHead,
  StalenessReason
} from "@skein/domain"
import { UnsupportedContextTransfer } from "@skein/domain"
import type { HandoffMaterial } from "./HandoffBuilder.js"

/**
 * A fork's (or a subagent child's) context from its source: the source's runs up to
 * the source point, as material, and the source's native continuation when there is one.
 */
export interface InheritedContext {
  readonly transfer: ContextTransfer
  /** Not delivered yet: no run of this thread has taken it in. */
  readonly open: boolean
  /** The source's native thread at the source turn, when a provider could fork it there. */
  readonly native: {
    readonly provider: ProviderName
    readonly nativeRef: string
    readonly turnRef: string
    /** The source turn is its native thread's newest (enough for `fork: "latest"`). */
    readonly isLatestTurn: boolean
  } | null
  readonly material: HandoffMaterial
  readonly kind: HandoffKind
  readonly strategy: "full_thread_summary" | "checkpoint_summary"
  /** A short name of the source for the handoff's lines, e.g. the thread id. */
  readonly label: string
}

/** Work to bring in from another thread: a fork merged back, a subagent's result. */
export interface IncomingTransfer {
  readonly transfer: ContextTransfer
  readonly material: HandoffMaterial
}

/** A handoff a run delivers beside its own (one per incoming transfer). */
export interface ExtraHandoff {
  readonly transfer: ContextTransfer
  readonly material: HandoffMaterial
  readonly kind: "delta_context"
  readonly strategy: "fork_delta"
}

interface Common {
  /** Staleness reasons that shaped the decision (empty when none applied). */
  readonly reasons: ReadonlyArray<StalenessReason>
  /** One or two sentences a user can read. */
  readonly explanation: string
  /** Handoffs delivered beside the decision's own: merged forks, subagent results. */
  readonly extras: ReadonlyArray<ExtraHandoff>
  /** The inherited transfer (a fork's, a child's) this run resolves, if any. */
  readonly resolves: ContextTransfer | null
}

/** The target already knows every live run (or there is none): no handoff. null = start a new provider thread. */
export interface ResolvedNone extends Common {
  readonly _tag: "none"
  readonly providerThread: ProviderThreadHead | null
  /** A provider thread retired by this decision (mark it stale with the reasons), if any. */
  readonly replaces: ProviderThreadHead | null
}

/** Fork the source's native thread at the source turn: the provider keeps the context itself. */
export interface ResolvedNative extends Common {
  readonly _tag: "native"
  /** Always a new provider thread: the fork's result. */
  readonly providerThread: null
  readonly replaces: ProviderThreadHead | null
  readonly fork: { readonly nativeRef: string; readonly turnRef: string }
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
  readonly providerThread: ProviderThreadHead
  readonly strategy: "delta_since_target_last_seen"
}

/** A full-thread summary, into the existing provider thread or a new one. */
export type ResolvedPortable = Common &
  WithHandoff & {
    readonly _tag: "portable"
    readonly strategy: "full_thread_summary" | "checkpoint_summary"
  } & (
    | { readonly into: "existing"; readonly providerThread: ProviderThreadHead; readonly replaces: null }
    | { readonly into: "new"; readonly providerThread: null; readonly replaces: ProviderThreadHead | null }
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
