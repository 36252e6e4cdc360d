import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { jsonWithTrace } from "../src/LogFormat.js"

const linesOf = <A, E>(program: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const lines: Array<Record<string, unknown>> = []
    const capture = Logger.map(jsonWithTrace, (line) => void lines.push(JSON.parse(line) as Record<string, unknown>))
    const value = yield* program.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    return { lines, value }
  })

describe("jsonWithTrace (--log-format json)", () => {
  it.effect("a line in a span carries the span's trace and span ids, with the level, message and annotations", () =>
    Effect.gen(function* () {
      const { lines, value: span } = yield* linesOf(
        Effect.zipRight(
          Effect.logWarning("the provider is slow").pipe(Effect.annotateLogs("provider", "alpha")),
          Effect.orDie(Effect.currentSpan)
        ).pipe(Effect.withSpan("invoke_agent alpha"))
      )
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        message: "the provider is slow",
        logLevel: "WARN",
        annotations: { provider: "alpha" },
        traceId: span.traceId,
        spanId: span.spanId
      })
    })
  )

  it.effect("a line outside any span has no ids; one that cannot be serialised is still a line", () =>
    Effect.gen(function* () {
      const cyclic: Record<string, unknown> = {}
      cyclic["self"] = cyclic
      const { lines } = yield* linesOf(
        Effect.zipRight(Effect.logInfo("plain"), Effect.logInfo("odd").pipe(Effect.annotateLogs("c", cyclic)))
      )
      expect(lines[0]).toMatchObject({ message: "plain", logLevel: "INFO" })
      expect(lines[0]).not.toHaveProperty("traceId")
      expect(lines[1]).toMatchObject({ message: "odd" })
    })
  )
})
