/**
 * Start-up recovery: runs that were in flight when the previous process died end
 * `interrupted` with reason `runtime_restart`. Their provider processes died with
 * that process (a provider child exits when its stdin closes). Git checkpoints that
 * process left pending are recorded as not taken (logical, with an error item on
 * their run): nobody is taking them any more.
 */
import { StorageError } from "@skein/domain"
import { Effect, Option } from "effect"
import { planCheckpointTaken, planRecovery } from "./actors/ThreadPlanner.js"
import { EventStore } from "./store/EventStore.js"

export const recoverInterruptedRuns = Effect.gen(function* () {
  const store = yield* EventStore
  const runs = yield* store.activeRuns
  const pending = yield* store.pendingCheckpoints(null)
  const threadIds = [...new Set([...runs.map((r) => r.threadId), ...pending.map((c) => c.threadId)])]
  yield* Effect.forEach(
    threadIds,
    (threadId) =>
      store.loadThread(threadId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (state) => {
              const now = new Date().toISOString()
              const abandoned = pending.filter((c) => c.threadId === threadId)
              const detail = "Skein stopped before it was taken"
              return Effect.flatMap(
                store.demand(state, () => [
                  ...planRecovery(state, now),
                  ...abandoned.flatMap((c) => planCheckpointTaken(state, c, { _tag: "Failed", detail }, now))
                ]),
                (events) =>
                  events.length === 0
                    ? Effect.void
                    : store.append({ threadId, events, expectedSequence: state.lastThreadSequence }).pipe(
                        Effect.asVoid,
                        // Another process is writing this database: not one we can recover under.
                        Effect.catchTag("SequenceConflict", (e) => Effect.fail(new StorageError({ detail: e.message })))
                      )
              )
            }
          })
        )
      ),
    { discard: true }
  )
  if (threadIds.length > 0) {
    yield* Effect.logInfo(
      `recovered ${runs.length} interrupted run(s) and ${pending.length} checkpoint(s) never taken on ${threadIds.length} thread(s)`
    )
  }
})
