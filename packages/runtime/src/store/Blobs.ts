/**
 * Long strings stored once.
 *
 * A run's message is in its RunStarted event, in every later event of the run (each
 * carries the whole run), in its `user_message` turn item and in the projection rows
 * of both: five copies of a 1 MiB message. So the JSON the store writes (log payloads,
 * projection `data` and `head` columns) holds each string of `BLOB_MIN_CHARS` or more
 * as a reference, `"\u0000blob:<sha256>"`, and the string itself once, in the `blobs`
 * table, keyed by its hash. Every row read through StoreDb comes back with its
 * references replaced by their strings (`expandRows`), so readers see the JSON as it
 * was before.
 *
 * The reference text must never be taken for a string someone wrote: any string that
 * contains `"\u0000blob:"` is stored as a reference too, whatever its length. So in
 * stored JSON the escaped marker appears only inside references, and a reference is
 * the whole string literal.
 *
 * Stored JSON that holds a reference begins with a tab (`mark`), which JSON.stringify
 * never writes first and JSON allows (SQLite's JSON functions read the column as
 * before): a reader knows from one character whether a row needs expanding, instead
 * of scanning every row it reads.
 */
import { createHash } from "node:crypto"

/** Strings this long (in UTF-16 units) or longer are stored once, by reference. */
export const BLOB_MIN_CHARS = 8192

const MARK = "\u0000blob:"
/** The marker as JSON.stringify writes it. */
const MARK_JSON = "\\u0000blob:"
const REFERENCE = /"\\u0000blob:([0-9a-f]{64})"/g

export interface Blob {
  readonly hash: string
  readonly text: string
}

export interface Externalized {
  /** The JSON to store. */
  readonly json: string
  /** The strings it references, to store beside it. */
  readonly blobs: ReadonlyArray<Blob>
}

const none: ReadonlyArray<Blob> = []

const hashOf = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/**
 * The JSON to store for `value`, given `json`, its JSON.stringify: the same text when
 * it has no string to take out (checked on the text, so a small row costs one scan).
 */
export const externalize = (value: unknown, json: string): Externalized => {
  if (json.length < BLOB_MIN_CHARS && !json.includes(MARK_JSON)) return { json, blobs: none }
  const blobs: Array<Blob> = []
  const stored = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "string" || (v.length < BLOB_MIN_CHARS && !v.includes(MARK))) return v
    const hash = hashOf(v)
    blobs.push({ hash, text: v })
    return `${MARK}${hash}`
  })
  return blobs.length === 0 ? { json, blobs: none } : { json: stored, blobs }
}

/** What begins stored JSON that holds references. */
const REFERS = "\t"
const REFERS_CODE = 9

/** `json` as stored: marked when it holds references (`blobs` not empty). */
export const mark = (json: string, blobs: ReadonlyArray<Blob>): string => (blobs.length === 0 ? json : REFERS + json)

/** `json` with its references replaced by their strings; throws naming a missing one. */
export const expand = (json: string, lookup: (hash: string) => string | undefined): string =>
  json.replace(REFERENCE, (_reference, hash: string) => {
    const text = lookup(hash)
    if (text === undefined) throw new Error(`the stored string ${hash} is missing from table blobs`)
    return JSON.stringify(text)
  })

/**
 * The columns the store keeps JSON in. A query that returns one keeps its name (`SELECT
 * r.data AS data …`), so that looking at these three is enough.
 */
const JSON_COLUMNS = ["payload", "data", "head"] as const

/** Calls `visit` with each JSON column of `rows` that holds references (its record, column and value). */
const eachMarked = (
  rows: ReadonlyArray<unknown>,
  visit: (record: Record<string, unknown>, column: string, value: string) => void
) => {
  for (const row of rows) {
    if (typeof row !== "object" || row === null) continue
    const record = row as Record<string, unknown>
    for (const column of JSON_COLUMNS) {
      const value = record[column]
      if (typeof value === "string" && value.charCodeAt(0) === REFERS_CODE) visit(record, column, value)
    }
  }
}

/** The hashes the JSON columns of `rows` refer to (none for rows that hold no reference). */
export const referencedHashes = (rows: ReadonlyArray<unknown>): ReadonlyArray<string> => {
  const hashes = new Set<string>()
  eachMarked(rows, (_record, _column, value) => {
    for (const match of value.matchAll(REFERENCE)) hashes.add(match[1]!)
  })
  return [...hashes]
}

/** Replaces, in place, the JSON columns of `rows` that hold references with the JSON they stand for. */
export const expandRows = <A>(rows: Array<A>, lookup: (hash: string) => string | undefined): Array<A> => {
  eachMarked(rows, (record, column, value) => {
    record[column] = expand(value.slice(1), lookup)
  })
  return rows
}
