/**
 * What a compact thread state lacks for a question, read into it (`fillNeed`; see
 * ThreadState's `Need`): a range of runs, handoffs, items, the whole thread.
 */
import type { Sql } from "./StoreDb.js"
import { StorageError, handoffHead, providerThreadHead, type RunId, type TurnItem } from "@skein/domain"
import { Effect, Option } from "effect"
import { fromSqlError } from "./Codec.js"
import {
  decodeAll,
  decodeCheckpoint,
  decodeHandoff,
  decodeItem,
  decodeProviderThread,
  decodeRun,
  decodeTransfer,
  selectData
} from "./ProjectionReads.js"
import type { Need, ThreadState } from "./ThreadState.js"
import { checkpointAnswerKey, isLiveOrdinal } from "./ThreadState.js"
import { decodeHandoffHead, groupItems, loadCompleteThreadState, selectIn, where } from "./ThreadLoading.js"
import { servedColumns, type ServedRow, withServedRows } from "./ServedRows.js"

const pageSize = 64

/** Reads what a compact state lacks (`need`) into it. Reads of a thread's own actor agree with its memory. */
export const fillNeed = (sql: Sql, state: ThreadState, need: Need): Effect.Effect<void, StorageError> => {
  const threadId = state.thread.id
  const what = `thread ${threadId}:`
  const setItems = (runIds: ReadonlyArray<RunId>, items: ReadonlyArray<TurnItem>) => {
    const byRun = groupItems(items)
    for (const id of runIds) state.items.set(id, byRun.get(id) ?? [])
  }
  const filled = Effect.gen(function* () {
    switch (need._tag) {
      case "Runs": {
        const rows = yield* selectData(
          sql,
          `SELECT data FROM runs ${where} AND ordinal BETWEEN ? AND ? ORDER BY ordinal`,
          [threadId, need.from, need.to]
        )
        const runs = yield* decodeAll(rows, decodeRun, `${what} run`)
        for (const run of runs) state.runs.set(run.ordinal, run)
        if (need.items) {
          const items = yield* selectData(
            sql,
            `SELECT i.data AS data FROM runs r JOIN turn_items i ON i.thread_id = r.thread_id AND i.run_id = r.id
             WHERE r.thread_id = ? AND r.ordinal BETWEEN ? AND ? ORDER BY i.rowid`,
            [threadId, need.from, need.to]
          )
          setItems(
            runs.map((run) => run.id),
            yield* decodeAll(items, decodeItem, `${what} turn item`)
          )
        }
        return
      }
      case "Run": {
        const rows = yield* selectData(sql, `SELECT data FROM runs ${where} AND id = ?`, [threadId, need.runId])
        if (rows[0] === undefined) {
          state.absent.add(need.runId)
          return
        }
        const run = yield* decodeRun(rows[0].data, `${what} run ${need.runId}`)
        state.runs.set(run.ordinal, run)
        if (need.items) {
          const items = yield* selectData(sql, `SELECT data FROM turn_items ${where} AND run_id = ? ORDER BY rowid`, [
            threadId,
            run.id
          ])
          setItems([run.id], yield* decodeAll(items, decodeItem, `${what} turn item`))
        }
        return
      }
      case "ProviderThread": {
        const rows = yield* selectData(sql, `SELECT data FROM provider_threads ${where} AND id = ?`, [
          threadId,
          need.id
        ])
        if (rows[0] === undefined) {
          state.absent.add(need.id)
          return
        }
        const snapshot = yield* decodeProviderThread(rows[0].data, `${what} provider thread ${need.id}`)
        const served = yield* sql.unsafe<ServedRow>(
          `SELECT ${servedColumns} FROM provider_thread_runs ${where} AND provider_thread_id = ? AND ordinal > ? ORDER BY ordinal`,
          [threadId, need.id, snapshot.lastRunOrdinal ?? 0]
        )
        const full = yield* withServedRows(snapshot, served, what)
        const entry = state.providerThreads.get(full.id)
        if (entry === undefined) state.providerThreads.set(full.id, { head: providerThreadHead(full), full })
        else entry.full = full
        return
      }
      case "Handoffs": {
        const found = new Set<string>()
        if (need.full) {
          const rows = yield* selectIn<{ readonly data: string }>(
            sql,
            `SELECT data FROM handoffs ${where} AND id`,
            " ORDER BY rowid",
            [threadId],
            need.ids
          )
          for (const h of yield* decodeAll(rows, decodeHandoff, `${what} handoff`)) {
            found.add(h.id)
            const entry = state.handoffs.get(h.id)
            if (entry === undefined) state.handoffs.set(h.id, { head: handoffHead(h), full: h })
            else entry.full = h
          }
        } else {
          const rows = yield* selectIn<{ readonly head: string }>(
            sql,
            `SELECT head FROM handoffs ${where} AND id`,
            " ORDER BY rowid",
            [threadId],
            need.ids
          )
          for (const row of rows) {
            const head = yield* decodeHandoffHead(row.head, `${what} handoff`)
            found.add(head.id)
            if (!state.handoffs.has(head.id)) state.handoffs.set(head.id, { head, full: undefined })
          }
        }
        for (const id of need.ids) if (!found.has(id)) state.absent.add(id)
        return
      }
      case "Transfer": {
        const rows = yield* selectData(sql, `SELECT data FROM transfers ${where} AND id = ?`, [threadId, need.id])
        if (rows[0] === undefined) state.absent.add(need.id)
        else {
          const transfer = yield* decodeTransfer(rows[0].data, `${what} transfer ${need.id}`)
          state.transfers.set(transfer.id, transfer)
        }
        return
      }
      case "LatestCheckpoint": {
        // Newest first (a run's later checkpoint before its earlier one), until one of a live run.
        let answer = null
        for (let offset = 0; answer === null; offset += pageSize) {
          const rows = yield* selectData(
            sql,
            `SELECT data FROM checkpoints ${where} AND status = 'ready' AND run_ordinal BETWEEN ? AND ?
             ORDER BY run_ordinal DESC, rowid DESC LIMIT ? OFFSET ?`,
            [threadId, need.from, need.to, pageSize, offset]
          )
          for (const c of yield* decodeAll(rows, decodeCheckpoint, `${what} checkpoint`)) {
            if (isLiveOrdinal(state, c.runOrdinal)) {
              answer = c
              break
            }
          }
          if (rows.length < pageSize) break
        }
        state.latestCheckpoints.set(checkpointAnswerKey(need.from, need.to), answer)
        return
      }
      case "Everything": {
        const complete = yield* loadCompleteThreadState(sql, threadId)
        if (Option.isNone(complete)) return yield* new StorageError({ detail: `thread ${threadId} is gone` })
        becomeComplete(state, complete.value)
        return
      }
    }
  })
  return filled.pipe(Effect.mapError(fromSqlError(`cannot read thread ${threadId}`)))
}

/** Makes `state` the complete state `from` (same thread, same point in its log). */
const becomeComplete = (state: ThreadState, from: ThreadState): void => {
  state.complete = true
  state.runCount = from.runCount
  state.rolledBack.splice(0, state.rolledBack.length, ...from.rolledBack)
  const copy = <K, V>(to: Map<K, V>, source: Map<K, V>) => {
    to.clear()
    for (const [k, v] of source) to.set(k, v)
  }
  copy(state.runs, from.runs)
  copy(state.items, from.items)
  copy(state.providerThreads, from.providerThreads)
  copy(state.transfers, from.transfers)
  copy(state.handoffs, from.handoffs)
  copy(state.checkpoints, from.checkpoints)
  state.latestCheckpoints.clear()
  state.absent.clear()
}
