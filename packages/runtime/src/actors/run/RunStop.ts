/**
 * A run's stop (the user's interrupt, shutdown, or a fault found elsewhere, such as a
 * provider refusing an approval), watched beside the run's turn by a fiber of the turn's
 * scope. What the stop does depends on the run's phase when it comes:
 * - before the turn is sent, the run ends at once (`interrupted`, or as the stop says);
 * - once it is sent, the provider is asked to interrupt the turn; a provider that has
 *   not ended it within the grace period has its process killed, and the run ends as
 *   the stop says, whatever the turn does;
 * - once the turn is over, there is nothing to do.
 */
import type { RunFailure } from "@skein/domain"
import { Deferred, Duration, Effect, Exit, Ref } from "effect"
import type { TurnReport } from "./RunEnd.js"
import type { TurnEnd } from "./RunPhase.js"
import { endTurn, RunPhase } from "./RunPhase.js"

export interface RunStopInput {
  readonly stop: Deferred.Deferred<RunFailure | null>
  readonly phase: Ref.Ref<RunPhase>
  readonly report: Ref.Ref<TurnReport>
  readonly ended: Deferred.Deferred<TurnEnd>
  readonly graceMs: number
}

const stopped: TurnEnd = { by: "stop", exit: Exit.succeed("interrupted") }

/** A stop once the turn was sent: ask the provider, wait the grace period, kill the process. */
const stopTurn = (input: RunStopInput, { lease, nativeRef }: Extract<RunPhase, { _tag: "Sent" }>) =>
  lease.handle.interrupt(nativeRef).pipe(
    Effect.catchAll((error) =>
      Ref.update(input.report, (report) => ({
        ...report,
        stopNote: `the provider did not take the interrupt (${error.message})`
      }))
    ),
    Effect.zipRight(Effect.sleep(Duration.millis(input.graceMs))),
    Effect.zipRight(Effect.suspend(() => lease.kill)),
    // Killed after the grace period: the run ends as the stop says, whatever the turn does.
    Effect.zipRight(endTurn(input.phase, input.ended, stopped))
  )

/**
 * Waits for the stop, then acts on it as the run's phase says; fork it in the turn's scope.
 * Told null (the run's end is known), it ends: the fiber ends on its own rather than being
 * interrupted with the turn's scope, which costs Effect several times more.
 */
export const watch = (input: RunStopInput): Effect.Effect<void> =>
  Effect.flatMap(Deferred.await(input.stop), (failure) =>
    failure === null
      ? Effect.void
      : Effect.flatten(
          Ref.modify(input.phase, (phase): readonly [Effect.Effect<void>, RunPhase] => {
            switch (phase._tag) {
              case "Preparing":
                return [Deferred.succeed(input.ended, stopped).pipe(Effect.asVoid), RunPhase.Ended()]
              case "Sent":
                return [stopTurn(input, phase), phase]
              case "Ended":
                return [Effect.void, phase]
            }
          })
        )
  )
