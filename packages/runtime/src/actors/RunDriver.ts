/**
 * The fiber that carries one run to its provider: opens (or reuses) a session,
 * starts or resumes the provider thread, sends the turn with its handoff block, and
 * reports every provider event back to the thread actor, which persists them in order.
 *
 * Interrupting asks the provider to stop its turn; a provider that does not stop
 * within the grace period has its process killed.
 */
import type {
  ContextHandoff,
  HandoffDelivery,
  ProviderEvent,
  ProviderFailure,
  ProviderThread,
  Run,
  RunFailure,
  SkeinError,
  TurnItemContent
} from "@skein/domain"
import { Array as Arr, Deferred, Duration, Effect, Either, Stream } from "effect"
import type { Chunk } from "effect"
import type { ProviderSessionsShape, SessionLease } from "./ProviderSessions.js"
import type { StartPlan } from "./ThreadPlanner.js"
import { BindNativeThread, FinishRun, RecordItems, ResumeFailed } from "./ThreadMessages.js"
import type { ThreadMessage } from "./ThreadMessages.js"

export type StopReason = "user_interrupt" | "shutdown"

export interface DriveInput {
  readonly run: Run
  readonly providerThread: ProviderThread
  readonly handoff: ContextHandoff | null
  readonly delivery: HandoffDelivery
  readonly workspace: string | null
  readonly sessions: ProviderSessionsShape
  readonly ask: (message: ThreadMessage) => Effect.Effect<unknown, SkeinError>
  /** Completed with the reason when the run must stop. */
  readonly stop: Deferred.Deferred<StopReason>
  readonly graceMs: number
}

interface TurnResult {
  readonly outcome: "completed" | "interrupted"
  readonly turnRef: string | null
}

const failureOf = (error: ProviderFailure | SkeinError): RunFailure => {
  if (error._tag === "ProviderFailure") {
    const reason =
      error.kind === "crash" ? "provider_crash" : error.kind === "resume_failed" ? "resume_failed" : "provider_error"
    return { reason, message: error.message }
  }
  return { reason: "provider_error", message: error.message }
}

