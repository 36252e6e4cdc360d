/**
 * A run's reported items on their way to its thread actor. The adapter holds a turn's
 * plain items for up to the item delay (`TurnInput.itemDelayMs`) and hands them over
 * with what follows them: items that come close together, and most often a turn's last
 * item and the turn's end, reach the driver as one batch. A batch the turn goes on after
 * is recorded at once (one commit, one batch for live followers); the items that come
 * with the turn's end go with the run's end (`FinishRun`), in its commit. (The delay
 * used to be kept here, by a timer, and the driver was woken for every item only to hold
 * it: on Codex runs, 0.07-0.20 ms of this process's CPU a run in the A/B tool.)
 */
import type { SkeinError, TurnItemContent } from "@skein/domain"
import { Array as Arr, Effect, HashSet } from "effect"

export interface ItemBatch {
  /**
   * Items reported while the turn goes on: recorded now (held, if the turn is being
   * stopped). Fails once a recording has failed.
   */
  readonly add: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /** The turn's end, with the items that came with it. Fails if a recording failed (its items stay held). */
  readonly end: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /** What is held, not recorded: it goes with `FinishRun`. */
  readonly held: () => ReadonlyArray<TurnItemContent>
}

export const make = (
  record: (items: Arr.NonEmptyReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
): ItemBatch => {
  let held: Array<TurnItemContent> = []
  /** Why a recording failed, if one did: the run fails with it. */
  let failure: SkeinError | undefined

  const failed = Effect.suspend(() => (failure === undefined ? Effect.void : Effect.fail(failure)))

  return {
    add: (items) =>
      Effect.descriptorWith((fiber) => {
        // Handed over as the turn is being stopped (the adapter's queue gives up what it
        // held): kept for FinishRun, since an ask from a fiber on its way out could wait
        // on an actor that is closing.
        if (failure !== undefined || !Arr.isNonEmptyReadonlyArray(items) || HashSet.size(fiber.interruptors) > 0) {
          held.push(...items)
          return failed
        }
        return Effect.catchAll(record(items), (error) =>
          Effect.sync(() => {
            // Kept, so that the run's end still carries them.
            held.push(...items)
            failure ??= error
          })
        ).pipe(Effect.zipRight(failed))
      }),
    end: (items) =>
      Effect.suspend(() => {
        held.push(...items)
        return failed
      }),
    held: () => held
  }
}
