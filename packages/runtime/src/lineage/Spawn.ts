/**
 * App-owned subagents: a child thread (relationship `subagent`) with a pending
 * `subagent_spawn` transfer of its parent's context, and a run on any provider; when
 * that run ends, its result goes back to the parent as a pending `subagent_result`
 * transfer, taken in by the parent's next run. Started by `subagent.spawn` or by a
 * provider calling the app tool `spawn_subagent` during a parent's run.
 *
 * Writes only the child's new log and asks actors for the rest: the child's actor
 * starts its run, the parent's actor records the result (one writer per thread).
 */
import type { AppThread, CommandId, ProviderName, Run, SkeinError, ThreadId } from "@skein/domain"
import { ProviderNotFound, StorageError, ThreadNotFound } from "@skein/domain"
import { Effect, Option, Schema } from "effect"
import type { Scope } from "effect"
import { payloadHash, replay } from "../store/Receipts.js"
import type { EventStoreShape } from "../store/EventStore.js"
import type { SourceRun } from "./Lineage.js"
import { planChildThread, subagentResultTransfer } from "./Lineage.js"

export interface SpawnDeps {
  readonly store: EventStoreShape
  readonly providerExists: (provider: string) => Effect.Effect<void, ProviderNotFound>
  /** Starts the child's run; what the actor accepted holds more, only its run is used here. */
  readonly startRun: (input: {
    readonly threadId: ThreadId
    readonly provider: ProviderName
    readonly message: string
    readonly model?: string | undefined
  }) => Effect.Effect<{ readonly run: Run }, SkeinError>
  readonly recordResult: (
    parentId: ThreadId,
    transfer: ReturnType<typeof subagentResultTransfer>
  ) => Effect.Effect<unknown, SkeinError>
  /** Where the watch for the child's result lives (outlives the caller). */
  readonly scope: Scope.Scope
  /** The child's log is written: the parent's live actor, if any, looks for its result in storage again. */
  readonly childSpawned: (parentId: ThreadId) => void
}

export interface SpawnInput {
  readonly parentThreadId: ThreadId
  readonly provider: ProviderName
  readonly prompt: string
  readonly title?: string | undefined
  readonly model?: string | undefined
  readonly createdBy: "user" | "agent"
  readonly commandId?: CommandId | undefined
}

const SpawnReceipt = Schema.Struct({ threadId: Schema.String })

/** The parent's newest completed run with a checkpoint, as the child's source point (or none yet). */
export const latestStableSource = (
  store: EventStoreShape,
  thread: AppThread
): Effect.Effect<SourceRun | null, StorageError> =>
  Effect.gen(function* () {
    const run = yield* store.lookup.latestStableRun(thread.id)
    if (Option.isNone(run)) return null
    return yield* sourceOfRun(store, thread, run.value)
  })

export const sourceOfRun = (
  store: EventStoreShape,
  thread: AppThread,
  run: Run
): Effect.Effect<SourceRun, StorageError> =>
  Effect.gen(function* () {
    const checkpoint = yield* store.lookup.checkpointOfRun(thread.id, run.id)
    if (run.providerThreadId === null) {
      return { thread, run, checkpointId: Option.isSome(checkpoint) ? checkpoint.value.id : null, native: null }
    }
    // Its snapshot for the native ref, and the one row of the run for its turn: a few
    // keyed reads, however long the thread.
    const providerThread = yield* store.lookup.providerThread(thread.id, run.providerThreadId)
    const turnRef = yield* store.lookup.servedTurn(thread.id, run.providerThreadId, run.ordinal)
    const nativeRef = Option.isSome(providerThread) ? providerThread.value.nativeRef : null
    return {
      thread,
      run,
      checkpointId: Option.isSome(checkpoint) ? checkpoint.value.id : null,
      native: nativeRef === null ? null : { nativeRef, turnRef: Option.getOrNull(turnRef) }
    }
  })

/** Watches the child's run and sends its result to the parent once it ends. */
const returnResult = (deps: SpawnDeps, parentId: ThreadId, child: AppThread, runId: Run["id"]) =>
  deps.store.awaitRunEnd(child.id, runId).pipe(
    Effect.flatMap((run) =>
      deps.recordResult(
        parentId,
        subagentResultTransfer({ parentId, child, run, createdBy: "agent", now: new Date().toISOString() })
      )
    ),
    // If this is lost (a crash), the parent's next run finds the result in storage anyway.
    Effect.catchAllCause((cause) => Effect.logWarning(`subagent ${child.id}: returning its result failed`, cause)),
    Effect.forkIn(deps.scope),
    Effect.asVoid
  )

export const spawnSubagent = (
  deps: SpawnDeps,
  input: SpawnInput
): Effect.Effect<{ readonly thread: AppThread; readonly run: Run }, SkeinError> =>
  Effect.gen(function* () {
    const { store } = deps
    const hash = payloadHash({
      parentThreadId: input.parentThreadId,
      provider: input.provider,
      prompt: input.prompt,
      // Only when given, so receipts written before these existed still match.
      ...(input.title === undefined ? {} : { title: input.title }),
      ...(input.model === undefined ? {} : { model: input.model })
    })
    let child: AppThread | null = null
    const replayed = yield* replay(store.receipt, input.commandId, "subagent.spawn", hash, SpawnReceipt)
    if (Option.isSome(replayed))
      child = Option.getOrNull(yield* store.lookup.thread(replayed.value.threadId as ThreadId))
    if (child === null) {
      const parent = yield* store.lookup.thread(input.parentThreadId)
      if (Option.isNone(parent)) return yield* new ThreadNotFound({ threadId: input.parentThreadId })
      yield* deps.providerExists(input.provider)
      const source = yield* latestStableSource(store, parent.value)
      const planned = planChildThread({
        kind: "subagent",
        parent: parent.value,
        source,
        fromCheckpoint: false,
        title: input.title ?? input.prompt.replace(/\s+/g, " ").trim().slice(0, 80),
        sideChat: false,
        createdBy: input.createdBy,
        now: new Date().toISOString()
      })
      yield* store.append({
        threadId: planned.thread.id,
        events: planned.events,
        expectedSequence: 0,
        commandId: input.commandId,
        receipt:
          input.commandId === undefined
            ? undefined
            : {
                commandId: input.commandId,
                method: "subagent.spawn",
                payloadHash: hash,
                result: { threadId: planned.thread.id }
              }
      })
      child = planned.thread
    }
    deps.childSpawned(input.parentThreadId)
    // The child's run: started here, or found when this is a retry.
    const existing = yield* store.lookup.runByOrdinal(child.id, 1)
    const run = Option.isSome(existing)
      ? existing.value
      : (yield* deps.startRun({
          threadId: child.id,
          provider: input.provider,
          message: input.prompt,
          model: input.model
        })).run
    yield* returnResult(deps, input.parentThreadId, child, run.id)
    return { thread: child, run }
  }).pipe(Effect.catchTag("SequenceConflict", (e) => Effect.fail(new StorageError({ detail: e.message }))))
