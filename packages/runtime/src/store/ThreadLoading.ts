/**
 * Reading a thread's state back from the projection tables, in either form (see
 * ThreadState): the complete state, and the compact one a thread actor activates
 * with (what a compact state lacks for a question is read by StateNeeds' `fillNeed`;
 * a provider thread's served rows are applied by ServedRows).
 *
 * The compact read is a handful of indexed queries whose cost does not grow with the
 * thread's history: the newest run, the rolled-back ranges, the usable provider
 * threads' heads plus the few rows of what they served since their snapshot (their
 * newest and first run, the handoffs they received), the handoff heads those name,
 * the open transfers, and the newest run's items. Rows come in rowid order (an upsert
 * keeps the rowid), which is the order a fold of the log inserts them in.
 */
import type { Sql } from "./StoreDb.js"
import {
  ContextHandoffHead,
  ProviderThreadHead,
  StorageError,
  handoffHead,
  providerThreadHead,
  type RunId,
  type ThreadId,
  type TurnItem
} from "@skein/domain"
import { Effect, Option } from "effect"
import { headWithServedRows, servedColumns, type ServedRow, withServedRows } from "./ServedRows.js"
import { fromSqlError, jsonDecoder } from "./Codec.js"
import { chunks, type Param } from "./ProjectionTables.js"
import {
  decodeAll,
  decodeCheckpoint,
  decodeHandoff,
  decodeItem,
  decodeProviderThread,
  decodeRun,
  decodeThread,
  decodeTransfer,
  selectData
} from "./ProjectionReads.js"
import type { ThreadState } from "./ThreadState.js"
import { emptyThreadState, isOpenTransfer, markRolledBack } from "./ThreadState.js"

const decodeProviderThreadHead = jsonDecoder(ProviderThreadHead, "provider thread")
export const decodeHandoffHead = jsonDecoder(ContextHandoffHead, "context handoff")

export const where = "WHERE thread_id = ?"

/** Item lists by run, each sorted by seq (rows come in first-write order; V8's sort is stable). */
export const groupItems = (items: ReadonlyArray<TurnItem>): Map<RunId, Array<TurnItem>> => {
  const byRun = new Map<RunId, Array<TurnItem>>()
  for (const item of items) {
    const list = byRun.get(item.runId)
    if (list === undefined) byRun.set(item.runId, [item])
    else list.push(item)
  }
  for (const list of byRun.values()) sortBySeq(list)
  return byRun
}

const sortBySeq = (list: Array<{ readonly seq: number }>) => {
  for (let i = 1; i < list.length; i++) {
    if (list[i - 1]!.seq > list[i]!.seq) {
      list.sort((a, b) => a.seq - b.seq)
      return
    }
  }
}

const rolledBackRanges = (sql: Sql, threadId: ThreadId) =>
  sql.unsafe<{ readonly first: number; readonly last: number }>(
    `SELECT MIN(ordinal) AS first, MAX(ordinal) AS last FROM (
       SELECT ordinal, ordinal - ROW_NUMBER() OVER (ORDER BY ordinal) AS island
       FROM runs WHERE thread_id = ? AND status = 'rolled_back'
     ) AS rolled_back GROUP BY island ORDER BY first`,
    [threadId]
  )

const lastSequence = (sql: Sql, threadId: ThreadId) =>
  Effect.map(
    sql.unsafe<{ readonly last: number }>(
      "SELECT COALESCE(MAX(thread_sequence), 0) AS last FROM events WHERE thread_id = ?",
      [threadId]
    ),
    (rows) => rows[0]?.last ?? 0
  )

/** `IN (?, ?, …)` queries over many ids, a few hundred at a time. */
export const selectIn = <R extends object>(
  sql: Sql,
  prefix: string,
  suffix: string,
  head: ReadonlyArray<Param>,
  ids: ReadonlyArray<string>
) =>
  Effect.map(
    Effect.forEach(chunks(ids, 400), (chunk) =>
      sql.unsafe<R>(`${prefix} IN (${chunk.map(() => "?").join(", ")})${suffix}`, [...head, ...chunk])
    ),
    (pages) => pages.flat()
  )

/**
 * A thread's complete state from the projection tables, read in one transaction (a
 * concurrent append is either fully in or fully out).
 */
