/**
 * Command receipts: a stable hash of a command's payload, so that a replayed commandId
 * can be told from a reused one, and the one way to read a receipt back (`replay`).
 */
import { createHash } from "node:crypto"
import type { CommandId } from "@skein/domain"
import { CommandConflict, StorageError } from "@skein/domain"
import { Effect, Option, Schema } from "effect"
import type { StoredReceipt } from "./EventStore.js"

const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])])
    )
  }
  return value
}

export const payloadHash = (payload: unknown): string =>
  createHash("sha256")
    .update(JSON.stringify(canonical(payload)))
    .digest("base64url")

/**
 * The stored result of `commandId`, if it was used before: for the same method and
 * payload hash, its result decoded with `result`; for another method or payload, a
 * `CommandConflict`; None for a new command (or no command id at all).
 */
export const replay = <A, I>(
  receiptOf: (commandId: CommandId) => Effect.Effect<Option.Option<StoredReceipt>, StorageError>,
  commandId: CommandId | undefined,
  method: string,
  hash: string,
  result: Schema.Schema<A, I>
): Effect.Effect<Option.Option<A>, CommandConflict | StorageError> =>
  commandId === undefined
    ? Effect.succeedNone
    : Effect.flatMap(
        receiptOf(commandId),
        (receipt): Effect.Effect<Option.Option<A>, CommandConflict | StorageError> => {
          if (Option.isNone(receipt)) return Effect.succeedNone
          if (receipt.value.method !== method || receipt.value.payloadHash !== hash) {
            return Effect.fail(new CommandConflict({ commandId, method }))
          }
          return Schema.decodeUnknown(result)(receipt.value.result).pipe(
            Effect.map(Option.some),
            Effect.mapError(
              () => new StorageError({ detail: `the receipt of command ${commandId} does not hold a ${method} result` })
            )
          )
        }
      )
