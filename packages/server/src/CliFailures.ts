/**
 * How every `skein` command reports a failure: one line for a person on stderr
 * (`skein: …`: what failed, why, what to do), or with `--json` (and always for `call`
 * and the server commands) the typed error as JSON (`{"_tag":…,"message":…,…}`); then
 * a non-zero exit (`CliExit`).
 */
import { SkeinError } from "@skein/domain"
import { Cause, Console, Effect, Option, Schema } from "effect"
import { CliExit } from "./CliExit.js"
import { HandshakeRefused } from "./Client.js"

const encodeSkeinError = Schema.encodeSync(SkeinError)

/** The JSON form of any failure: `_tag`, `message`, and the error's own fields. */
export const errorJson = (error: unknown, context: { readonly url?: string } = {}): Record<string, unknown> => {
  if (Schema.is(SkeinError)(error)) return { ...encodeSkeinError(error), message: error.message }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { readonly _tag: string; readonly message?: unknown }
    if (tagged._tag === "RpcClientError") {
      const cause = (error as { readonly cause?: unknown }).cause
      if (cause instanceof HandshakeRefused) {
        return {
          _tag: cause.status === 401 ? "Unauthorized" : "ConnectionRefused",
          status: cause.status,
          message: cause.message
        }
      }
      return {
        _tag: "ConnectionFailed",
        message: `Could not reach Skein${context.url === undefined ? "" : ` at ${context.url}`}: ${String(tagged.message)}. Is the daemon running (skein daemon)?`
      }
    }
    return { _tag: tagged._tag, message: String(tagged.message ?? tagged._tag) }
  }
  return { _tag: "Defect", message: String(error) }
}

/** A failure's message as one line, for a person. */
export const errorLine = (error: unknown, context: { readonly url?: string } = {}): string => {
  const json = errorJson(error, context)
  return `skein: ${String(json["message"] ?? json["_tag"]).replace(/\s*\n\s*/g, " ")}`
}

/**
 * Reports a failure on stderr and turns it into a `CliExit`: the typed error as JSON
 * with `json` (and for `call`), else one line a person reads (what failed, why, what to do).
 */
export const reportFailures =
  (context: { readonly url?: string; readonly json?: boolean } = { json: true }) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CliExit, R> =>
    effect.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
        if (error instanceof CliExit) return Effect.fail(error)
        const text = context.json === false ? errorLine(error, context) : JSON.stringify(errorJson(error, context))
        return Console.error(text).pipe(Effect.zipRight(Effect.fail(new CliExit({ code: 1 }))))
      })
    )