export const loadCompleteThreadState = (
  sql: Sql,
  threadId: ThreadId
): Effect.Effect<Option.Option<ThreadState>, StorageError> =>
  Effect.gen(function* () {
    const threadRows = yield* selectData(sql, "SELECT data FROM threads WHERE id = ?", [threadId])
    const threadRow = threadRows[0]
    if (threadRow === undefined) return Option.none()
    const [runRows, itemRows, ptRows, servedRows, transferRows, handoffRows, checkpointRows, last] = yield* Effect.all([
      selectData(sql, `SELECT data FROM runs ${where} ORDER BY ordinal`, [threadId]),
      selectData(sql, `SELECT data FROM turn_items ${where} ORDER BY rowid`, [threadId]),
      selectData(sql, `SELECT data FROM provider_threads ${where} ORDER BY rowid`, [threadId]),
      sql.unsafe<ServedRow>(
        `SELECT ${servedColumns} FROM provider_thread_runs ${where} ORDER BY provider_thread_id, ordinal`,
        [threadId]
      ),
      selectData(sql, `SELECT data FROM transfers ${where} ORDER BY rowid`, [threadId]),
      selectData(sql, `SELECT data FROM handoffs ${where} ORDER BY rowid`, [threadId]),
      selectData(sql, `SELECT data FROM checkpoints ${where} ORDER BY rowid`, [threadId]),
      lastSequence(sql, threadId)
    ])
    const what = `thread ${threadId}:`
    const state = emptyThreadState(yield* decodeThread(threadRow.data, `${what} thread row`), true)
    const items = groupItems(yield* decodeAll(itemRows, decodeItem, `${what} turn item`))
    for (const run of yield* decodeAll(runRows, decodeRun, `${what} run`)) {
      state.runs.set(run.ordinal, run)
      state.items.set(run.id, items.get(run.id) ?? [])
      if (run.status === "rolled_back") markRolledBack(state.rolledBack, run.ordinal)
      state.runCount = Math.max(state.runCount, run.ordinal)
    }
    const servedBy = new Map<string, Array<ServedRow>>()
    for (const row of servedRows) {
      const list = servedBy.get(row.provider_thread_id)
      if (list === undefined) servedBy.set(row.provider_thread_id, [row])
      else list.push(row)
    }
    for (const snapshot of yield* decodeAll(ptRows, decodeProviderThread, `${what} provider thread`)) {
      const pt = yield* withServedRows(snapshot, servedBy.get(snapshot.id) ?? [], what)
      state.providerThreads.set(pt.id, { head: providerThreadHead(pt), full: pt })
    }
    for (const t of yield* decodeAll(transferRows, decodeTransfer, `${what} transfer`)) state.transfers.set(t.id, t)
    for (const h of yield* decodeAll(handoffRows, decodeHandoff, `${what} handoff`)) {
      state.handoffs.set(h.id, { head: handoffHead(h), full: h })
    }
    for (const c of yield* decodeAll(checkpointRows, decodeCheckpoint, `${what} checkpoint`)) {
      state.checkpoints.set(c.id, c)
    }
    state.lastThreadSequence = last
    return Option.some(state)
  }).pipe(sql.withTransaction, Effect.mapError(fromSqlError(`cannot load thread ${threadId}`)))

/**
 * A provider thread's head from its stored head JSON, with the rows it served since that
 * snapshot applied: only the rows that change a head are read (the first and the newest
 * past the snapshot, and those that brought a handoff), so the cost does not grow with
 * its history. Also gives the snapshot itself, whose lists stop at its `lastRunOrdinal`.
 */
export const currentHead = Effect.fnUntraced(function* (sql: Sql, threadId: ThreadId, headJson: string, what: string) {
  const snapshot = yield* decodeProviderThreadHead(headJson, `${what} provider thread`)
  const key = [threadId, snapshot.id, snapshot.lastRunOrdinal ?? 0] as const
  const served = yield* sql.unsafe<ServedRow>(
    `SELECT * FROM (SELECT ${servedColumns} FROM provider_thread_runs WHERE thread_id = ? AND provider_thread_id = ? AND ordinal > ? ORDER BY ordinal LIMIT 1) AS first_after
       UNION SELECT * FROM (SELECT ${servedColumns} FROM provider_thread_runs WHERE thread_id = ? AND provider_thread_id = ? AND ordinal > ? ORDER BY ordinal DESC LIMIT 1) AS last_after
       UNION SELECT ${servedColumns} FROM provider_thread_runs WHERE thread_id = ? AND provider_thread_id = ? AND ordinal > ? AND handoff_id IS NOT NULL
       ORDER BY ordinal`,
    [...key, ...key, ...key]
  )
  return { snapshot, head: yield* headWithServedRows(snapshot, served, what) }
})

