/**
 * JSON + Schema at the storage boundary, and the mapping of every storage failure
 * (SqlError, ParseError, bad JSON) to the domain StorageError with a useful detail.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { StorageError } from "@skein/domain"
import { Either, ParseResult, Schema } from "effect"

const causeText = (cause: unknown): string => {
  if (cause instanceof Error) return cause.message
  return typeof cause === "string" ? cause : (JSON.stringify(cause) ?? String(cause))
}

/** A SqlError as a StorageError saying what was being done (`while` …). */
export const fromSqlError =
  (doing: string) =>
  (error: SqlError | StorageError): StorageError =>
    error._tag === "StorageError"
      ? error
      : new StorageError({
          detail: `${doing}: ${error.message}${error.cause !== undefined ? ` (${causeText(error.cause)})` : ""}`
        })

/**
 * A decoder from a JSON column to a domain type. `what` names the row in the error,
 * e.g. `run thr_1/3`.
 */
export const jsonDecoder = <A, I>(schema: Schema.Schema<A, I>, kind: string) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (json: string, what: string): Either.Either<A, StorageError> => {
    let value: unknown
    try {
      value = JSON.parse(json)
    } catch (error) {
      return Either.left(new StorageError({ detail: `${what} holds invalid JSON (${causeText(error)})` }))
    }
    return Either.mapLeft(
      decode(value),
      (error) =>
        new StorageError({
          detail: `${what} is not a valid ${kind}: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
    )
  }
}

export const describeError = causeText
