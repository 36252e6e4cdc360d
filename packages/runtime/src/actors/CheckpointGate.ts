/**
 * A thread's checkpoint gate: while a run's git checkpoint is being taken (from just
 * before its end is recorded `pending` until its `RecordCheckpoint` is handled), the
 * run's workspace must not change, so the thread's next run and a rollback wait for it.
 *
 * The driver of the run `begin`s a capture and runs the release it gets back once the
 * checkpoint is recorded (or abandoned); the next run's driver waits on `settled`
 * before its provider touches the workspace; the actor `refuse`s a run start or a
 * rollback while a capture is open, and a caller that was refused because of the
 * capture that began last waits on `settled` and asks again (`worthRetrying`).
 */
import type { RunId, ThreadId } from "@skein/domain"
import { RunAlreadyActive } from "@skein/domain"
import { Deferred, Effect, Ref } from "effect"

interface Capture {
  readonly runId: RunId
  readonly done: Deferred.Deferred<void>
}

export interface CheckpointGate {
  /** Waits until no checkpoint of the thread is being taken (at once, mostly). */
  readonly settled: Effect.Effect<void>
  /**
   * A checkpoint of `runId` is about to be recorded pending: `settled` waits until the
   * returned release has run (running it again does nothing).
   */
  readonly begin: (runId: RunId) => Effect.Effect<Effect.Effect<void>>
  /** Whether a checkpoint is being taken now. */
  readonly capturing: Effect.Effect<boolean>
  /** Fails with `RunAlreadyActive` (naming the run) while a checkpoint is being taken. */
  readonly refuse: Effect.Effect<void, RunAlreadyActive>
  /** Whether a `RunAlreadyActive` refusal named the run whose capture began last. */
  readonly worthRetrying: (runId: string) => Effect.Effect<boolean>
}

export const make = (threadId: ThreadId): Effect.Effect<CheckpointGate> =>
  Effect.gen(function* () {
    const open = yield* Ref.make<Capture | undefined>(undefined)
    const last = yield* Ref.make<RunId | undefined>(undefined)
    return {
      settled: Effect.flatMap(Ref.get(open), (capture) =>
        capture === undefined ? Effect.void : Deferred.await(capture.done)
      ),
      begin: (runId) =>
        Effect.gen(function* () {
          const capture: Capture = { runId, done: yield* Deferred.make<void>() }
          yield* Ref.set(open, capture)
          yield* Ref.set(last, runId)
          return Ref.update(open, (now) => (now === capture ? undefined : now)).pipe(
            Effect.zipRight(Deferred.succeed(capture.done, undefined)),
            Effect.asVoid
          )
        }),
      capturing: Effect.map(Ref.get(open), (capture) => capture !== undefined),
      refuse: Effect.flatMap(Ref.get(open), (capture) =>
        capture === undefined ? Effect.void : Effect.fail(new RunAlreadyActive({ threadId, runId: capture.runId }))
      ),
      worthRetrying: (runId) => Effect.map(Ref.get(last), (lastRun) => lastRun === runId)
    }
  })
