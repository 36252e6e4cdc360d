/**
 * A thread as an `@effect/cluster` entity: the thread actor's protocol (ThreadProtocol.ts)
 * and the five things a client asks of a thread beyond one message to its actor
 * (steering a running turn, answering an approval, a subagent child's existence, a run's
 * start and end at once, where the thread lives). The cluster places each thread on one
 * runner, by its id, and routes these to it from any process.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { RespondApprovalFields, RunId, RunView, SkeinError, StartRunFields, TurnItem } from "@skein/domain"
import { Schema } from "effect"
import { RunAccepted, StartRunPayload, threadRpcs } from "../actors/ThreadProtocol.js"

/** `run.start` with `whenBusy: steer`: into the running turn, or `idle` when none runs. */
export const Steer = Rpc.make("Steer", {
  payload: StartRunFields,
  success: Schema.Union(RunAccepted, Schema.Literal("idle")),
  error: SkeinError
})

/** `approval.respond`: the provider hears the decision, then it is recorded. */
export const Respond = Rpc.make("Respond", { payload: RespondApprovalFields, success: TurnItem, error: SkeinError })

/** A subagent child of the thread now exists: its next runs look for children's results again. */
export const ChildSpawned = Rpc.make("ChildSpawned", { error: SkeinError })

/**
 * `run.start` with `wait`, from any process: the run started and its end awaited
 * where the thread's events are written, in one message. `runId` is the id the run is to
 * have, so that after the thread moved on the way the sender finds the run, or starts it
 * again under that id, without starting a second.
 */
export const StartAndWait = Rpc.make("StartAndWait", {
  payload: { ...StartRunPayload.fields, runId: RunId },
  success: RunView,
  error: SkeinError
})

/** `thread.locate`: the RPC url of the daemon whose runner holds the thread (null: it serves none). */
export const Locate = Rpc.make("Locate", { success: Schema.NullOr(Schema.String), error: SkeinError })

export const ThreadEntity = Entity.make("Thread", [...threadRpcs, Steer, Respond, ChildSpawned, StartAndWait, Locate])
