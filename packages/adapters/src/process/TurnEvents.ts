/**
 * A turn's events on their way out of an adapter. Each adapter puts a running turn's
 * events in a `TurnQueue`, fed by its reader as the provider's lines arrive; `deliver`
 * hands them to the port's `onEvents` a batch at a time, up to and including the
 * terminal event. The queue is an array and the one waiting `deliver`, resumed
 * directly when events come: an Effect Mailbox schedules a task that then resumes its
 * taker, two turns of the scheduler per wake where this takes one, and an Effect
 * Stream over a mailbox cost some ten times more per turn, on the latency of every run.
 *
 * The queue holds a turn's plain items for up to `TurnInput.itemDelayMs`, so that they
 * reach the runtime with what follows them, most often the turn's end: the run's driver
 * is woken once for them, not once per item. Everything the runtime acts on goes at
 * once, with whatever is held before it: the turn's start and end, approval requests,
 * subagent requests, the turn's failure.
 *
 * A plain report may also be held unread (`offerLater`): the adapter says how to read
 * it, and the queue reads it when it hands it over. On a Codex turn that moves the
 * decoding of the items and the usage from the line that brought each (three wakes of
 * this process beside the agent's turn, each paying for the decoder on cold caches) to
 * the turn's end, where the decoder runs anyway: some 0.2-0.3 ms less of this process's
 * CPU a turn (measured in the stdout handlers, median of 200 turns), CPU the agent has
 * on the same cores.
 */
import type { ProviderEvent, ProviderFailure, TurnEventSink } from "@skein/domain"
import { Chunk, Effect, Stream } from "effect"
import type { Exit } from "effect"

/** The event that ends a turn. */
export const isTerminal = (event: ProviderEvent): boolean =>
  event._tag === "TurnCompleted" || event._tag === "TurnInterrupted"

/** An event the runtime acts on as it comes (anything but an item that only reports). */
const isUrgent = (event: ProviderEvent): boolean => event._tag !== "Item" || event.item.type === "approval_request"

/** What a queue holds: an event, or a report read when it is handed over (`offerLater`). */
type Held = ProviderEvent | (() => ReadonlyArray<ProviderEvent>)

/** A running turn's events, from the adapter's reader to the runtime. */
export interface TurnQueue {
  /**
   * Adds an event. An urgent one (`isUrgent`) is handed over at once, after whatever is
   * held; a plain item waits until the next urgent event, the end, or `delayMs` after
   * the oldest item held. Once the queue has ended, nothing more is taken.
   */
  readonly offer: (event: ProviderEvent) => void
  /**
   * Adds a plain report that `read` turns into events (plain items, never an urgent
   * event) when it is handed over, in its place among the held items; read at once when
   * the queue holds nothing back (`delayMs` 0). A `read` that throws leaves an `error`
   * item saying so in place of its events.
   */
  readonly offerLater: (read: () => ReadonlyArray<ProviderEvent>) => void
  /** No more events: after the last one, or with the turn's failure. What is held goes first. */
  readonly end: (exit: Exit.Exit<void, ProviderFailure>) => void
  /**
   * Hands the events to `onEvents` until the terminal one (included) or the queue's
   * end; fails with the queue's failure or `onEvents`'s.
   */
  readonly deliver: <E>(onEvents: TurnEventSink<E>) => Effect.Effect<void, ProviderFailure | E>
}

/**
 * A held report's events. It is read on the reader's callback or a timer's, where a
 * throw would be nobody's to catch: it becomes an item that says what went wrong.
 */
const read = (report: () => ReadonlyArray<ProviderEvent>): ReadonlyArray<ProviderEvent> => {
  try {
    return report()
  } catch (error) {
    return [
      {
        _tag: "Item",
        item: { type: "error", message: `a report of the turn could not be read: ${String(error)}`, code: null }
      }
    ]
  }
}

/** A queue for one turn; `delayMs` 0 (or less) hands every event over at once. */
export const make = (delayMs: number): Effect.Effect<TurnQueue> =>
  Effect.sync(() => {
    let held: Array<Held> = []
    let timer: ReturnType<typeof setTimeout> | undefined
    let ended = false
    /** Events handed over, until `deliver` takes them. */
    let ready: Array<ProviderEvent> = []
    /** How the queue ended (after what `ready` holds), once it has. */
    let outcome: Exit.Exit<void, ProviderFailure> | undefined
    /** `deliver`, while it waits for events. */
    let taker: ((resume: Effect.Effect<void>) => void) | undefined
    const wake = () => {
      const waiting = taker
      if (waiting === undefined) return
      taker = undefined
      waiting(Effect.void)
    }
    const release = () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      if (held.length === 0) return
      const entries = held
      held = []
      const before = ready.length
      for (const entry of entries) {
        if (typeof entry === "function") ready.push(...read(entry))
        else ready.push(entry)
      }
      // Reports that came to nothing wake nobody.
      if (ready.length > before) wake()
    }
    /** Holds a plain item or report for the delay; with no delay, hands it over now. */
    const hold = (entry: Held) => {
      held.push(entry)
      if (delayMs <= 0) release()
      else timer ??= setTimeout(release, delayMs)
    }
    const more = Effect.async<void>((resume) => {
      taker = resume
      return Effect.sync(() => {
        if (taker === resume) taker = undefined
      })
    })
    return {
      offer: (event) => {
        if (ended) return
        if (!isUrgent(event)) return hold(event)
        release()
        ready.push(event)
        wake()
      },
      offerLater: (report) => {
        if (!ended) hold(report)
      },
      end: (exit) => {
        if (ended) return
        ended = true
        release()
        outcome = exit
        wake()
      },
      deliver: <E>(onEvents: TurnEventSink<E>) => {
        const loop: Effect.Effect<void, ProviderFailure | E> = Effect.suspend(() => {
          if (ready.length === 0) return outcome ?? Effect.zipRight(more, loop)
          const events = ready
          ready = []
          const end = events.findIndex(isTerminal)
          if (end >= 0) return onEvents(end === events.length - 1 ? events : events.slice(0, end + 1))
          return Effect.zipRight(onEvents(events), loop)
        })
        // Stopped before the turn's end (a deadline, a stop, the process's exit seen first
        // by the runtime): the turn's start and the items it reported still reach
        // `onEvents`, held or not, so that none is lost with the turn.
        const handOverRest = Effect.suspend(() => {
          release()
          const rest = ready.filter((e) => e._tag === "Item" || e._tag === "TurnStarted")
          ready = []
          return rest.length === 0 ? Effect.void : Effect.ignore(onEvents(rest))
        })
        return Effect.onInterrupt(loop, () => handOverRest)
      }
    }
  })

/** Runs one turn and keeps its events (tests, tools): what `onEvents` would have seen, in one array. */
export const collect = <E>(
  runTurn: (onEvents: TurnEventSink<never>) => Effect.Effect<void, E>
): Effect.Effect<Array<ProviderEvent>, E> =>
  Effect.suspend(() => {
    const all: Array<ProviderEvent> = []
    return Effect.as(
      runTurn((events) => Effect.sync(() => void all.push(...events))),
      all
    )
  })

/** A turn whose events an adapter has as a Stream: handed to `onEvents` chunk by chunk, up to the terminal one. */
export const fromStream = <E1, E2>(
  events: Stream.Stream<ProviderEvent, E1>,
  onEvents: TurnEventSink<E2>
): Effect.Effect<void, E1 | E2> =>
  Stream.runForEachChunk(Stream.takeUntil(events, isTerminal), (chunk) => onEvents(Chunk.toReadonlyArray(chunk)))
