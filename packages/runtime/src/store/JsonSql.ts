/**
 * Reading the JSON columns inside SQL, in each database's words. The store keeps JSON as
 * text; PostgreSQL reads it as `json` (not `jsonb`, which refuses the `\u0000` that begins
 * a long string's reference, Blobs.ts).
 */
import type { Dialect } from "./StoreDb.js"

/** The field at `path` of the JSON in `column`: a value in SQLite, text in PostgreSQL (compare with text). */
export const field = (dialect: Dialect, column: string, path: string): string =>
  dialect === "sqlite"
    ? `json_extract(${column}, '$.${path}')`
    : `(${column}::json #>> '{${path.replaceAll(".", ",")}}')`

/** Whether the field at `path` is `true` (false when missing). */
export const isTrue = (dialect: Dialect, column: string, path: string): string =>
  dialect === "sqlite"
    ? `COALESCE(${field(dialect, column, path)}, 0) = 1`
    : `COALESCE(${field(dialect, column, path)}, 'false') = 'true'`

/** A JSON array, as text, of the expressions' values. */
export const array = (dialect: Dialect, expressions: ReadonlyArray<string>): string =>
  dialect === "sqlite" ? `json_array(${expressions.join(", ")})` : `json_build_array(${expressions.join(", ")})::text`
