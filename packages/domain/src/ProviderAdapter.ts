/**
 * The provider port. The runtime sees providers only through this interface and
 * asks about capabilities; adapters (scripted, Codex, Claude …) implement it.
 */
import { Context, Schema } from "effect"
import type { Effect, Scope } from "effect"
import type { ProviderCapabilities, HandoffDelivery } from "./Capabilities.js"
import type { Autonomy } from "./Autonomy.js"
import type { ApprovalDecision } from "./Commands.js"
import type { ProviderFailure } from "./Errors.js"
import type { HandoffPayload } from "./Handoff.js"
import type { ContextHandoffId, ProviderName, RunId } from "./Ids.js"
import type { NativeRefStrength } from "./ProviderThread.js"
import { TurnUsage } from "./Run.js"
import { TurnItemContent } from "./TurnItem.js"
import type { ProviderBinaryInfo } from "./Views.js"

/** What a provider reports while a turn runs. */
export const ProviderEvent = Schema.Union(
  Schema.TaggedStruct("TurnStarted", {
    turnRef: Schema.String,
    /** When the provider process received the turn (epoch ms, sub-ms precision), if it says. */
    receivedAt: Schema.optional(Schema.Number)
  }),
  Schema.TaggedStruct("Item", { item: TurnItemContent }),
  Schema.TaggedStruct("TurnCompleted", {
    turnRef: Schema.String,
    /** What the turn cost, when the provider reports it. */
    usage: Schema.optional(TurnUsage)
  }),
  Schema.TaggedStruct("TurnInterrupted", { turnRef: Schema.String }),
  /** The provider called the app tool `spawn_subagent`. */
  Schema.TaggedStruct("SubagentRequested", { provider: Schema.String, prompt: Schema.String })
)
export type ProviderEvent = typeof ProviderEvent.Type

export interface NativeThreadHandle {
  readonly nativeRef: string
  readonly strength: NativeRefStrength
}

/** A handoff block, delivered separately from the user's message. */
export interface HandoffBlock {
  readonly handoffId: ContextHandoffId
  readonly delivery: HandoffDelivery
  readonly text: string
}

export interface TurnInput {
  readonly nativeRef: string
  readonly runId: RunId
  /** The user's message: the run's real input. */
  readonly message: string
  readonly handoff: HandoffBlock | null
  readonly model: string | null
  readonly workspace: string | null
  /**
   * How long the adapter may hold the turn's plain items, to hand them over with what
   * follows them (most often the turn's end) rather than one batch each; absent or 0:
   * each as it comes. Whatever the runtime acts on goes at once, after what is held:
   * the turn's start and end, approval requests, subagent requests, a failure. A turn
   * stopped before its end still hands over what it holds.
   */
  readonly itemDelayMs?: number
}

export interface SummariseRequest {
  readonly payload: HandoffPayload
  readonly budgetTokens: number
}

/** Where a running turn's events go: one batch at a time, in order. */
export type TurnEventSink<E> = (events: ReadonlyArray<ProviderEvent>) => Effect.Effect<void, E>

/** Where an agent reaches Skein's own tools (MCP) for its app thread, and the credential it presents. */
export interface AgentTools {
  readonly url: string
  readonly token: string
}

/** What a native thread is started, resumed or forked with. */
export interface NativeThreadOptions {
  /** Skein's tools, for an agent that can call MCP tools; absent where none are served. */
  readonly tools?: AgentTools | undefined
}

/** A live provider process (or connection). Closing the scope that opened it stops it. */
export interface ProviderSessionHandle {
  readonly pid: number | null
  readonly startThread: (
    options: {
      readonly workspace: string | null
      readonly model: string | null
    } & NativeThreadOptions
  ) => Effect.Effect<NativeThreadHandle, ProviderFailure>
  /** Make an earlier native thread current; fails with kind `resume_failed` if it cannot. */
  readonly resumeThread: (nativeRef: string, options?: NativeThreadOptions) => Effect.Effect<void, ProviderFailure>
  /** Fork a native thread, at (and including) a turn when `atTurnRef` is given. */
  readonly forkThread: (
    nativeRef: string,
    atTurnRef: string | null,
    options?: NativeThreadOptions
  ) => Effect.Effect<NativeThreadHandle, ProviderFailure>
  /** Drop `beforeTurnRef` and every later turn of the native thread. */
  readonly rollbackThread: (nativeRef: string, beforeTurnRef: string) => Effect.Effect<void, ProviderFailure>
  /**
   * Run one turn, handing its events to `onEvents` in order, a batch at a time as they
   * arrive (the next batch waits for the previous one's effect). It ends after the
   * batch that holds TurnCompleted or TurnInterrupted, or fails; a failure of
   * `onEvents` ends it with that failure. Interrupted before the turn ended, it asks
   * the provider to interrupt the turn.
   */
  readonly runTurn: <E>(input: TurnInput, onEvents: TurnEventSink<E>) => Effect.Effect<void, ProviderFailure | E>
  /**
   * Add the user's message to the turn running on that native thread (only with
   * `capabilities.steer`): the turn's events go on as the provider takes it in, and the
   * turn ends once it has answered it. Fails with code `turn_not_running` when no turn
   * runs there.
   */
  readonly steer?: (nativeRef: string, message: string) => Effect.Effect<void, ProviderFailure>
  /** Ask the provider to interrupt its current turn on that thread. */
  readonly interrupt: (nativeRef: string) => Effect.Effect<void, ProviderFailure>
  readonly respondApproval: (
    nativeRef: string,
    approvalId: string,
    decision: ApprovalDecision
  ) => Effect.Effect<void, ProviderFailure>
  /** Write a handoff summary from structured material (only with `capabilities.summarise`). */
  readonly summarise: (request: SummariseRequest) => Effect.Effect<string, ProviderFailure>
  /** Completes when the process has exited, for whatever reason. */
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }>
}

export interface ProviderAdapter {
  readonly name: ProviderName
  readonly driver: string
  readonly capabilities: ProviderCapabilities
  /** Part of the settings fingerprint: a change may make old native threads unusable. */
  readonly runtimeMode: string
  /** How freely its agent acts (default `defaultAutonomy`): a subagent's may not exceed its parent's. */
  readonly autonomy?: Autonomy | undefined
  readonly model: string | null
  readonly openSession: (options: {
    readonly workspace: string | null
  }) => Effect.Effect<ProviderSessionHandle, ProviderFailure, Scope.Scope>
  /**
   * For instances that run an external agent executable: where it is, its version,
   * and whether it can be used. Never fails; cheap after the first call.
   */
  readonly probe?: Effect.Effect<ProviderBinaryInfo>
}

/** The configured provider instances, by name. */
export class ProviderRegistry extends Context.Tag("@skein/domain/ProviderRegistry")<
  ProviderRegistry,
  { readonly adapters: ReadonlyArray<ProviderAdapter> }
>() {}
