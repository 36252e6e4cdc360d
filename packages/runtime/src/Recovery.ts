/**
 * Start-up recovery: runs that were in flight when the previous process died end
 * `interrupted` with reason `runtime_restart`. Their provider processes died with
 * that process (a provider child exits when its stdin closes).
 */
import { StorageError } from "@skein/domain"
import { Effect, Option } from "effect"
import { planRecovery } from "./actors/ThreadPlanner.js"
import { EventStore } from "./store/EventStore.js"

export const recoverInterruptedRuns = Effect.gen(function* () {
  const store = yield* EventStore
  const runs = yield* store.activeRuns
  const threadIds = [...new Set(runs.map((r) => r.threadId))]
  yield* Effect.forEach(
    threadIds,
    (threadId) =>
      store.loadThread(threadId).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (state) => {
              const now = new Date().toISOString()
              return Effect.flatMap(
                store.demand(state, () => planRecovery(state, now)),
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
    yield* Effect.logInfo(`recovered ${runs.length} interrupted run(s) on ${threadIds.length} thread(s)`)
  }
})
