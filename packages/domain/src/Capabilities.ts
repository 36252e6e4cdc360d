/**
 * What a provider instance can do. The runtime asks these questions and never
 * branches on which provider it is talking to.
 */
import { Schema } from "effect"

/** Where a handoff block goes in the provider's input. */
export const HandoffDelivery = Schema.Literal("system", "developer", "preamble", "synthetic_user")
export type HandoffDelivery = typeof HandoffDelivery.Type

export const ForkCapability = Schema.Literal("none", "latest", "at_turn")
export type ForkCapability = typeof ForkCapability.Type

export const RollbackCapability = Schema.Literal("none", "native")
export type RollbackCapability = typeof RollbackCapability.Type

export class ProviderCapabilities extends Schema.Class<ProviderCapabilities>("ProviderCapabilities")({
  /** The provider can continue one of its earlier native threads. */
  resume: Schema.Boolean,
  fork: ForkCapability,
  rollback: RollbackCapability,
  /**
   * Delivery channels the adapter accepts for a handoff block, preferred first.
   * Empty: the provider cannot receive handoff context at all.
   */
  handoffDelivery: Schema.Array(HandoffDelivery),
  /** The context window of the model, in tokens. */
  contextWindowTokens: Schema.Int.pipe(Schema.positive()),
  /** The adapter can write a handoff summary itself (leaving/entering/summary provider). */
  summarise: Schema.Boolean,
  /**
   * The provider takes a decision on an approval after the turn that asked for it has
   * ended. An agent whose turn waits for the answer (Codex, Claude Code) does not: once
   * the run is over, Skein refuses the decision itself, without asking the provider
   * (which could mean starting its process only to hear that it no longer waits).
   */
  approvalsOutliveTurn: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /**
   * The provider takes more of the user's input into a turn that is running (its
   * session's `steer`): `run.start` with `whenBusy: steer` goes there.
   */
  steer: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {}

export const defaultCapabilities = (
  overrides: Partial<ConstructorParameters<typeof ProviderCapabilities>[0]> = {}
): ProviderCapabilities =>
  ProviderCapabilities.make({
    resume: true,
    fork: "none",
    rollback: "none",
    handoffDelivery: ["developer"],
    contextWindowTokens: 200_000,
    summarise: false,
    ...overrides
  })
