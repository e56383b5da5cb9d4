import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { resourceFromAttributes } from "@opentelemetry/resources"
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions"
import { Effect, Layer } from "effect"
import type { AppConfig } from "../config.js"

export const SERVICE_NAME = "authservice"

/**
 * Effect's tracer backed by an OpenTelemetry provider that hands finished spans to
 * `processor`. Every `Effect.withSpan` of ours, the HTTP server's span per request and the
 * SQL client's span per statement then become OpenTelemetry spans (one trace per request or
 * job). The provider flushes on shutdown, so the spans of a drained request are not lost.
 */
export const tracingLayer = (processor: SpanProcessor, serviceName: string = SERVICE_NAME) =>
  OtelTracer.layer.pipe(Layer.provide(Layer.effect(OtelTracer.OtelTracerProvider, Effect.acquireRelease(
    Effect.sync(() => new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
      spanProcessors: [processor],
    })),
    (provider) => Effect.promise(() => provider.forceFlush().finally(() => provider.shutdown())).pipe(
      Effect.ignore, Effect.timeoutOption("3 seconds")),
  ))))

/**
 * OTLP/HTTP export when configured; otherwise nothing is installed: Effect keeps its native
 * tracer, and the HTTP server skips its per-request span entirely (effect/http HttpEffect
 * only traces when a real tracer is present), so an unset endpoint costs nothing measurable.
 * The service name is OTEL_SERVICE_NAME when set.
 */
export const TracingLive = (config: AppConfig, env: Readonly<Record<string, string | undefined>> = process.env) =>
  config.otlpTracesUrl === undefined
    ? Layer.empty
    : (tracingLayer(new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlpTracesUrl })), env["OTEL_SERVICE_NAME"] || SERVICE_NAME))
