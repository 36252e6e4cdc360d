/**
 * File restores that rollbacks owe. A rollback with `restoreFiles` records the restore
 * `owed` in its own commit (see ThreadRestore); this finishes it: right after the
 * rollback, again when the rollback's command is retried, and at start-up for any that
 * a crash left owed. The thread takes no run while its restore is owed.
 *
 * One restore runs at a time per restore id, on a fiber of the runtime's own (a
 * FiberMap): a caller that gives up waiting does not cut a restore short, and a second
 * caller joins the one running. The git level saves the work tree before it changes a
 * file and computes its outcome against that backup, so a restore cut short by a crash
 * and run again ends the same way.
 */
import type { AppThread, SkeinError, StorageError, ThreadId, ThreadRestore } from "@skein/domain"
import { GitFailed } from "@skein/domain"
import { Effect, Fiber, FiberMap, Option } from "effect"
import type { Scope } from "effect"
import { ThreadActors } from "./actors/ThreadActors.js"
import { EventStore } from "./store/EventStore.js"
import { WorkspaceCheckpoints } from "./lineage/WorkspaceCheckpoints.js"

export interface Restores {
  /** Finishes the restore (at once when it is done already) and gives it as recorded. */
  readonly finish: (threadId: ThreadId, restore: ThreadRestore) => Effect.Effect<ThreadRestore, SkeinError>
  /** Finishes every restore a previous process left owed; one that fails is recorded `failed` and logged. */
  readonly recover: Effect.Effect<void, StorageError>
}

export const makeRestores: Effect.Effect<
  Restores,
  never,
  Scope.Scope | ThreadActors | WorkspaceCheckpoints | EventStore
> = Effect.gen(function* () {
  const actors = yield* ThreadActors
  const checkpoints = yield* WorkspaceCheckpoints
  const store = yield* EventStore
  const running = yield* FiberMap.make<string, ThreadRestore, SkeinError>()

  const settle = (
    threadId: ThreadId,
    restore: ThreadRestore,
    result: { readonly outcome: NonNullable<ThreadRestore["outcome"]> } | { readonly detail: string }
  ) =>
    Effect.map(
      actors.use(threadId, (actor) =>
        actor.ask("RestoreFinished", {
          restoreId: restore.id,
          outcome: "outcome" in result ? result.outcome : null,
          detail: "detail" in result ? result.detail : null
        })
      ),
      (recorded): ThreadRestore => recorded ?? restore
    )

  const attempt = (threadId: ThreadId, restore: ThreadRestore): Effect.Effect<ThreadRestore, SkeinError> =>
    checkpoints
      .restore({
        workspace: restore.workspace,
        threadId,
        commit: restore.commit,
        toRunOrdinal: restore.toRunOrdinal,
        restoreId: restore.id,
        dryRun: false
      })
      .pipe(
        Effect.matchEffect({
          onSuccess: (outcome) => settle(threadId, restore, { outcome }),
          onFailure: (error) =>
            Effect.zipRight(
              settle(threadId, restore, { detail: error.detail }),
              Effect.fail(
                new GitFailed({
                  workspace: restore.workspace,
                  detail: `the rollback to run ${restore.toRunOrdinal} is recorded, but restoring its files failed (${error.detail}). No file was lost: the restore saves the work tree before it changes anything. Retry the rollback with the same commandId to restore them`
                })
              )
            )
        })
      )

  const finish: Restores["finish"] = (threadId, restore) =>
    restore.status === "done"
      ? Effect.succeed(restore)
      : Effect.suspend(() =>
          Option.match(FiberMap.unsafeGet(running, restore.id), {
            onSome: Fiber.join,
            onNone: () => Effect.flatMap(FiberMap.run(running, restore.id, attempt(threadId, restore)), Fiber.join)
          })
        )

  const recover: Restores["recover"] = Effect.flatMap(store.lookup.owedRestores, (threads) =>
    Effect.forEach(
      threads,
      (thread: AppThread) =>
        finish(thread.id, thread.restore!).pipe(
          Effect.tap((done) =>
            Effect.logInfo(`finished the file restore of thread ${thread.id} to run ${done.toRunOrdinal} left owed`)
          ),
          Effect.catchAll((error) =>
            Effect.logWarning(`the file restore owed by thread ${thread.id} failed again: ${error.message}`)
          )
        ),
      { discard: true }
    )
  )

  return { finish, recover }
})