/** The heads of usable provider threads, with the rows they served since their snapshot applied. */
const usableProviderThreads = Effect.fnUntraced(function* (sql: Sql, threadId: ThreadId, what: string) {
  const rows = yield* sql.unsafe<{ readonly head: string }>(
    `SELECT head FROM provider_threads ${where} AND status <> 'stale' ORDER BY rowid`,
    [threadId]
  )
  const heads: Array<ProviderThreadHead> = []
  for (const [i, row] of rows.entries())
    heads.push((yield* currentHead(sql, threadId, row.head, `${what} ${i + 1}:`)).head)
  return heads
})

/**
 * A thread's compact state (see ThreadState), in one transaction: a few indexed reads,
 * whatever the length of its history.
 */
export const loadCompactThreadState = (
  sql: Sql,
  threadId: ThreadId
): Effect.Effect<Option.Option<ThreadState>, StorageError> =>
  Effect.gen(function* () {
    const threadRows = yield* selectData(sql, "SELECT data FROM threads WHERE id = ?", [threadId])
    const threadRow = threadRows[0]
    if (threadRow === undefined) return Option.none()
    const what = `thread ${threadId}:`
    const state = emptyThreadState(yield* decodeThread(threadRow.data, `${what} thread row`), false)
    const newest = yield* selectData(sql, `SELECT data FROM runs ${where} ORDER BY ordinal DESC LIMIT 1`, [threadId])
    const last = newest[0] === undefined ? undefined : yield* decodeRun(newest[0].data, `${what} newest run`)
    const active = last !== undefined && (last.status === "running" || last.status === "queued") ? last : undefined
    if (last !== undefined) {
      state.runs.set(last.ordinal, last)
      state.runCount = last.ordinal
    }
    for (const range of yield* rolledBackRanges(sql, threadId)) {
      state.rolledBack.push({ from: range.first, to: range.last })
    }
    if (last !== undefined) {
      const items = yield* selectData(sql, `SELECT data FROM turn_items ${where} AND run_id = ? ORDER BY rowid`, [
        threadId,
        last.id
      ])
      state.items.set(last.id, groupItems(yield* decodeAll(items, decodeItem, `${what} turn item`)).get(last.id) ?? [])
    }
    const heads = yield* usableProviderThreads(sql, threadId, what)
    const named = new Set<string>()
    for (const head of heads) {
      state.providerThreads.set(head.id, { head, full: undefined })
      for (const id of head.coverage.handoffIds) named.add(id)
    }
    // The handoffs their coverage names, and the active run's: heads only, in rowid order.
    const handoffRows = yield* selectIn<{ readonly rowid: number; readonly head: string }>(
      sql,
      `SELECT rowid, head FROM handoffs ${where} AND id`,
      "",
      [threadId],
      [...named]
    )
    if (active !== undefined) {
      handoffRows.push(
        ...(yield* sql.unsafe<{ readonly rowid: number; readonly head: string }>(
          `SELECT rowid, head FROM handoffs ${where} AND target_run_id = ?`,
          [threadId, active.id]
        ))
      )
    }
    handoffRows.sort((a, b) => a.rowid - b.rowid)
    for (const row of handoffRows) {
      const head = yield* decodeHandoffHead(row.head, `${what} handoff`)
      state.handoffs.set(head.id, { head, full: undefined })
    }
    // Transfers not settled yet, and the thread's inheritance.
    const transferRows = [
      ...(yield* sql.unsafe<{ readonly rowid: number; readonly data: string }>(
        `SELECT rowid, data FROM transfers ${where} AND status IN ('pending', 'resolved_native', 'resolved_portable')`,
        [threadId]
      )),
      ...(yield* sql.unsafe<{ readonly rowid: number; readonly data: string }>(
        `SELECT rowid, data FROM transfers ${where} AND type IN ('fork', 'subagent_spawn') AND status IN ('failed', 'consumed')`,
        [threadId]
      ))
    ].sort((a, b) => a.rowid - b.rowid)
    for (const t of yield* decodeAll(transferRows, decodeTransfer, `${what} transfer`)) {
      if (isOpenTransfer(t, threadId)) state.transfers.set(t.id, t)
    }
    state.lastThreadSequence = yield* lastSequence(sql, threadId)
    return Option.some(state)
  }).pipe(sql.withTransaction, Effect.mapError(fromSqlError(`cannot load thread ${threadId}`)))
