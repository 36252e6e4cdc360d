/**
 * How a Skein process writes its log lines to stderr (stdout is for output and
 * protocols): `logfmt`, Effect's default, or `json`, one object a line with the trace
 * and span ids of the span current where the line was logged, so that a log store can
 * join it to the trace (`--log-format json`).
 */
import { Context, Effect, FiberRef, FiberRefs, HashSet, Layer, Logger, Option, Tracer } from "effect"

export const LogFormats = ["logfmt", "json"] as const
export type LogFormat = (typeof LogFormats)[number]

/** One JSON object a line: Effect's structured fields, plus `traceId` and `spanId` inside a span. */
export const jsonWithTrace: Logger.Logger<unknown, string> = Logger.make((options) => {
  const fields: Record<string, unknown> = { ...Logger.structuredLogger.log(options) }
  const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
  if (Option.isSome(span)) {
    fields["traceId"] = span.value.traceId
    fields["spanId"] = span.value.spanId
  }
  try {
    return JSON.stringify(fields)
  } catch {
    return JSON.stringify({ ...fields, message: String(fields["message"]), annotations: undefined, cause: undefined })
  }
})

/**
 * The one logger of a command: the format chosen, to stderr. It takes the place of every
 * logger set before it (`Logger.replace` would add it beside one that already replaced
 * the default, and each line would be written twice).
 */
export const loggerLayer = (format: LogFormat): Layer.Layer<never> =>
  Layer.scopedDiscard(
    Effect.locallyScopedWith(FiberRef.currentLoggers, () =>
      HashSet.make<Array<Logger.Logger<unknown, any>>>(
        Logger.withConsoleError(format === "json" ? jsonWithTrace : Logger.logfmtLogger)
      )
    )
  )
