/**
 * The Orchestrator's `thread.rollback`: the thread's actor records the rollback (and
 * the file restore it owes, if asked); provider threads that can drop the rolled-back
 * turns natively are asked to; work those runs sent elsewhere is withdrawn; the files
 * come back last; the rolled-back runs' checkpoints go. `dryRun` previews the restore.
 */
import type { SkeinError, ThreadId, ThreadView } from "@skein/domain"
import { InvalidInput as InvalidInputError, InvalidSourcePoint, RestorePending } from "@skein/domain"
import { Effect, Option } from "effect"
import type { ProviderSessionsShape } from "./actors/ProviderSessions.js"
import type { ThreadActorsShape } from "./actors/ThreadActors.js"
import type { WorkspaceCheckpointsShape } from "./lineage/WorkspaceCheckpoints.js"
import type { OrchestratorShape } from "./Orchestrator.js"
import type { NativeRollbackTarget } from "./actors/ThreadProtocol.js"
import type { Restores } from "./Restores.js"
import type { EventStoreShape } from "./store/EventStore.js"

export interface RollbackContext {
  readonly store: EventStoreShape
  readonly actors: ThreadActorsShape
  readonly sessions: ProviderSessionsShape
  readonly checkpoints: WorkspaceCheckpointsShape
  readonly restores: Restores
  readonly threadView: (threadId: ThreadId) => Effect.Effect<ThreadView, SkeinError>
}

type RollbackInput = Parameters<OrchestratorShape["rollback"]>[0]

/**
 * `dryRun`: what the rollback's file restore would change, with nothing written. The
 * checks are the rollback's own (the run exists, no run is active, its checkpoint can
 * serve), so a dry run that answers is a rollback that would go ahead.
 */
const previewRollback = ({ checkpoints, store, threadView }: RollbackContext, input: RollbackInput) =>
  Effect.gen(function* () {
    const view = yield* threadView(input.threadId)
    const { thread } = view
    if (!input.restoreFiles) {
      return yield* new InvalidInputError({
        detail: "thread.rollback: dryRun previews the file restore and needs restoreFiles: true"
      })
    }
    if (input.toRunOrdinal > view.runs.length) {
      return yield* new InvalidInputError({
        detail: `thread ${input.threadId} has ${view.runs.length} run(s): it cannot be rolled back to run ${input.toRunOrdinal}`
      })
    }
    if (thread.restore?.status === "owed") {
      return yield* new RestorePending({ threadId: input.threadId, toRunOrdinal: thread.restore.toRunOrdinal })
    }
    const checkpoint = Option.getOrUndefined(yield* store.lookup.gitCheckpointOfRun(input.threadId, input.toRunOrdinal))
    if (checkpoint?.commitSha === undefined || thread.workspace === null) {
      return yield* new InvalidSourcePoint({
        threadId: input.threadId,
        detail: `run ${input.toRunOrdinal} has no git checkpoint to restore files from (its workspace is not a git repository, or the run did not complete)`
      })
    }
    const restore = yield* checkpoints.restore({
      workspace: thread.workspace,
      threadId: input.threadId,
      commit: checkpoint.commitSha,
      toRunOrdinal: input.toRunOrdinal,
      restoreId: "dry-run",
      dryRun: true
    })
    return { ...view, restore }
  })

/** Provider threads that can drop the rolled-back turns natively are asked to, and kept usable; the actor hears how it went. */
const rollBackNatively = (
  { actors, sessions, store }: RollbackContext,
  input: RollbackInput,
  native: ReadonlyArray<typeof NativeRollbackTarget.Type>
) =>
  Effect.gen(function* () {
    const workspace = Option.getOrNull(yield* store.lookup.thread(input.threadId))?.workspace ?? null
    const results = yield* Effect.forEach(
      native,
      (target) =>
        sessions
          .use(target.provider, workspace, (lease) =>
            lease.handle.rollbackThread(target.nativeRef, target.beforeTurnRef)
          )
          .pipe(
            Effect.match({
              onFailure: (error) => ({ providerThreadId: target.providerThreadId, detail: error.message }),
              onSuccess: () => ({ providerThreadId: target.providerThreadId, detail: null })
            })
          ),
      { concurrency: 4 }
    )
    if (results.length > 0) {
      yield* actors.use(input.threadId, (actor) =>
        actor.ask("RollbackSettled", { toRunOrdinal: input.toRunOrdinal, results })
      )
    }
  })

/** Work this thread sent elsewhere from runs now rolled back is no longer to be delivered: its targets look again. */
const withdrawSentWork = ({ actors, threadView }: RollbackContext, threadId: ThreadId) =>
  Effect.gen(function* () {
    const view = yield* threadView(threadId)
    const targets = new Set(
      view.transfers
        .filter(
          (t) =>
            t.sourceThreadId === threadId &&
            t.targetThreadId !== threadId &&
            t.status === "pending" &&
            (t.type === "merge_back" || t.type === "subagent_result")
        )
        .map((t) => t.targetThreadId)
    )
    yield* Effect.forEach(
      targets,
      (target) => actors.use(target, (actor) => actor.ask("RevalidateIncoming", undefined)),
      {
        discard: true
      }
    )
  })

/**
 * The hidden refs of the runs a rollback dropped: their checkpoints are gone with
 * them (rolled-back runs never live again). A failure only leaves refs behind: logged.
 */
const dropRolledBackCheckpoints = ({ checkpoints, store }: RollbackContext, threadId: ThreadId, toRunOrdinal: number) =>
  Effect.gen(function* () {
    const workspace = Option.getOrNull(yield* store.lookup.thread(threadId))?.workspace ?? null
    if (workspace === null || !(yield* checkpoints.isRepository(workspace))) return
    yield* checkpoints.dropCheckpointsAfter(workspace, threadId, toRunOrdinal)
  }).pipe(
    Effect.catchAll((error) =>
      Effect.logWarning(`thread ${threadId}: the checkpoint refs of rolled-back runs stay (${error.message})`)
    )
  )

export const makeRollback =
  (context: RollbackContext): OrchestratorShape["rollback"] =>
  (input) =>
    Effect.gen(function* () {
      if (input.dryRun) return yield* previewRollback(context, input)
      const { actors, restores, threadView } = context
      const started = yield* actors.use(input.threadId, (actor) =>
        actor.askSettled("Rollback", {
          toRunOrdinal: input.toRunOrdinal,
          restoreFiles: input.restoreFiles ?? false,
          commandId: input.commandId
        })
      )
      if (!started.replayed) {
        yield* rollBackNatively(context, input, started.native)
        yield* withdrawSentWork(context, input.threadId)
      }
      // The files last: the thread takes no run until they are back (RestorePending).
      const restore = started.restore === null ? null : yield* restores.finish(input.threadId, started.restore)
      if (!started.replayed) yield* dropRolledBackCheckpoints(context, input.threadId, input.toRunOrdinal)
      const view = yield* threadView(input.threadId)
      return restore?.outcome ? { ...view, restore: restore.outcome } : view
    })
