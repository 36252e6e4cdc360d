/**
 * The thread view (`thread.get`) from the projection tables: the whole thread, or a
 * window of its runs.
 *
 * The whole view is the complete state shaped by `toThreadView`: it costs what the
 * thread holds. A page costs what it shows: its runs (and their items, when asked
 * for), their handoffs and checkpoints, the transfers they consumed and those still
 * open, the provider threads that served them or are still usable (their per-run lists
 * cut to the page, read from their records in SQL), the transfers others recorded from
 * this thread, and its children. Each is what the whole view holds, restricted to the
 * page (`test/runtime/longThreads.test.ts` compares them).
 */
import * as Json from "./JsonSql.js"
import type { Dialect, Sql } from "./StoreDb.js"
import type {
  AppThread,
  ContextTransfer,
  NativeTurn,
  ProviderThread,
  Run,
  RunId,
  StorageError,
  ThreadId,
  ThreadView,
  ThreadViewOptions
} from "@skein/domain"
import { Effect, Option } from "effect"
import { fromSqlError } from "./Codec.js"
import { toRunView, toThreadView } from "./Projection.js"
import {
  decodeAll,
  decodeCheckpoint,
  decodeHandoff,
  decodeItem,
  decodeRun,
  decodeThread,
  decodeTransfer,
  listThreadRows,
  outgoingTransfers,
  selectData,
  threadWithActivity
} from "./ProjectionReads.js"
import { servedColumns, type ServedRow } from "./ServedRows.js"
import { currentHead, groupItems, loadCompleteThreadState } from "./ThreadLoading.js"

const byCreatedAt = (a: ContextTransfer, b: ContextTransfer) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/** The whole thread: every run (with its items unless `items` is false). */
const wholeView = (
  sql: Sql,
  threadId: ThreadId,
  items: boolean
): Effect.Effect<Option.Option<ThreadView>, StorageError> =>
  Effect.flatMap(loadCompleteThreadState(sql, threadId), (state) =>
    Option.isNone(state)
      ? Effect.succeedNone
      : Effect.map(
          Effect.all([outgoingTransfers(sql, threadId), listThreadRows(sql, { parentThreadId: threadId })]),
          ([extra, children]) => {
            const view = toThreadView(state.value, extra, children)
            return Option.some(items ? view : { ...view, runs: view.runs.map((run) => ({ ...run, items: [] })) })
          }
        )
  )

/** Runs `from`..`to` of a window over `runCount` runs. */
export const windowOf = (
  window: NonNullable<ThreadViewOptions["runs"]>,
  runCount: number
): { readonly from: number; readonly to: number } => {
  const before = Math.min(window.before ?? runCount + 1, runCount + 1)
  if (window.after !== undefined) {
    return { from: window.after + 1, to: Math.min(before - 1, window.after + window.limit) }
  }
  const to = before - 1
  return { from: Math.max(1, to - window.limit + 1), to }
}

/** A provider thread's native run ordinals within a page, in its record's order (the JSON read in SQL, JsonSql.ts). */
const nativeOrdinalsIn: Record<Dialect, string> = {
  sqlite: `SELECT j.value AS value FROM provider_threads p, json_each(p.data, '$.coverage.nativeRunOrdinals') j
    WHERE p.thread_id = ? AND p.id = ? AND j.value BETWEEN ? AND ? ORDER BY j.key`,
  postgresql: `SELECT j.value::integer AS value
    FROM provider_threads p, json_array_elements_text(p.data::json -> 'coverage' -> 'nativeRunOrdinals') WITH ORDINALITY j(value, key)
    WHERE p.thread_id = ? AND p.id = ? AND j.value::integer BETWEEN ? AND ? ORDER BY j.key`
}

