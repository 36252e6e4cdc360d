/**
 * One run followed through its thread's commits: its latest record and its items as the
 * events tell them, and its view once the commit that ended it is told (an end's batch
 * may update the record after its RunEnded).
 *
 * The watch listens before it knows its run (a start's events may be told before the
 * start is answered): what it is told until `begin` waits, then is folded.
 */
import type { Run, RunId, RunView, StoredEvent, ThreadEvent, TurnItem } from "@skein/domain"
import { Effect } from "effect"
import { toRunView, upsertItem } from "./Projection.js"

export interface RunWatch {
  /** The listener to follow the thread with (see Followers). */
  readonly listener: (events: ReadonlyArray<StoredEvent>) => void
  /** The run watched. */
  readonly begin: (runId: RunId) => void
  /** Whether the run's start was among the events told since the watch began to listen. */
  readonly sawStart: () => boolean
  /** Whether the run's end was told. */
  readonly sawEnd: () => boolean
  /** The run's view, once its end is told. */
  readonly ended: Effect.Effect<RunView>
}

export const make = (): RunWatch => {
  let early: Array<ThreadEvent> | null = []
  let runId: RunId | null = null
  let started = false
  let latest: Run | null = null
  const items: Array<TurnItem> = []
  /**
   * The run's view once its end was seen; what `ended` waits on until then, made by the
   * first that waits (a `Latch`: the view is here when it opens, and it is cheap to make).
   */
  let view: RunView | undefined
  let seen: Effect.Latch | undefined
  const take = (events: ReadonlyArray<ThreadEvent>) => {
    let end = false
    for (const event of events) {
      switch (event._tag) {
        case "RunStarted":
        case "RunUpdated":
        case "RunEnded":
          if (event.run.id !== runId) break
          started ||= event._tag === "RunStarted"
          end ||= event._tag === "RunEnded"
          latest = event.run
          break
        case "TurnItemRecorded":
          if (event.item.runId === runId) upsertItem(items, event.item)
          break
      }
    }
    // Called from the store's listener, outside any fiber.
    if (end && latest !== null && view === undefined) {
      view = toRunView(latest, items)
      seen?.unsafeOpen()
    }
  }
  return {
    listener: (events) => {
      const batch = events.map((stored) => stored.event)
      if (early !== null) early.push(...batch)
      else take(batch)
    },
    begin: (id) => {
      runId = id
      take(early!)
      early = null
    },
    sawStart: () => started,
    sawEnd: () => view !== undefined,
    ended: Effect.suspend(() =>
      view !== undefined ? Effect.succeed(view) : Effect.map((seen ??= Effect.unsafeMakeLatch()).await, () => view!)
    )
  }
}
