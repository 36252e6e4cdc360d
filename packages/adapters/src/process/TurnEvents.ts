/**
 * A turn's events on their way out of an adapter. Each adapter puts a running turn's
 * events in a `TurnQueue`, fed by its reader as the provider's lines arrive; `deliver`
 * hands them to the port's `onEvents` a batch at a time, up to and including the
 * terminal event. The events travel in an Effect `Mailbox`: `deliver` takes whatever
 * it holds at each wake, and the turn's end (or failure) is the mailbox's.
 *
 * The queue holds a turn's plain items for up to `TurnInput.itemDelayMs` before they go
 * into the mailbox, so that they reach the runtime with what follows them, most often
 * the turn's end: the run's driver is woken once for them, not once per item.
 * Everything the runtime acts on goes at once, with whatever is held before it: the
 * turn's start and end, approval requests, subagent requests, the turn's failure.
 *
 * A plain report may also be held unread (`offerLater`): the adapter says how to read
 * it, and `deliver` reads it when it hands it over, so that a provider's report is
 * decoded once per batch on the consumer's fiber rather than on the line that brought it.
 */
import type { ProviderEvent, ProviderFailure, TurnEventSink } from "@skein/domain"
import { Chunk, Deferred, Effect, Exit, FiberId, Mailbox, Stream } from "effect"

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
   * event) when it is handed over, in its place among the held items; handed over at
   * once when the queue holds nothing back (`delayMs` 0). A `read` that throws leaves
   * an `error` item saying so in place of its events.
   */
  readonly offerLater: (read: () => ReadonlyArray<ProviderEvent>) => void
  /** No more events: after the last one, or with the turn's failure. What is held goes first. */
  readonly end: (exit: Exit.Exit<void, ProviderFailure>) => void
  /** Completes once `end` was called, whether or not its events were handed over. */
  readonly ended: Effect.Effect<void>
  /**
   * Hands the events to `onEvents` until the terminal one (included) or the queue's
   * end; fails with the queue's failure or `onEvents`'s.
   */
  readonly deliver: <E>(onEvents: TurnEventSink<E>) => Effect.Effect<void, ProviderFailure | E>
}

/** A held report's events; a throw becomes an item that says what went wrong. */
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

/** The events of what the mailbox handed over, reports read in their place. */
const eventsOf = (entries: Iterable<Held>): Array<ProviderEvent> => {
  const events: Array<ProviderEvent> = []
  for (const entry of entries) {
    if (typeof entry === "function") events.push(...read(entry))
    else events.push(entry)
  }
  return events
}

/**
 * Hands the mailbox's events to `onEvents`, a batch per take, until the terminal event
 * (included) or the mailbox's end (its failure, if it failed). A batch that comes to
 * nothing (reports with no events) is not handed over.
 */
const deliverFrom = <E>(
  mailbox: Mailbox.ReadonlyMailbox<Held, ProviderFailure>,
  onEvents: TurnEventSink<E>
): Effect.Effect<void, ProviderFailure | E> => {
  const loop: Effect.Effect<void, ProviderFailure | E> = Effect.flatMap(mailbox.takeAll, ([entries, done]) => {
    const events = eventsOf(entries)
    const end = events.findIndex(isTerminal)
    if (end >= 0) return onEvents(end === events.length - 1 ? events : events.slice(0, end + 1))
    const handed = events.length === 0 ? Effect.void : onEvents(events)
    return Effect.zipRight(handed, done ? mailbox.await : loop)
  })
  return loop
}

/**
 * What is left when a delivery stops before the turn's end (a deadline, a stop, the
 * process's exit seen first by the runtime): the turn's start and the items it
 * reported, held or not, so that none is lost with the turn.
 */
const handOverRest = <E>(
  mailbox: Mailbox.ReadonlyMailbox<Held, ProviderFailure>,
  onEvents: TurnEventSink<E>
): Effect.Effect<void> =>
  Effect.flatMap(Effect.orElseSucceed(mailbox.clear, Chunk.empty), (entries) => {
    const rest = eventsOf(entries).filter((e) => e._tag === "Item" || e._tag === "TurnStarted")
    return rest.length === 0 ? Effect.void : Effect.ignore(onEvents(rest))
  })

/** A queue for one turn; `delayMs` 0 (or less) hands every event over at once. */
export const make = (delayMs: number): Effect.Effect<TurnQueue> =>
  Effect.map(Mailbox.make<Held, ProviderFailure>(), (mailbox) => {
    /** Plain items and reports waiting for what follows them (or the delay). */
    let held: Array<Held> = []
    let timer: ReturnType<typeof setTimeout> | undefined
    let ended = false
    /** What `ended` waits on, made by the first that waits before the end (most turns have none). */
    let over: Deferred.Deferred<void> | undefined
    const release = () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      if (held.length === 0) return
      mailbox.unsafeOfferAll(held)
      held = []
    }
    /** Holds a plain item or report for the delay; with no delay, hands it over now. */
    const hold = (entry: Held) => {
      held.push(entry)
      if (delayMs <= 0) release()
      else timer ??= setTimeout(release, delayMs)
    }
    return {
      offer: (event) => {
        if (ended) return
        if (!isUrgent(event)) return hold(event)
        release()
        mailbox.unsafeOffer(event)
      },
      offerLater: (report) => {
        if (!ended) hold(report)
      },
      end: (exit) => {
        if (ended) return
        ended = true
        release()
        mailbox.unsafeDone(exit)
        if (over !== undefined) Deferred.unsafeDone(over, Exit.void)
      },
      ended: Effect.suspend(() => (ended ? Effect.void : Deferred.await((over ??= Deferred.unsafeMake(FiberId.none))))),
      deliver: (onEvents) =>
        Effect.onInterrupt(deliverFrom(mailbox, onEvents), () =>
          Effect.zipRight(Effect.sync(release), handOverRest(mailbox, onEvents))
        )
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