export const driveRun = (input: DriveInput): Effect.Effect<void> => {
  const { ask, run } = input
  let turnRef: string | null = null
  /** Once the turn is sent, stopping goes through the provider; before, the run just ends. */
  let turnSent = false

  const ensureThread = (lease: SessionLease) =>
    Effect.gen(function* () {
      let providerThread = input.providerThread
      let handoff = input.handoff
      const start = (pt: ProviderThread) =>
        lease.handle.startThread({ workspace: input.workspace, model: pt.settings.model }).pipe(
          Effect.tap((native) =>
            ask(
              new BindNativeThread({
                runId: run.id,
                providerThreadId: pt.id,
                nativeRef: native.nativeRef,
                strength: native.strength
              })
            )
          ),
          Effect.map((native) => native.nativeRef)
        )
      let nativeRef = providerThread.nativeRef
      if (nativeRef === null) {
        nativeRef = yield* start(providerThread)
      } else if (!lease.loadedRefs.has(nativeRef) || run.contextResolution !== "none") {
        // Coming back after other runs: resume explicitly even in a warm process, since
        // the provider may have dropped the thread meanwhile.
        const resumed = yield* Effect.either(lease.handle.resumeThread(nativeRef))
        if (Either.isLeft(resumed)) {
          if (resumed.left.kind !== "resume_failed") return yield* resumed.left
          const plan = (yield* ask(new ResumeFailed({ runId: run.id, detail: resumed.left.detail }))) as StartPlan
          providerThread = plan.providerThread
          handoff = plan.handoff
          nativeRef = yield* start(providerThread)
        }
      }
      lease.loadedRefs.add(nativeRef)
      return { nativeRef, handoff }
    })

  /** Items that came with the end of the turn: they go with FinishRun, in its commit. */
  let tail: Array<TurnItemContent> = []
  let outcome: TurnResult["outcome"] = "completed"

  /**
   * Whatever the provider had reported when the fiber read it arrives as one chunk,
   * and its items are recorded in one commit (one batch for live followers): under a
   * burst of events that means fewer transactions and fewer frames, and with events
   * that trickle in, one commit each as before.
   */
  const onChunk = (events: Chunk.Chunk<ProviderEvent>): Effect.Effect<void, SkeinError> => {
    const items: Array<TurnItemContent> = []
    let ended = false
    for (const event of events) {
      switch (event._tag) {
        case "TurnStarted":
          turnRef = event.turnRef
          break
        case "Item":
          items.push(event.item)
          break
        case "SubagentRequested":
          items.push({
            type: "tool_call",
            name: "spawn_subagent",
            input: JSON.stringify({ provider: event.provider, prompt: event.prompt }),
            output: null
          })
          break
        case "TurnInterrupted":
          outcome = "interrupted"
          turnRef = event.turnRef
          ended = true
          break
        case "TurnCompleted":
          turnRef = event.turnRef
          ended = true
          break
      }
    }
    if (ended) {
      tail = items
      return Effect.void
    }
    return Arr.isNonEmptyArray(items) ? Effect.asVoid(ask(new RecordItems({ runId: run.id, items }))) : Effect.void
  }

  const turn = (lease: SessionLease) =>
    Effect.gen(function* () {
      const { handoff, nativeRef } = yield* ensureThread(lease)
      if (yield* Deferred.isDone(input.stop)) return { outcome: "interrupted", turnRef: null } satisfies TurnResult
      turnSent = true
      const consume = lease.handle
        .runTurn({
          nativeRef,
          runId: run.id,
          message: run.message,
          handoff: handoff ? { handoffId: handoff.id, delivery: input.delivery, text: handoff.summaryText } : null,
          model: run.model,
          workspace: input.workspace
        })
        .pipe(Stream.runForEachChunk(onChunk))
      const stopper = Deferred.await(input.stop).pipe(
        Effect.zipRight(Effect.ignore(lease.handle.interrupt(nativeRef))),
        Effect.zipRight(Effect.sleep(Duration.millis(input.graceMs))),
        Effect.zipRight(lease.kill),
        Effect.as("killed" as const)
      )
      const winner = yield* Effect.raceFirst(Effect.as(consume, "done" as const), stopper)
      return { outcome: winner === "killed" ? "interrupted" : outcome, turnRef } satisfies TurnResult
    })

  const stoppedBeforeTurn = Deferred.await(input.stop).pipe(
    Effect.flatMap(() =>
      turnSent ? Effect.never : Effect.succeed<TurnResult>({ outcome: "interrupted", turnRef: null })
    )
  )

  return Effect.raceFirst(input.sessions.use(run.provider, input.workspace, turn), stoppedBeforeTurn).pipe(
    Effect.either,
    Effect.flatMap((result) =>
      Effect.gen(function* () {
        const stopReason = yield* Deferred.poll(input.stop).pipe(
          Effect.flatMap((polled) => (polled._tag === "Some" ? polled.value : Effect.succeed(null)))
        )
        if (Either.isRight(result)) {
          const { outcome } = result.right
          return new FinishRun({
            runId: run.id,
            outcome,
            failure:
              outcome === "interrupted"
                ? { reason: stopReason ?? "user_interrupt", message: "The run was interrupted" }
                : null,
            turnRef: result.right.turnRef,
            items: tail
          })
        }
        if (stopReason !== null) {
          // Killing the process to enforce an interrupt is not a provider failure.
          return new FinishRun({
            runId: run.id,
            outcome: "interrupted",
            failure: { reason: stopReason, message: "The run was interrupted" },
            turnRef,
            items: tail
          })
        }
        return new FinishRun({
          runId: run.id,
          outcome: "failed",
          failure: failureOf(result.left),
          turnRef,
          items: tail
        })
      })
    ),
    Effect.flatMap((finish) => ask(finish)),
    Effect.ignore
  )
}
