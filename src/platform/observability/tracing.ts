import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import type { AppConfig } from "../config.js"

export const SERVICE_NAME = "authservice"

/**
 * Effect's tracer backed by an OpenTelemetry provider that hands finished spans to the
 * processor. Every span of ours (`withCallSpan`), the HTTP server's span per request and the
 * SQL client's span per statement then become OpenTelemetry spans (one trace per request or
 * job). The provider flushes on shutdown, so the spans of a drained request are not lost.
 * The OpenTelemetry modules are imported only here, when tracing is on: a process without it
 * does not even load them (they cost about 0.2 s of start-up).
 */
export const tracingLayer = (makeProcessor: () => Promise<SpanProcessor>, serviceName: string = SERVICE_NAME) =>
  Layer.unwrap(Effect.promise(async () => {
    const [OtelTracer, { BasicTracerProvider }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] = await Promise.all([
      import("@effect/opentelemetry/OtelTracer"), import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/resources"), import("@opentelemetry/semantic-conventions"),
    ])
    const processor = await makeProcessor()
    return OtelTracer.layer.pipe(Layer.provide(Layer.effect(OtelTracer.OtelTracerProvider, Effect.acquireRelease(
      Effect.sync(() => new BasicTracerProvider({
        resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
        spanProcessors: [processor],
      })),
      (provider) => Effect.promise(() => provider.forceFlush().finally(() => provider.shutdown())).pipe(
        Effect.ignore, Effect.timeoutOption("3 seconds")),
    ))))
  }))

/** Export over OTLP/HTTP in batches (OTEL_EXPORTER_OTLP_HEADERS etc. are read by the exporter). */
const otlpProcessor = (url: string) => async (): Promise<SpanProcessor> => {
  const [{ BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
    import("@opentelemetry/sdk-trace-base"), import("@opentelemetry/exporter-trace-otlp-http"),
  ])
  return new BatchSpanProcessor(new OTLPTraceExporter({ url }))
}

/**
 * OTLP/HTTP export when configured; otherwise nothing is installed: Effect keeps its native
 * tracer, and the HTTP server skips its per-request span entirely (effect/http HttpEffect
 * only traces when a real tracer is present). The native tracer still makes the spans of our
 * withCallSpan calls and of each SQL statement in memory: bench/tracing-overhead.ts measured
 * that at 7-15% of the throughput of userinfo, a Management list and a Public API write against
 * the tracer switched off (docs/decisions/production-operation.md, "After review"). The service name is
 * OTEL_SERVICE_NAME when set.
 */
export const TracingLive = (config: AppConfig, env: Readonly<Record<string, string | undefined>> = process.env) =>
  config.otlpTracesUrl === undefined
    ? Layer.empty
    : tracingLayer(otlpProcessor(config.otlpTracesUrl), env["OTEL_SERVICE_NAME"] || SERVICE_NAME)
