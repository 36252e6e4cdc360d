/**
 * What a compact thread state lacks for a question, read into it (`fillNeed`; see
 * ThreadState's `Need`): a range of runs, handoffs, items, the whole thread.
 */
import type { Sql } from "./StoreDb.js"
import type { SqlError } from "@effect/sql/SqlError"
import { StorageError, handoffHead, providerThreadHead, type RunId, type ThreadId, type TurnItem } from "@skein/domain"
import { Effect, type Either, Option } from "effect"
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

/** What each reader is given: the connection, the state it fills, and how its errors name the thread. */
interface Reading {
  readonly sql: Sql
  readonly state: ThreadState
  readonly threadId: ThreadId
  /** "thread <id>:", the start of what a decoding failure says. */
  readonly what: string
}

/** Reads one kind of need into the state. */
type Reader<Tag extends Need["_tag"]> = (
  reading: Reading,
  need: Extract<Need, { readonly _tag: Tag }>
) => Effect.Effect<void, SqlError | StorageError>

/** Each run's items (none for a run that has none), grouped by run. */
const setItems = (state: ThreadState, runIds: ReadonlyArray<RunId>, items: ReadonlyArray<TurnItem>) => {
  const byRun = groupItems(items)
  for (const id of runIds) state.items.set(id, byRun.get(id) ?? [])
}

/** The row of `table` whose id is `id`, decoded; none (and `id` noted absent) when there is none. */
const byId = <A>(
  { sql, state, threadId, what }: Reading,
  table: "runs" | "provider_threads" | "transfers",
  id: string,
  decode: (json: string, what: string) => Either.Either<A, StorageError>,
  kind: string
): Effect.Effect<Option.Option<A>, SqlError | StorageError> =>
  Effect.flatMap(selectData(sql, `SELECT data FROM ${table} ${where} AND id = ?`, [threadId, id]), (rows) => {
    if (rows[0] === undefined) {
      state.absent.add(id)
      return Effect.succeed(Option.none<A>())
    }
    return Effect.map(decode(rows[0].data, `${what} ${kind} ${id}`), Option.some)
  })

/** A range of runs by ordinal, with their items when asked. */
const readRuns: Reader<"Runs"> = ({ sql, state, threadId, what }, need) =>
  Effect.gen(function* () {
    const rows = yield* selectData(sql, `SELECT data FROM runs ${where} AND ordinal BETWEEN ? AND ? ORDER BY ordinal`, [
      threadId,
      need.from,
      need.to
    ])
    const runs = yield* decodeAll(rows, decodeRun, `${what} run`)
    for (const run of runs) state.runs.set(run.ordinal, run)
    if (!need.items) return
    const items = yield* selectData(
      sql,
      `SELECT i.data AS data FROM runs r JOIN turn_items i ON i.thread_id = r.thread_id AND i.run_id = r.id
       WHERE r.thread_id = ? AND r.ordinal BETWEEN ? AND ? ORDER BY i.rowid`,
      [threadId, need.from, need.to]
    )
    setItems(
      state,
      runs.map((run) => run.id),
      yield* decodeAll(items, decodeItem, `${what} turn item`)
    )
  })

/** One run by id (absent if there is none), with its items when asked. */
const readRun: Reader<"Run"> = (reading, need) =>
  Effect.gen(function* () {
    const { sql, state, threadId, what } = reading
    const found = yield* byId(reading, "runs", need.runId, decodeRun, "run")
    if (Option.isNone(found)) return
    const run = found.value
    state.runs.set(run.ordinal, run)
    if (!need.items) return
    const items = yield* selectData(sql, `SELECT data FROM turn_items ${where} AND run_id = ? ORDER BY rowid`, [
      threadId,
      run.id
    ])
    setItems(state, [run.id], yield* decodeAll(items, decodeItem, `${what} turn item`))
  })

/** A provider thread whole: its snapshot and the runs it served since. */
const readProviderThread: Reader<"ProviderThread"> = (reading, need) =>
  Effect.gen(function* () {
    const { sql, state, threadId, what } = reading
    const found = yield* byId(reading, "provider_threads", need.id, decodeProviderThread, "provider thread")
    if (Option.isNone(found)) return
    const snapshot = found.value
    const served = yield* sql.unsafe<ServedRow>(
      `SELECT ${servedColumns} FROM provider_thread_runs ${where} AND provider_thread_id = ? AND ordinal > ? ORDER BY ordinal`,
      [threadId, need.id, snapshot.lastRunOrdinal ?? 0]
    )
    const full = yield* withServedRows(snapshot, served, what)
    const entry = state.providerThreads.get(full.id)
    if (entry === undefined) state.providerThreads.set(full.id, { head: providerThreadHead(full), full })
    else entry.full = full
  })

/** Handoffs by id, whole or their heads only; the ones not found are absent. */
const readHandoffs: Reader<"Handoffs"> = ({ sql, state, threadId, what }, need) =>
  Effect.gen(function* () {
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
  })

/** One transfer by id (absent if there is none). */
const readTransfer: Reader<"Transfer"> = (reading, need) =>
  Effect.map(byId(reading, "transfers", need.id, decodeTransfer, "transfer"), (found) => {
    if (Option.isSome(found)) reading.state.transfers.set(found.value.id, found.value)
  })

/** The newest ready checkpoint of a live run in a range of ordinals (a run's later checkpoint before its earlier one). */
const readLatestCheckpoint: Reader<"LatestCheckpoint"> = ({ sql, state, threadId, what }, need) =>
  Effect.gen(function* () {
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
  })

/** The whole thread: the state becomes complete. */
const readEverything: Reader<"Everything"> = ({ sql, state, threadId }) =>
  Effect.gen(function* () {
    const complete = yield* loadCompleteThreadState(sql, threadId)
    if (Option.isNone(complete)) return yield* new StorageError({ detail: `thread ${threadId} is gone` })
    becomeComplete(state, complete.value)
  })

const readers: { readonly [Tag in Need["_tag"]]: Reader<Tag> } = {
  Runs: readRuns,
  Run: readRun,
  ProviderThread: readProviderThread,
  Handoffs: readHandoffs,
  Transfer: readTransfer,
  LatestCheckpoint: readLatestCheckpoint,
  Everything: readEverything
}

/** Reads what a compact state lacks (`need`) into it. Reads of a thread's own actor agree with its memory. */
export const fillNeed = (sql: Sql, state: ThreadState, need: Need): Effect.Effect<void, StorageError> => {
  const threadId = state.thread.id
  const read = readers[need._tag] as Reader<Need["_tag"]>
  return read({ sql, state, threadId, what: `thread ${threadId}:` }, need).pipe(
    Effect.mapError(fromSqlError(`cannot read thread ${threadId}`))
  )
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