/** A provider thread's native turns within a page, in its record's order. */
const nativeTurnsIn: Record<Dialect, string> = {
  sqlite: `SELECT json_extract(j.value, '$.runOrdinal') AS ordinal, json_extract(j.value, '$.turnRef') AS turn_ref
    FROM provider_threads p, json_each(p.data, '$.nativeTurns') j
    WHERE p.thread_id = ? AND p.id = ? AND json_extract(j.value, '$.runOrdinal') BETWEEN ? AND ? ORDER BY j.key`,
  postgresql: `SELECT (j.value ->> 'runOrdinal')::integer AS ordinal, j.value ->> 'turnRef' AS turn_ref
    FROM provider_threads p, json_array_elements(p.data::json -> 'nativeTurns') WITH ORDINALITY j(value, key)
    WHERE p.thread_id = ? AND p.id = ? AND (j.value ->> 'runOrdinal')::integer BETWEEN ? AND ? ORDER BY j.key`
}

/** A provider thread as a page shows it: its head (rows past its snapshot applied) and its per-run lists within the page. */
const pagedProviderThread = (sql: Sql, threadId: ThreadId, headJson: string, from: number, to: number, what: string) =>
  Effect.gen(function* () {
    const { head, snapshot } = yield* currentHead(sql, threadId, headJson, what)
    const last = snapshot.lastRunOrdinal ?? 0
    // The record's lists within the page (the database reads the JSON), then the runs served since.
    const native = yield* sql.unsafe<{ readonly value: number }>(nativeOrdinalsIn[sql.dialect], [
      threadId,
      head.id,
      from,
      to
    ])
    const turns = yield* sql.unsafe<{ readonly ordinal: number; readonly turn_ref: string }>(
      nativeTurnsIn[sql.dialect],
      [threadId, head.id, from, to]
    )
    const newer = yield* sql.unsafe<ServedRow>(
      `SELECT ${servedColumns} FROM provider_thread_runs
       WHERE thread_id = ? AND provider_thread_id = ? AND ordinal > ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal`,
      [threadId, head.id, last, from, to]
    )
    const nativeTurns: Array<NativeTurn> = turns.map((t) => ({ runOrdinal: t.ordinal, turnRef: t.turn_ref }))
    for (const row of newer)
      if (row.turn_ref !== null) nativeTurns.push({ runOrdinal: row.ordinal, turnRef: row.turn_ref })
    const pt: ProviderThread = {
      ...head,
      coverage: {
        nativeRunOrdinals: [...native.map((n) => n.value), ...newer.map((row) => row.ordinal)],
        handoffIds: head.coverage.handoffIds
      },
      nativeTurns
    }
    return pt
  })

/** Transfers of this log consumed by a run of runs `from`-`to`, or by none yet; then those it sent out. */
const pageTransfers = (sql: Sql, threadId: ThreadId, from: number, to: number) =>
  Effect.gen(function* () {
    const own = yield* decodeAll(
      yield* selectData(
        sql,
        `SELECT data FROM transfers WHERE thread_id = ?
           AND (${Json.field(sql.dialect, "data", "consumedByRunId")} IS NULL
                OR ${Json.field(sql.dialect, "data", "consumedByRunId")} IN (SELECT id FROM runs WHERE thread_id = ? AND ordinal BETWEEN ? AND ?))
         ORDER BY rowid`,
        [threadId, threadId, from, to]
      ),
      decodeTransfer,
      `thread ${threadId}: transfer`
    )
    const outgoing = yield* outgoingTransfers(sql, threadId)
    const seen = new Set(own.map((t) => t.id))
    const transfers = [...own, ...outgoing.filter((t) => t.sourceThreadId === threadId && !seen.has(t.id))]
    transfers.sort(byCreatedAt)
    return transfers
  })

/** Provider threads that served a run of the page, and the ones still usable, each as the page sees it. */
const pageProviderThreads = (sql: Sql, threadId: ThreadId, runs: ReadonlyArray<Run>, from: number, to: number) =>
  Effect.gen(function* () {
    const served = new Set<string>()
    for (const run of runs) if (run.providerThreadId !== null) served.add(run.providerThreadId)
    type PtRow = { readonly rowid: number; readonly id: string; readonly head: string }
    const usable = yield* sql.unsafe<PtRow>(
      "SELECT rowid, id, head FROM provider_threads WHERE thread_id = ? AND status <> 'stale'",
      [threadId]
    )
    const retired =
      served.size === 0
        ? []
        : yield* sql.unsafe<PtRow>(
            `SELECT rowid, id, head FROM provider_threads WHERE thread_id = ? AND status = 'stale' AND id IN (${[...served].map(() => "?").join(", ")})`,
            [threadId, ...served]
          )
    return yield* Effect.forEach(
      [...usable, ...retired].sort((a, b) => a.rowid - b.rowid),
      (row) => pagedProviderThread(sql, threadId, row.head, from, to, `thread ${threadId}:`)
    )
  })

