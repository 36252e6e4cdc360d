/**
 * A turn's events on their way out of an adapter. Each adapter collects a running
 * turn's events in a Mailbox, fed by its reader as the provider's lines arrive;
 * `deliver` hands them to the port's `onEvents` a batch at a time, up to and including
 * the terminal event. (A Mailbox read in a loop: an Effect Stream over the same
 * mailbox costs some ten times more per turn, on the latency of every run.)
 */
import type { ProviderEvent, ProviderFailure, TurnEventSink } from "@skein/domain"
import { Chunk, Effect, Stream } from "effect"
import type { Mailbox } from "effect"

/** The event that ends a turn. */
export const isTerminal = (event: ProviderEvent): boolean =>
  event._tag === "TurnCompleted" || event._tag === "TurnInterrupted"

/**
 * Hands the mailbox's events to `onEvents` until the terminal one (included) or the
 * mailbox's end; fails with the mailbox's failure or `onEvents`'s.
 */
export const deliver = <E>(
  mailbox: Mailbox.ReadonlyMailbox<ProviderEvent, ProviderFailure>,
  onEvents: TurnEventSink<E>
): Effect.Effect<void, ProviderFailure | E> => {
  const loop: Effect.Effect<void, ProviderFailure | E> = Effect.flatMap(mailbox.takeAll, ([chunk, done]) => {
    const events = Chunk.toReadonlyArray(chunk)
    const end = events.findIndex(isTerminal)
    if (end >= 0) return onEvents(end === events.length - 1 ? events : events.slice(0, end + 1))
    const rest = done ? Effect.void : loop
    return events.length === 0 ? rest : Effect.zipRight(onEvents(events), rest)
  })
  return loop
}

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
