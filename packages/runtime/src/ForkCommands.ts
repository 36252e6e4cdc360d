/**
 * The Orchestrator's lineage commands: `thread.fork` (a new thread that inherits its
 * source up to a completed run) and `thread.mergeBack` (a fork's work offered back to
 * its source, as a pending transfer the source's next run takes in).
 */
import type { Run, ThreadId } from "@skein/domain"
import {
  ForkThreadFields,
  InvalidSourcePoint,
  NotAFork,
  RunNotFound,
  StorageError,
  ThreadId as ThreadIdSchema,
  ThreadNotFound
} from "@skein/domain"
import { Effect, Option, Schema } from "effect"
import type { ThreadActorsShape } from "./actors/ThreadActors.js"
import { mergeBackTransfer, planChildThread } from "./lineage/Lineage.js"
import { inheritanceOf } from "./lineage/LineageContext.js"
import { sourceOfRun } from "./lineage/Spawn.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import type { EventStoreShape } from "./store/EventStore.js"
import { payloadHash, replay } from "./store/Receipts.js"

type ForkThreadFieldsType = Schema.Struct.Type<typeof ForkThreadFields>
const ForkReceipt = Schema.Struct({ threadId: ThreadIdSchema })

/** The run a fork starts from: completed, not rolled back (a checkpoint names its run). */
const sourceRunOf = (store: EventStoreShape, threadId: ThreadId, spec: ForkThreadFieldsType["sourcePoint"]) =>
  Effect.gen(function* () {
    const refuse = (detail: string) => Effect.fail(new InvalidSourcePoint({ threadId, detail }))
    if (spec === "latest_stable") {
      const latest = yield* store.lookup.latestStableRun(threadId)
      if (Option.isNone(latest)) return yield* refuse("it has no completed run with a checkpoint yet")
      return latest.value
    }
    let runId: Run["id"]
    if ("checkpointId" in spec) {
      const checkpoint = yield* store.lookup.checkpoint(threadId, spec.checkpointId)
      if (Option.isNone(checkpoint) || checkpoint.value.status !== "ready") {
        return yield* refuse(`there is no ready checkpoint ${spec.checkpointId} on it`)
      }
      runId = checkpoint.value.runId
    } else runId = spec.runId
    const run = yield* store.lookup.run(threadId, runId)
    if (Option.isNone(run)) return yield* new RunNotFound({ runId })
    const status = run.value.status
    if (status !== "completed") {
      return yield* refuse(
        status === "running" || status === "queued"
          ? `run ${runId} is still in flight; fork from a completed run, or wait for it to end`
          : `run ${runId} is ${status.replace("_", " ")}: only a completed run is a stable point to fork from`
      )
    }
    return run.value
  })

/** `thread.fork`: a new thread that inherits its source up to a completed run. */
const forkThread =
  (store: EventStoreShape): OrchestratorShape["forkThread"] =>
  (input) =>
    Effect.gen(function* () {
      const hash = payloadHash({
        sourceThreadId: input.sourceThreadId,
        sourcePoint: input.sourcePoint,
        sideChat: input.sideChat ?? false,
        title: input.title ?? null
      })
      const replayed = yield* replay(store.receipt, input.commandId, "thread.fork", hash, ForkReceipt)
      if (Option.isSome(replayed)) {
        const fork = yield* store.loadThread(replayed.value.threadId)
        const transfer = Option.flatMap(fork, (f) => Option.fromNullable(inheritanceOf(f)))
        if (Option.isSome(fork) && Option.isSome(transfer))
          return { thread: fork.value.thread, transfer: transfer.value }
      }
      const source = yield* Effect.flatMap(store.lookup.thread(input.sourceThreadId), (found) =>
        Option.isSome(found)
          ? Effect.succeed(found.value)
          : Effect.fail(new ThreadNotFound({ threadId: input.sourceThreadId }))
      )
      const run = yield* sourceRunOf(store, source.id, input.sourcePoint)
      const planned = planChildThread({
        kind: "fork",
        parent: source,
        source: yield* sourceOfRun(store, source, run),
        fromCheckpoint: typeof input.sourcePoint === "object" && "checkpointId" in input.sourcePoint,
        title: input.title ?? (source.title === "" ? "fork" : `fork of ${source.title}`.slice(0, 500)),
        sideChat: input.sideChat ?? false,
        createdBy: "user",
        now: new Date().toISOString()
      })
      yield* store
        .append({
          threadId: planned.thread.id,
          events: planned.events,
          expectedSequence: 0,
          commandId: input.commandId,
          receipt: input.commandId
            ? {
                commandId: input.commandId,
                method: "thread.fork",
                payloadHash: hash,
                result: { threadId: planned.thread.id }
              }
            : undefined
        })
        .pipe(Effect.catchTag("SequenceConflict", (e) => Effect.fail(new StorageError({ detail: e.message }))))
      return { thread: planned.thread, transfer: planned.transfer }
    })

/** `thread.mergeBack`: a fork's work offered back to its source, as a transfer the source's actor records. */
const mergeBack =
  (store: EventStoreShape, actors: ThreadActorsShape): OrchestratorShape["mergeBack"] =>
  (input) =>
    Effect.gen(function* () {
      const fork = yield* store.loadThread(input.forkThreadId)
      if (Option.isNone(fork)) return yield* new ThreadNotFound({ threadId: input.forkThreadId })
      const forkTransfer = inheritanceOf(fork.value)
      if (fork.value.thread.lineage.relationshipToParent !== "fork" || forkTransfer === undefined) {
        return yield* new NotAFork({ threadId: input.forkThreadId })
      }
      const latest = yield* store.lookup.latestStableRun(input.forkThreadId)
      if (Option.isNone(latest)) {
        return yield* new InvalidSourcePoint({
          threadId: input.forkThreadId,
          detail: "the fork has no completed run to merge back yet"
        })
      }
      const transfer = mergeBackTransfer({
        fork: fork.value.thread,
        forkTransfer,
        latest: latest.value,
        now: new Date().toISOString()
      })
      return yield* actors.use(forkTransfer.sourceThreadId, (actor) =>
        actor.ask("RecordTransfer", {
          transfer,
          receipt: input.commandId
            ? {
                commandId: input.commandId,
                method: "thread.mergeBack",
                hash: payloadHash({ forkThreadId: input.forkThreadId })
              }
            : null
        })
      )
    })

export const makeForkCommands = (store: EventStoreShape, actors: ThreadActorsShape) => ({
  forkThread: forkThread(store),
  mergeBack: mergeBack(store, actors)
})
