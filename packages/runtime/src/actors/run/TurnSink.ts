/**
 * Where a turn's provider events go: plain items to the run's item batch, a subagent
 * request to the thread (the child starts now, and the call's output says where, or why
 * not), the turn's handle, outcome and usage to the run's report. The turn's end event
 * ends the phase (nothing is left for a stop to interrupt) and tells the driver at once,
 * then yields: the driver goes on to record the run's end before the provider's call
 * unwinds on this fiber.
 */
import type { ProviderEvent, SkeinError, TurnItemContent } from "@skein/domain"
import { ProviderName, TurnUsage } from "@skein/domain"
import { Effect, Exit, Option, Ref, Schema } from "effect"
import type { Deferred } from "effect"
import type { ItemBatch } from "../ItemBatch.js"
import type { TurnReport } from "./RunEnd.js"
import type { RunPhase, TurnEnd } from "./RunPhase.js"
import { endTurn } from "./RunPhase.js"

export interface TurnSinkInput {
  readonly items: ItemBatch
  readonly report: Ref.Ref<TurnReport>
  readonly phase: Ref.Ref<RunPhase>
  readonly ended: Deferred.Deferred<TurnEnd>
  /** Opened by the driver once it has tried to record the run's end. */
  readonly recorded: Effect.Latch
  /** The provider called the app tool `spawn_subagent`: start the child, say where it runs. */
  readonly spawn: (
    provider: ProviderName,
    prompt: string
  ) => Effect.Effect<{ readonly threadId: string; readonly runId: string }, SkeinError>
}

const isUsage = Schema.is(TurnUsage)

/**
 * The provider's turn ref as the run's end can store it (a string), else null: the
 * events of a run's end are built unchecked (ThreadPlanner), so what the provider
 * reported for them is checked here.
 */
const turnRefOf = (ref: unknown): string | null => (typeof ref === "string" ? ref : null)

/** Whether the event ends the turn, and the report after it (items aside): as `Ref.modify` takes it. */
export const reportAfter = (event: ProviderEvent, report: TurnReport): readonly [boolean, TurnReport] => {
  switch (event._tag) {
    case "TurnStarted":
      return [false, { ...report, turnRef: turnRefOf(event.turnRef) }]
    case "TurnInterrupted":
      return [true, { ...report, outcome: "interrupted", turnRef: turnRefOf(event.turnRef) }]
    case "TurnCompleted":
      // A count the run could not store (not a whole number, say) is left out, not fatal.
      return [
        true,
        {
          ...report,
          turnRef: turnRefOf(event.turnRef),
          usage: event.usage !== undefined && isUsage(event.usage) ? event.usage : undefined
        }
      ]
    default:
      return [false, report]
  }
}

/** The app tool `spawn_subagent`: the child starts now; the call's output says where, or why not. */
const spawnCall = (input: TurnSinkInput, provider: string, prompt: string): Effect.Effect<TurnItemContent> => {
  const named = Schema.decodeUnknownOption(ProviderName)(provider)
  const started = Option.isNone(named)
    ? Effect.fail(`"${provider}" is not a provider instance name`)
    : input.spawn(named.value, prompt).pipe(Effect.mapError((error) => error.message))
  return started.pipe(
    Effect.match({
      onFailure: (why) => JSON.stringify({ error: why }),
      onSuccess: (child) => JSON.stringify(child)
    }),
    Effect.map((output): TurnItemContent => ({
      type: "tool_call",
      name: "spawn_subagent",
      input: JSON.stringify({ provider, prompt }),
      output
    }))
  )
}

/** One batch of the turn's events, handed over. */
const take = Effect.fnUntraced(function* (input: TurnSinkInput, events: ReadonlyArray<ProviderEvent>) {
  const reported: Array<TurnItemContent> = []
  let ended = false
  for (const event of events) {
    if (event._tag === "Item") reported.push(event.item)
    else if (event._tag === "SubagentRequested") reported.push(yield* spawnCall(input, event.provider, event.prompt))
    else ended = (yield* Ref.modify(input.report, (report) => reportAfter(event, report))) || ended
  }
  if (!ended) return yield* input.items.add(reported)
  yield* input.items.end(reported)
  const { outcome } = yield* Ref.get(input.report)
  yield* endTurn(input.phase, input.ended, { by: "event", exit: Exit.succeed(outcome) })
  // The driver, woken by the end, records the run's end; the adapter's call unwinds on
  // this fiber after that, behind whoever the record woke (those waiting for the run).
  yield* input.recorded.await
  // Woken with them: the unwinding waits one turn of the scheduler more, so that a
  // caller outside Effect (a promise, resolved as its fiber ends) hears first.
  yield* Effect.yieldNow()
})

/** The sink the turn's events are handed to (`ProviderSessionHandle.runTurn`'s `onEvents`). */
export const make =
  (input: TurnSinkInput) =>
  (events: ReadonlyArray<ProviderEvent>): Effect.Effect<void, SkeinError> =>
    take(input, events)