/** A window of the thread's runs, with what belongs to them (see the module note). */
const pagedView = (
  sql: Sql,
  threadId: ThreadId,
  window: NonNullable<ThreadViewOptions["runs"]>,
  items: boolean
): Effect.Effect<Option.Option<ThreadView>, StorageError> =>
  Effect.gen(function* () {
    const threadRows = yield* selectData(sql, "SELECT data FROM threads WHERE id = ?", [threadId])
    if (threadRows[0] === undefined) return Option.none()
    const what = `thread ${threadId}:`
    const thread: AppThread = yield* threadWithActivity(
      sql,
      threadId,
      yield* decodeThread(threadRows[0].data, `${what} thread row`)
    )
    const [{ runCount } = { runCount: 0 }] = yield* sql.unsafe<{ readonly runCount: number }>(
      "SELECT COALESCE(MAX(ordinal), 0) AS runCount FROM runs WHERE thread_id = ?",
      [threadId]
    )
    const { from, to } = windowOf(window, runCount)
    const range = [threadId, from, to] as const
    const runs = yield* decodeAll(
      yield* selectData(sql, "SELECT data FROM runs WHERE thread_id = ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal", [
        ...range
      ]),
      decodeRun,
      `${what} run`
    )
    const itemsByRun = items
      ? groupItems(
          yield* decodeAll(
            yield* selectData(
              sql,
              `SELECT i.data AS data FROM runs r JOIN turn_items i ON i.thread_id = r.thread_id AND i.run_id = r.id
               WHERE r.thread_id = ? AND r.ordinal BETWEEN ? AND ? ORDER BY i.rowid`,
              [...range]
            ),
            decodeItem,
            `${what} turn item`
          )
        )
      : new Map<RunId, never>()
    const handoffs = yield* decodeAll(
      yield* selectData(
        sql,
        `SELECT h.data AS data FROM handoffs h JOIN runs r ON r.thread_id = h.thread_id AND r.id = h.target_run_id
         WHERE h.thread_id = ? AND r.ordinal BETWEEN ? AND ? ORDER BY h.rowid`,
        [...range]
      ),
      decodeHandoff,
      `${what} handoff`
    )
    const checkpoints = yield* decodeAll(
      yield* selectData(
        sql,
        "SELECT data FROM checkpoints WHERE thread_id = ? AND run_ordinal BETWEEN ? AND ? ORDER BY rowid",
        [...range]
      ),
      decodeCheckpoint,
      `${what} checkpoint`
    )
    const transfers = yield* pageTransfers(sql, threadId, from, to)
    const providerThreads = yield* pageProviderThreads(sql, threadId, runs, from, to)
    const children = yield* listThreadRows(sql, { parentThreadId: threadId })
    const [last] = yield* sql.unsafe<{ readonly last: number }>(
      "SELECT COALESCE(MAX(thread_sequence), 0) AS last FROM events WHERE thread_id = ?",
      [threadId]
    )
    const view: ThreadView = {
      thread,
      runs: runs.map((run) => toRunView(run, itemsByRun.get(run.id) ?? [])),
      providerThreads,
      transfers,
      handoffs,
      checkpoints,
      children,
      page: { runCount, from, to, items, sequence: last?.last ?? 0 }
    }
    return Option.some(view)
  }).pipe(sql.withTransaction, Effect.mapError(fromSqlError(`cannot read thread ${threadId}`)))

/** `thread.get`: the whole thread by default, or a window of its runs. */
export const threadView = (
  sql: Sql,
  threadId: ThreadId,
  options: ThreadViewOptions = {}
): Effect.Effect<Option.Option<ThreadView>, StorageError> =>
  options.runs === undefined
    ? wholeView(sql, threadId, options.items ?? true)
    : pagedView(sql, threadId, options.runs, options.items ?? true)
