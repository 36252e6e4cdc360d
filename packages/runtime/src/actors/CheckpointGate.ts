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
import { Deferred, Effect } from "effect"

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

/** Plain fields, not `Ref`s: read and written only in synchronous steps, and an idle actor keeps it small. */
class Gate implements CheckpointGate {
  /** The capture being taken, if any. */
  private open: Capture | undefined = undefined
  /** The run whose capture began last. */
  private last: RunId | undefined = undefined
  constructor(private readonly threadId: ThreadId) {}

  get settled(): Effect.Effect<void> {
    return Effect.suspend(() => (this.open === undefined ? Effect.void : Deferred.await(this.open.done)))
  }

  begin(runId: RunId): Effect.Effect<Effect.Effect<void>> {
    return Effect.map(Deferred.make<void>(), (done) => {
      const capture: Capture = { runId, done }
      this.open = capture
      this.last = runId
      return Effect.suspend(() => {
        if (this.open === capture) this.open = undefined
        return Effect.asVoid(Deferred.succeed(done, undefined))
      })
    })
  }

  get capturing(): Effect.Effect<boolean> {
    return Effect.sync(() => this.open !== undefined)
  }

  get refuse(): Effect.Effect<void, RunAlreadyActive> {
    return Effect.suspend(() =>
      this.open === undefined
        ? Effect.void
        : Effect.fail(new RunAlreadyActive({ threadId: this.threadId, runId: this.open.runId }))
    )
  }

  worthRetrying(runId: string): Effect.Effect<boolean> {
    return Effect.sync(() => this.last === runId)
  }
}

export const make = (threadId: ThreadId): Effect.Effect<CheckpointGate> => Effect.sync(() => new Gate(threadId))
