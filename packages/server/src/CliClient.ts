/**
 * What the client commands share: the connection options they take, a typed client
 * for the length of one command (its failures reported as `CliFailures` says), output
 * helpers, and payloads checked against their method's schema before anything is sent.
 */
import { InvalidInput, RunId, ThreadId } from "@skein/domain"
import { Console, Effect, Option, ParseResult, Schema } from "effect"
import type { Scope } from "effect"
import { makeSkeinClient, type SkeinClientShape } from "./Client.js"
import { reportFailures } from "./CliFailures.js"

/** The options every client command takes (declared in Cli.ts). */
export interface Connection {
  readonly url: string
  readonly token: Option.Option<string>
}
export interface Json {
  readonly json: boolean
}
export interface OnThread extends Connection, Json {
  readonly thread: string
}

export const withClient = <A, E>(
  options: Connection & Partial<Json>,
  use: (client: SkeinClientShape) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.scoped(
    Effect.flatMap(makeSkeinClient({ url: options.url, token: Option.getOrUndefined(options.token) }), use)
  ).pipe(reportFailures({ url: options.url, json: options.json ?? true }))

export const printJson = (value: unknown) => Console.log(JSON.stringify(value))
export const printLines = (lines: ReadonlyArray<string>) => Console.log(lines.join("\n"))

/**
 * A payload checked against its method's schema before anything is sent, so bad input
 * is one `InvalidInput` naming the argument (`RUN: …`), never a schema dump.
 */
export const checked = <A, I>(
  schema: Schema.Schema<A, I>,
  raw: unknown,
  names: Readonly<Record<string, string>> = {}
): Effect.Effect<A, InvalidInput> =>
  Schema.decodeUnknown(schema, { errors: "all" })(raw).pipe(
    Effect.mapError((error) => {
      const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
      const text = [
        ...new Set(
          issues.map((issue) => {
            const field = issue.path.map(String).join(".")
            const name = names[field] ?? (field === "" ? "input" : field)
            return `${name}: ${issue.message.replace(/\s*\n\s*/g, " ")}`
          })
        )
      ]
      return new InvalidInput({ detail: text.join("; ") })
    })
  )

export const decodeThreadId = (raw: string, name = "THREAD") => checked(ThreadId, raw, { "": name })

/** A run named by its ordinal (`3`) or its id (`run_…`). */
export const runRef = (
  raw: string
): Effect.Effect<{ readonly ordinal: number } | { readonly runId: RunId }, InvalidInput> =>
  /^\d+$/.test(raw)
    ? Effect.succeed({ ordinal: Number(raw) })
    : raw.startsWith("run_")
      ? Effect.map(checked(RunId, raw, { "": "RUN" }), (runId) => ({ runId }))
      : Effect.fail(
          new InvalidInput({
            detail: `RUN: ${JSON.stringify(raw)} is neither a run ordinal (0, 1, 2 … as skein show prints them) nor a run id (run_…)`
          })
        )
