/**
 * A run's reported items on their way to its thread actor. An item waits at most
 * `delayMs` for what follows it, so that items that come close together, and most often
 * a turn's last item and the turn's end, are recorded in one commit (one batch for live
 * followers); items someone must answer before the turn goes on are recorded at once.
 * Whatever is still held when the turn ends goes with the run's end (`FinishRun`).
 *
 * The wait is a plain timer, which the turn's end, usually first, only clears. A
 * recording the timer starts has its `RecordItems` in the actor's mailbox from the
 * timer's own callback, so whatever the driver asks after it is handled after it.
 */
import type { SkeinError, TurnItemContent } from "@skein/domain"
import { Array as Arr, Effect, Runtime } from "effect"
import * as OneShot from "./OneShot.js"

export interface ItemBatch {
  /**
   * Items reported while the turn goes on: recorded at once when one `waitsForAnswer`
   * (or there is no delay), else within the delay. Fails once a recording has failed.
   */
  readonly add: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /**
   * The turn's end, with the items that came with it: no recording after it; waits for
   * one under way. Fails if a recording failed (its items stay held).
   */
  readonly end: (items: ReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
  /**
   * However the run ended: stops the timer without waiting (the driver may be stopping
   * because its actor is closing; a recording under way is in the mailbox already).
   */
  readonly close: () => void
  /** What is held, not recorded: it goes with `FinishRun`. */
  readonly held: () => ReadonlyArray<TurnItemContent>
}

/** Items someone must answer before the turn goes on. */
const waitsForAnswer = (item: TurnItemContent) => item.type === "approval_request"

export const make = (
  delayMs: number,
  record: (items: Arr.NonEmptyReadonlyArray<TurnItemContent>) => Effect.Effect<void, SkeinError>
): ItemBatch => {
  let held: Array<TurnItemContent> = []
  let timer: ReturnType<typeof setTimeout> | undefined
  /** The recording the timer started, until it has ended. */
  let flushing: OneShot.OneShot<void, never> | undefined
  let closed = false
  /** Why a recording failed, if one did: the run fails with it. */
  let failure: SkeinError | undefined

  const flush = Effect.suspend(() => {
    if (!Arr.isNonEmptyArray(held)) return Effect.void
    const items = held
    held = []
    return Effect.catchAll(record(items), (error) =>
      Effect.sync(() => {
        // Kept, so that the run's end still carries them.
        held = [...items, ...held]
        failure ??= error
      })
    )
  })
  const failed = Effect.suspend(() => (failure === undefined ? Effect.void : Effect.fail(failure)))
  const stopTimer = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  /** Stops the timer; once this returns, every item is either recorded or held. */
  const settle = Effect.suspend(() => {
    stopTimer()
    return flushing === undefined ? Effect.void : OneShot.wait(flushing)
  })
  /** Records what is held after the delay (again if more came meanwhile); a recording is not cut short. */
  const arm = (runtime: Runtime.Runtime<never>) => {
    if (timer !== undefined || flushing !== undefined || closed) return
    timer = setTimeout(() => {
      timer = undefined
      const done = (flushing = OneShot.make<void, never>())
      Runtime.runFork(runtime)(
        Effect.uninterruptible(flush).pipe(
          Effect.ensuring(
            Effect.sync(() => {
              flushing = undefined
              OneShot.succeed(done, undefined)
              if (held.length > 0 && failure === undefined) arm(runtime)
            })
          )
        )
      )
    }, delayMs)
  }

  return {
    add: (items) =>
      Effect.suspend(() => {
        held.push(...items)
        if (failure !== undefined || items.length === 0) return failed
        if (delayMs > 0 && !items.some(waitsForAnswer)) {
          return Effect.map(Effect.runtime<never>(), arm)
        }
        return settle.pipe(Effect.zipRight(flush), Effect.zipRight(failed))
      }),
    end: (items) =>
      Effect.suspend(() => {
        closed = true
        // Usually no recording is under way: the end is then a plain step (a run's way
        // back runs on cold caches, where each combinator costs a few microseconds).
        if (flushing === undefined) {
          stopTimer()
          held.push(...items)
          return failed
        }
        return settle.pipe(Effect.zipRight(Effect.sync(() => void held.push(...items))), Effect.zipRight(failed))
      }),
    close: () => {
      closed = true
      stopTimer()
    },
    held: () => held
  }
}
