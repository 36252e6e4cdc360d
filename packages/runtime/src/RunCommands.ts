/**
 * The Orchestrator's run commands: `run.start`, answered at once or once the run has
 * ended, and `run.interrupt`, answered once the run has ended. Each is a message to the
 * thread's actor; waiting reads the thread's events, not the actor, in the process that
 * writes them (in a cluster, the thread's runner).
 */
import type { OrchestratorShape } from "./Orchestrator.js"
import type { Run, RunId, ThreadId } from "@skein/domain"
import { isTerminalRunStatus } from "@skein/domain"
import { Effect } from "effect"
import type { ThreadActorsShape } from "./actors/ThreadActors.js"
import type { EventStoreShape } from "./store/EventStore.js"

/** How many runs in the way a `whenBusy: interrupt` start stops before it gives up. */
const INTERRUPT_ATTEMPTS = 3

type StartInput = Parameters<OrchestratorShape["startRun"]>[0]

export const makeRunCommands = (store: EventStoreShape, actors: ThreadActorsShape) => {
  const awaitEnd = (threadId: ThreadId, runId: Run["id"]) => store.awaitRunEnd(threadId, runId)

  const getRun = (threadId: ThreadId, runId: RunId) => actors.use(threadId, (actor) => actor.ask("GetRun", { runId }))

  /** The run's start, as the thread's actor accepted it (after the checkpoint gate). */
  const start = (input: StartInput) => actors.use(input.threadId, (actor) => actor.askSettled("StartRun", input))

  const startOnce = (input: StartInput) =>
    input.wait
      ? actors.startAndWait(input)
      : Effect.flatMap(start(input), (accepted) => getRun(input.threadId, accepted.run.id))

  const interruptRun: OrchestratorShape["interruptRun"] = Effect.fnUntraced(function* (input) {
    const accepted = yield* actors.use(input.threadId, (actor) => actor.ask("InterruptRun", input))
    return isTerminalRunStatus(accepted.run.status) ? accepted.run : yield* awaitEnd(input.threadId, accepted.run.id)
  })

  /** The run a steered message joined, as `run.start` answers (once it has ended, with `wait`). */
  const joined = (input: StartInput, run: Run) =>
    input.wait && !isTerminalRunStatus(run.status)
      ? Effect.zipRight(awaitEnd(input.threadId, run.id), getRun(input.threadId, run.id))
      : getRun(input.threadId, run.id)

  /**
   * `whenBusy: steer`: a plain start if the thread is idle; else the message goes into the
   * running turn; if the turn cannot take it, `ifCannotSteer` decides (refuse: the reason,
   * as `CannotSteer`).
   */
  const steer = (input: StartInput): ReturnType<OrchestratorShape["startRun"]> =>
    Effect.catchTag(startOnce({ ...input, whenBusy: "refuse" }), "RunAlreadyActive", (busy) =>
      actors
        .use(input.threadId, (actor) => actor.steer(input))
        .pipe(
          Effect.flatMap((steered) =>
            steered === "idle" ? startRun({ ...input, whenBusy: "refuse" }) : joined(input, steered.run)
          ),
          Effect.catchTag("CannotSteer", (cannot) => {
            const otherwise = input.ifCannotSteer ?? "refuse"
            return otherwise === "refuse" ? Effect.fail(cannot) : startRun({ ...input, whenBusy: otherwise })
          }),
          Effect.catchTag("RunAlreadyActive", () => Effect.fail(busy))
        )
    )

  /**
   * `whenBusy: interrupt`: a start the busy thread refused stops the run in the way (and
   * waits for its end), then tries again; a few times at most, as another caller's run
   * may take the thread in between.
   */
  const startRun: OrchestratorShape["startRun"] = (input) => {
    if (input.whenBusy === "steer") return steer(input)
    if (input.whenBusy !== "interrupt") return startOnce(input)
    const attempt = (left: number): ReturnType<OrchestratorShape["startRun"]> =>
      Effect.catchTag(startOnce(input), "RunAlreadyActive", (busy) =>
        left === 0
          ? Effect.fail(busy)
          : interruptRun({ threadId: input.threadId }).pipe(
              Effect.catchTag("NoActiveRun", () => Effect.void),
              Effect.zipRight(attempt(left - 1))
            )
      )
    return attempt(INTERRUPT_ATTEMPTS)
  }

  return { startRun, interruptRun }
}
