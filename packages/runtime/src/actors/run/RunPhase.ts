/**
 * Where a run is in its life, as one value (held in a `Ref` by the driver), and how the
 * driver first learns that the turn is over.
 *
 * - `Preparing`: nothing has reached the provider's turn yet; a stop ends the run at once.
 * - `Sent`: the turn is with the provider on `lease`; a stop asks the provider to
 *   interrupt it, and kills the process after the grace period.
 * - `Ended`: the turn is over (its end event came, its call returned, or a stop ended
 *   the run before it was sent); a stop has nothing left to do.
 *
 * The only moves are Preparing → Sent → Ended and Preparing → Ended; each is one
 * `Ref.modify`, so a stop and the turn's start cannot both win.
 */
import { Data, Deferred, Effect, Ref } from "effect"
import type { SessionLease } from "../ProviderSessions.js"
import type { TurnExit } from "./RunEnd.js"

export type RunPhase = Data.TaggedEnum<{
  Preparing: {}
  Sent: { readonly lease: SessionLease; readonly nativeRef: string }
  Ended: {}
}>

export const RunPhase = Data.taggedEnum<RunPhase>()

/** Preparing → Sent: whether the turn may go to the provider (false once a stop ended the run). */
export const send =
  (lease: SessionLease, nativeRef: string) =>
  (phase: RunPhase): readonly [boolean, RunPhase] =>
    phase._tag === "Preparing" ? [true, RunPhase.Sent({ lease, nativeRef })] : [false, phase]

/**
 * The first word of the turn's end, which the run's end is recorded from:
 * - `event`: the turn's end event, while the provider's call is still unwinding;
 * - `call`: the provider's call returned or failed without (or before) an end event;
 * - `stop`: a stop ended the run (before the turn was sent, or after its grace period).
 */
export interface TurnEnd {
  readonly by: "event" | "call" | "stop"
  readonly exit: TurnExit
}

/**
 * The turn is over: nothing is left for a stop to interrupt, and the driver hears how
 * it ended (the first word wins; later ones change nothing).
 */
export const endTurn = (
  phase: Ref.Ref<RunPhase>,
  ended: Deferred.Deferred<TurnEnd>,
  end: TurnEnd
): Effect.Effect<void> =>
  Effect.zipRight(Ref.set(phase, RunPhase.Ended()), Deferred.succeed(ended, end)).pipe(Effect.asVoid)
