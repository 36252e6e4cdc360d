/**
 * Subagent results coming home, read from storage: a parent's subagent children whose
 * first run has ended and whose result the parent does not hold yet. The orchestrator
 * records a result as soon as the child's run ends; this is the durable path behind
 * it (after a crash in between, the parent's next run still receives the result).
 */
import type { StorageError, ThreadEvent } from "@skein/domain"
import { isTerminalRunStatus, TransferRecorded } from "@skein/domain"
import { Effect, Option } from "effect"
import type { EventStoreShape } from "../store/EventStore.js"
import type { ThreadState } from "../store/ThreadState.js"
import { subagentResultTransfer } from "./Lineage.js"

/**
 * Pending subagent_result transfers for children whose result this parent lacks, and
 * how many such children are still waiting (their first run has not ended yet, or was
 * rolled back).
 */
export const childResults = Effect.fnUntraced(function* (
  store: EventStoreShape,
  state: ThreadState,
  now: string
): Effect.fn.Return<{ readonly events: ReadonlyArray<ThreadEvent>; readonly waiting: number }, StorageError> {
  // Subagent children (not observe-only) with no subagent_result in this log yet, whatever its status.
  const children = yield* store.lookup.subagentsWithoutResult(state.thread.id)
  const events: Array<ThreadEvent> = []
  let waiting = 0
  for (const child of children) {
    const first = yield* store.lookup.runByOrdinal(child.id, 1)
    if (Option.isNone(first) || !isTerminalRunStatus(first.value.status) || first.value.status === "rolled_back") {
      waiting++
      continue
    }
    events.push(
      new TransferRecorded({
        transfer: subagentResultTransfer({
          parentId: state.thread.id,
          child,
          run: first.value,
          createdBy: "system",
          now
        })
      })
    )
  }
  return { events, waiting }
})
