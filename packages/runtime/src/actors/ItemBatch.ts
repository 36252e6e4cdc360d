/**
 * A run's reported items on their way to its thread actor. The adapter holds a turn's
 * plain items for up to the item delay (`TurnInput.itemDelayMs`) and hands them over
 * with what follows them, so items that come close together (most often a turn's last
 * item and the turn's end) reach the driver as one batch. A batch the turn goes on after
 * is recorded at once (one commit, one batch for live followers); the items that come
 * with the turn's end are held and go with the run's end (`FinishRun`), in its commit.
 * Once a recording has failed, later items are held too, and the run fails with why.
 */
import type { SkeinError, TurnItemContent } from "@skein/domain"
import { Array as Arr, Effect, HashSet, Option, Ref } from "effect"

export interface ItemBatch {
  /**
   * Items reported while the turn goes on: recorded now (held, if the turn is being
   * stopped). Fails once a recording has failed.
   */
  readonly add: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /** The turn's end, with the items that came with it. Fails if a recording failed (its items stay held). */
  readonly end: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /** What is held, not recorded: it goes with `FinishRun`. */
  readonly held: Effect.Effect<ReadonlyArray<TurnItemContent>>
}

interface State {
  readonly held: ReadonlyArray<TurnItemContent>
  /** Why a recording failed, if one did: the run fails with it. */
  readonly failure: Option.Option<SkeinError>
}

export const make = (
  record: (items: Arr.NonEmptyReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
): Effect.Effect<ItemBatch> =>
  Effect.map(Ref.make<State>({ held: [], failure: Option.none() }), (state) => {
    const hold = (items: ReadonlyArray<TurnItemContent>, failure: Option.Option<SkeinError> = Option.none()) =>
      Ref.update(state, (s) => ({
        held: items.length === 0 ? s.held : [...s.held, ...items],
        failure: Option.orElse(s.failure, () => failure)
      }))
    const failed = Effect.flatMap(Ref.get(state), (s) =>
      Option.match(s.failure, { onNone: () => Effect.void, onSome: Effect.fail })
    )
    return {
      add: (items) =>
        Effect.descriptorWith((fiber) =>
          Effect.flatMap(Ref.get(state), (s) => {
            // Handed over as the turn is being stopped (the adapter's queue gives up what it
            // held): kept for FinishRun, since an ask from a fiber on its way out could wait
            // on an actor that is closing.
            if (Option.isSome(s.failure) || !Arr.isNonEmptyReadonlyArray(items) || HashSet.size(fiber.interruptors) > 0)
              return Effect.zipRight(hold(items), failed)
            // A batch that could not be recorded is kept, so that the run's end still carries it.
            return Effect.catchAll(record(items), (error) => hold(items, Option.some(error))).pipe(
              Effect.zipRight(failed)
            )
          })
        ),
      end: (items) => Effect.zipRight(hold(items), failed),
      held: Effect.map(Ref.get(state), (s) => s.held)
    }
  })
