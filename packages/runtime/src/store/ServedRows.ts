/**
 * A provider thread as stored: its last snapshot (the head in its row) plus one row per
 * run it served since. Applying the newer rows gives what folding each
 * `ProviderThreadServed` event would have given.
 */
import {
  ProviderThreadHead,
  ProviderThreadStatus,
  StorageError,
  type ContextHandoffId,
  type ProviderThread
} from "@skein/domain"
import { Either, Schema } from "effect"

export interface ServedRow {
  readonly provider_thread_id: string
  readonly ordinal: number
  readonly handoff_id: string | null
  readonly turn_ref: string | null
  readonly status: string
  readonly updated_at: string
}

export const servedColumns = "provider_thread_id, ordinal, handoff_id, turn_ref, status, updated_at"

const statusOf = (row: ServedRow, what: string): Either.Either<ProviderThread["status"], StorageError> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(ProviderThreadStatus)(row.status),
    () => new StorageError({ detail: `${what} provider thread run row ${row.ordinal}: bad status ${row.status}` })
  )

/**
 * What the rows past a provider thread's snapshot change in its head: the handoffs it
 * received, its first and last run, its status. `undefined` when no row is newer.
 */
const servedSince = <P extends ProviderThreadHead>(
  pt: P,
  rows: ReadonlyArray<ServedRow>,
  what: string
): { readonly newer: ReadonlyArray<ServedRow>; readonly head: Either.Either<P, StorageError> } | undefined => {
  const last = pt.lastRunOrdinal ?? 0
  const newer = rows.filter((row) => row.ordinal > last)
  if (newer.length === 0) return undefined
  const handoffIds = [...pt.coverage.handoffIds]
  const received = [...pt.handoffIds]
  for (const row of newer) {
    const handoffId = row.handoff_id as ContextHandoffId | null
    if (handoffId !== null && !handoffIds.includes(handoffId)) {
      handoffIds.push(handoffId)
      received.push(handoffId)
    }
  }
  const final = newer[newer.length - 1]!
  const head = Either.map(statusOf(final, what), (status) => ({
    ...pt,
    firstRunOrdinal: pt.firstRunOrdinal ?? newer[0]!.ordinal,
    lastRunOrdinal: final.ordinal,
    handoffIds: received,
    coverage: { ...pt.coverage, handoffIds },
    status,
    updatedAt: final.updated_at
  }))
  return { newer, head }
}

/**
 * A provider thread's record is its last snapshot; the runs it served since are rows.
 * Every later snapshot holds every run served before it, and ordinals only grow, so the
 * rows past the snapshot's last run are exactly the newer ones, in order: applied in one
 * pass (the same result as folding each ProviderThreadServed event in turn).
 */
export const withServedRows = (
  pt: ProviderThread,
  rows: ReadonlyArray<ServedRow>,
  what: string
): Either.Either<ProviderThread, StorageError> => {
  const since = servedSince(pt, rows, what)
  if (since === undefined) return Either.right(pt)
  const native = [...pt.coverage.nativeRunOrdinals]
  const turns = [...pt.nativeTurns]
  for (const row of since.newer) {
    native.push(row.ordinal)
    if (row.turn_ref !== null) turns.push({ runOrdinal: row.ordinal, turnRef: row.turn_ref })
  }
  return Either.map(since.head, (head) => ({
    ...head,
    coverage: { ...head.coverage, nativeRunOrdinals: native },
    nativeTurns: turns
  }))
}

/**
 * The same on a head, from only the rows that change it: the first and the newest row
 * past the snapshot, and those with a handoff (`rows`, in ordinal order).
 */
export const headWithServedRows = (
  pt: ProviderThreadHead,
  rows: ReadonlyArray<ServedRow>,
  what: string
): Either.Either<ProviderThreadHead, StorageError> => servedSince(pt, rows, what)?.head ?? Either.right(pt)
