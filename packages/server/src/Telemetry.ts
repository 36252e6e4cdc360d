/**
 * OpenTelemetry for a Skein process, from the standard variables: off unless an OTLP
 * endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the traces' or metrics' own),
 * and off whatever else is set with `OTEL_SDK_DISABLED=true`. On, the runtime's spans
 * and metrics (`@skein/runtime`'s Telemetry) go through `@effect/opentelemetry` and the
 * OpenTelemetry SDK to the endpoint, over `http/protobuf` (the default) or `http/json`
 * (`OTEL_EXPORTER_OTLP_PROTOCOL`); `OTEL_SERVICE_NAME` names the service (default
 * `skein`). Spans go in batches, metrics every `OTEL_METRIC_EXPORT_INTERVAL` ms (default
 * 60000); what is left is flushed when the process's scope closes. Message text goes
 * into spans only with `SKEIN_OTEL_CAPTURE_CONTENT=true`.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto"
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { InvalidInput } from "@skein/domain"
import { Telemetry } from "@skein/runtime"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import { SKEIN_VERSION } from "./Version.js"

export type TelemetryEnv = Readonly<Record<string, string | undefined>>

/** What the variables ask for: nothing (off), or where and how to export. */
export type TelemetrySettings =
  | { readonly _tag: "Off" }
  | {
      readonly _tag: "On"
      readonly protocol: "http/protobuf" | "http/json"
      readonly serviceName: string
      readonly metricIntervalMs: number
      readonly captureContent: boolean
    }

const named = (env: TelemetryEnv, name: string): string | undefined => {
  const value = env[name]?.trim()
  return value === undefined || value === "" ? undefined : value
}

/** The settings the variables name; a protocol or interval Skein cannot use is an `InvalidInput`. */
export const telemetrySettings = (env: TelemetryEnv): Effect.Effect<TelemetrySettings, InvalidInput> =>
  Effect.suspend((): Effect.Effect<TelemetrySettings, InvalidInput> => {
    const endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].some(
      (name) => named(env, name) !== undefined
    )
    if (!endpoint || named(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") {
      return Effect.succeed({ _tag: "Off" } as const)
    }
    const protocol =
      named(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? named(env, "OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf"
    if (protocol !== "http/protobuf" && protocol !== "http/json") {
      return Effect.fail(
        new InvalidInput({
          detail: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: Skein exports over http/protobuf or http/json, not ${protocol}. Set one of those, or unset the variable.`
        })
      )
    }
    const interval = named(env, "OTEL_METRIC_EXPORT_INTERVAL") ?? "60000"
    const metricIntervalMs = Number(interval)
    if (!Number.isInteger(metricIntervalMs) || metricIntervalMs < 100) {
      return Effect.fail(
        new InvalidInput({
          detail: `OTEL_METRIC_EXPORT_INTERVAL=${interval}: expected whole milliseconds, at least 100.`
        })
      )
    }
    return Effect.succeed({
      _tag: "On",
      protocol,
      serviceName: named(env, "OTEL_SERVICE_NAME") ?? "skein",
      metricIntervalMs,
      captureContent: named(env, "SKEIN_OTEL_CAPTURE_CONTENT")?.toLowerCase() === "true"
    } as const)
  })

/** The exporters' layer for settings that are on (the exporters read the endpoint and headers themselves). */
export const otlpLayer = (settings: Extract<TelemetrySettings, { _tag: "On" }>): Layer.Layer<never> => {
  const json = settings.protocol === "http/json"
  return Layer.mergeAll(
    Layer.discard(
      NodeSdk.layer(() => ({
        resource: { serviceName: settings.serviceName, serviceVersion: SKEIN_VERSION },
        spanProcessor: new BatchSpanProcessor(json ? new JsonTraceExporter() : new ProtoTraceExporter()),
        metricReader: new PeriodicExportingMetricReader({
          exporter: json ? new JsonMetricExporter() : new ProtoMetricExporter(),
          exportIntervalMillis: settings.metricIntervalMs
        }),
        shutdownTimeout: "5 seconds"
      }))
    ),
    Telemetry.enableTelemetry({ captureContent: settings.captureContent })
  )
}

/** OpenTelemetry as the variables say: the exporters and the runtime's telemetry on, or nothing. */
export const telemetryFromEnv = (env: TelemetryEnv = process.env): Layer.Layer<never, InvalidInput> =>
  Layer.unwrapEffect(
    Effect.map(telemetrySettings(env), (settings) => (settings._tag === "Off" ? Layer.empty : otlpLayer(settings)))
  )

/**
 * Runs `effect` under OpenTelemetry as the variables say (nothing when they name no
 * endpoint): installed before it, flushed and closed after it.
 */
export const withTelemetryFromEnv = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  env: TelemetryEnv = process.env
): Effect.Effect<A, E | InvalidInput, Exclude<R, Scope.Scope>> =>
  Effect.scoped(
    Effect.flatMap(Layer.toRuntime(telemetryFromEnv(env)), (telemetry) => Effect.provide(effect, telemetry))
  )
