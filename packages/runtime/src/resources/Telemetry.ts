/**
 * What Skein tells an observability stack: spans and metrics through Effect's own
 * tracer and metric APIs, so that any tracer a host installs (the server installs
 * OpenTelemetry's when `OTEL_EXPORTER_OTLP_ENDPOINT` is set) receives them. They are
 * recorded only while telemetry is on (`enableTelemetry`): off, a span or a metric costs
 * one FiberRef read, and the run path stays as decision 0006 left it.
 *
 * Names follow OpenTelemetry's GenAI conventions where they apply: a run is an
 * `invoke_agent` span (`gen_ai.conversation.id` the app thread, `gen_ai.agent.name` the
 * provider instance, `gen_ai.provider.name` its driver, the model, token usage); a tool
 * Skein serves is `execute_tool`. A run's span links to the latest run span of the
 * thread its context came from (a fork's source, a subagent's parent, a merged fork),
 * when this process saw it. Message text goes into spans only with `captureContent`;
 * hidden reasoning, tokens and credentials never.
 */
import type { ProviderName, Run, ThreadId } from "@skein/domain"
import { Duration, Effect, FiberRef, Layer, Metric, MetricBoundaries, Option } from "effect"
import type { Scope, Tracer } from "effect"

/** Whether spans and metrics are recorded (off unless a host turns them on). */
export const telemetryOn: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)
/** Whether spans may carry message text (the user's opt-in). */
export const contentCaptured: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/** Turns spans and metrics on for whatever is built or run after it (in the same fiber). */
export const enableTelemetry = (options: { readonly captureContent?: boolean } = {}): Layer.Layer<never> =>
  Layer.scopedDiscard(
    Effect.zipRight(
      Effect.locallyScoped(telemetryOn, true),
      Effect.locallyScoped(contentCaptured, options.captureContent ?? false)
    )
  )

/** `effect` in a span named `name` while telemetry is on; as it is otherwise. */
export const traced =
  (name: string, options?: Tracer.SpanOptions) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(telemetryOn), (on) => (on ? Effect.withSpan(effect, name, options) : effect))

/** Runs `effect` only while telemetry is on (a metric's update, an annotation). */
export const whenOn = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(telemetryOn), (on) => (on ? effect : Effect.void))

/** Runs ended, by `status` and `provider`. */
export const runsEnded = Metric.counter("skein.runs", { description: "Runs ended, by status and provider" })
/** Handoffs written, by `strategy`. */
export const handoffsTotal = Metric.counter("skein.handoffs", { description: "Context handoffs written, by strategy" })
/** A provider turn's duration, from its call to its return (ms), by `provider`. */
export const turnDuration = Metric.histogram(
  "skein.turn.duration",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 18 }),
  "A provider turn's duration in milliseconds"
)
const turnDurationMs = Metric.mapInput(turnDuration, (duration: Duration.Duration) => Duration.toMillis(duration))
/** Thread actors alive (threads in use). */
export const activeThreads = Metric.gauge("skein.threads.active", { description: "Thread actors alive" })

/** Counts a thread actor alive for as long as the current scope is open (while telemetry is on). */
export const countThreadAlive: Effect.Effect<void, never, Scope.Scope> = Effect.flatMap(
  FiberRef.get(telemetryOn),
  (on) =>
    on
      ? Effect.zipRight(
          Metric.increment(activeThreads),
          Effect.addFinalizer(() => Metric.incrementBy(activeThreads, -1))
        )
      : Effect.void
)

/** The latest run span of each thread, for the links of the runs whose context came from it (bounded). */
const lastRunSpans = new Map<string, Tracer.AnySpan>()
const MAX_REMEMBERED = 10_000

const remember = (threadId: ThreadId, span: Tracer.AnySpan) => {
  lastRunSpans.delete(threadId)
  lastRunSpans.set(threadId, span)
  if (lastRunSpans.size > MAX_REMEMBERED) lastRunSpans.delete(lastRunSpans.keys().next().value!)
}

/** What a run's span says of it. */
export interface RunSpanInfo {
  readonly run: Run
  /** The provider instance's driver (`gen_ai.provider.name`). */
  readonly driver: string | null
  readonly model: string | null
  /** The threads this run's context came from (transfers it consumed): its span links to their latest runs. */
  readonly sources: () => ReadonlyArray<ThreadId>
}

