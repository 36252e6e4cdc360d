/**
 * A thread as an `@effect/cluster` entity: the thread actor's protocol (ThreadProtocol.ts)
 * and the three things a client asks of an actor beyond one message (steering a running
 * turn, answering an approval, a subagent child's existence). The cluster places each
 * thread on one runner, by its id, and routes these to it from any process.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { RespondApprovalFields, SkeinError, StartRunFields, TurnItem } from "@skein/domain"
import { Schema } from "effect"
import { RunAccepted, threadRpcs } from "../actors/ThreadProtocol.js"

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

export const ThreadEntity = Entity.make("Thread", [...threadRpcs, Steer, Respond, ChildSpawned])