/** A run's `invoke_agent` span around its driver, while telemetry is on. */
export const runSpan =
  (info: RunSpanInfo) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(telemetryOn), (on) => {
      if (!on) return effect
      const { run } = info
      const links: Array<Tracer.SpanLink> = info.sources().flatMap((source) => {
        const span = lastRunSpans.get(source)
        return span === undefined ? [] : [{ _tag: "SpanLink", span, attributes: { "skein.thread.id": source } }]
      })
      return Effect.flatMap(FiberRef.get(contentCaptured), (content) =>
        Effect.withSpan(
          Effect.zipRight(
            Effect.flatMap(Effect.currentSpan, (span) => Effect.sync(() => remember(run.threadId, span))).pipe(
              Effect.ignore
            ),
            effect
          ),
          `invoke_agent ${run.provider}`,
          {
            kind: "client",
            links,
            attributes: {
              "gen_ai.operation.name": "invoke_agent",
              "gen_ai.conversation.id": run.threadId,
              "gen_ai.agent.name": run.provider,
              ...(info.driver === null ? {} : { "gen_ai.provider.name": info.driver }),
              ...(info.model === null ? {} : { "gen_ai.request.model": info.model }),
              "skein.run.id": run.id,
              "skein.run.ordinal": run.ordinal,
              "skein.context.resolution": run.contextResolution,
              ...(content ? { "gen_ai.input.messages": JSON.stringify([{ role: "user", content: run.message }]) } : {})
            }
          }
        )
      )
    })

/** The handoffs a run start wrote (its own and those it brings in): counted by strategy, named on the span. */
export const handoffsWritten = (context: {
  readonly handoff: { readonly id: string; readonly strategy: string } | null
  readonly extras: ReadonlyArray<{ readonly id: string; readonly strategy: string }>
}): Effect.Effect<void> =>
  context.handoff === null && context.extras.length === 0
    ? Effect.void
    : whenOn(
        Effect.gen(function* () {
          const all = [...(context.handoff === null ? [] : [context.handoff]), ...context.extras]
          yield* Effect.annotateCurrentSpan({
            "skein.handoff.ids": all.map((h) => h.id).join(","),
            "skein.handoff.strategies": all.map((h) => h.strategy).join(",")
          })
          for (const handoff of all) yield* Metric.increment(Metric.tagged(handoffsTotal, "strategy", handoff.strategy))
        })
      )

/** A provider turn's span and duration, while telemetry is on. */
export const providerTurn =
  (provider: ProviderName, nativeRef: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(FiberRef.get(telemetryOn), (on) =>
      on
        ? effect.pipe(
            Metric.trackDuration(Metric.tagged(turnDurationMs, "provider", provider)),
            Effect.withSpan("provider.turn", {
              attributes: { "gen_ai.agent.name": provider, "skein.native_ref": nativeRef }
            })
          )
        : effect
    )

/** What a run's end tells its span and the metrics: its status, its usage. */
export const runEnded = (
  provider: ProviderName,
  end: {
    readonly outcome: string
    readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  }
): Effect.Effect<void> =>
  whenOn(
    // Built only while telemetry is on.
    Effect.suspend(() =>
      Effect.zipRight(
        Effect.annotateCurrentSpan({
          "skein.run.status": end.outcome,
          ...(end.usage === undefined
            ? {}
            : {
                "gen_ai.usage.input_tokens": end.usage.inputTokens,
                "gen_ai.usage.output_tokens": end.usage.outputTokens
              })
        }),
        Metric.increment(Metric.tagged(Metric.tagged(runsEnded, "status", end.outcome), "provider", provider))
      )
    )
  )

/**
 * What a message carries across an actor's mailbox for its handler's span: the sender's
 * span (or none) while telemetry is on; undefined while it is off (no span at all).
 */
export const spanToCarry: Effect.Effect<Option.Option<Tracer.AnySpan> | undefined> = Effect.flatMap(
  FiberRef.get(telemetryOn),
  (on) => (on ? Effect.option(Effect.currentSpan) : Effect.succeed(undefined))
)

/** `effect` in the span of a message carried from its sender (`spanToCarry`), when one was. */
export const withCarriedSpan =
  (name: string, carried: Option.Option<Tracer.AnySpan> | undefined) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    carried === undefined
      ? effect
      : Effect.withSpan(effect, name, Option.isSome(carried) ? { parent: carried.value } : { root: true })
