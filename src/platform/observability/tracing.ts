import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Tracer } from "effect"
import type { AppConfig, OtlpProtocol } from "../config.js"
import { DEFAULT_SERVICE_NAME } from "./otel-resource.js"
import { reportingExporter } from "./trace-export-failures.js"

/**
 * Effect's tracer backed by an OpenTelemetry provider that hands finished spans to the
 * processor. Every span of ours (`withCallSpan`), the HTTP server's span per request and the
 * SQL client's span per statement then become OpenTelemetry spans (one trace per request,
 * continued by the jobs it queues). The provider flushes on shutdown, so the spans of a
 * drained request are not lost. The OpenTelemetry modules are imported only here, when
 * tracing is on: a process without it does not even load them (about 0.2 s of start-up).
 */
export const tracingLayer = (
  makeProcessor: () => Promise<SpanProcessor>,
  resource: Readonly<Record<string, string>> = { "service.name": DEFAULT_SERVICE_NAME },
) =>
  Layer.unwrap(
    Effect.promise(async () => {
      const [OtelTracer, { BasicTracerProvider }, { defaultResource, resourceFromAttributes }] = await Promise.all([
        import("@effect/opentelemetry/OtelTracer"),
        import("@opentelemetry/sdk-trace-base"),
        import("@opentelemetry/resources"),
      ])
      const processor = await makeProcessor()
      // @effect/opentelemetry's tracer also has a `context` hook that builds an OpenTelemetry
      // context around every step of a traced fiber, for libraries that read the active OTel span.
      // None here does (no context manager is registered, so the API's `active()` is always the
      // root and the contexts it builds are dropped unread), and it was a tenth of the server's CPU
      // on a traced grant (docs/decisions/performance.md, "With traces exported"): spans only.
      const spansOnly = Layer.effect(
        Tracer.Tracer,
        Effect.map(OtelTracer.make, (otel) => Tracer.make({ span: (options) => otel.span(options) })),
      )
      return spansOnly.pipe(
        Layer.provideMerge(OtelTracer.layerTracer),
        Layer.provide(
          Layer.effect(
            OtelTracer.OtelTracerProvider,
            Effect.acquireRelease(
              Effect.sync(
                () =>
                  new BasicTracerProvider({
                    // The SDK's own attributes (telemetry.sdk.*), then the operator's.
                    resource: defaultResource().merge(resourceFromAttributes({ ...resource })),
                    spanProcessors: [processor],
                  }),
              ),
              // A collector that cannot be reached fails the last flush: already reported, not a failed shutdown.
              (provider) =>
                Effect.tryPromise(() => provider.forceFlush().finally(() => provider.shutdown())).pipe(
                  Effect.ignore,
                  Effect.timeoutOption("3 seconds"),
                ),
            ),
          ),
        ),
      )
    }),
  )

/** The OTLP/HTTP exporter of the protocol (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT etc. are read by the exporter). */
const otlpExporter = async (url: string, protocol: OtlpProtocol): Promise<SpanExporter> =>
  protocol === "http/json"
    ? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter({ url })
    : new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter({ url })

/**
 * Export over OTLP/HTTP in batches (OTEL_BSP_* tune the batches); a collector that cannot be
 * reached is reported once and then retried with backoff (./trace-export-failures.ts).
 */
const otlpProcessor =
  (url: string, protocol: OtlpProtocol, report: (level: "warn" | "info", message: string) => void) =>
  async (): Promise<SpanProcessor> => {
    const { BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base")
    return new BatchSpanProcessor(reportingExporter(await otlpExporter(url, protocol), url, report))
  }

/**
 * OTLP/HTTP export when configured (OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT, with
 * OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES); otherwise
 * nothing is installed: Effect keeps its native tracer, and the HTTP server skips its
 * per-request span entirely (effect/http HttpEffect only traces when a real tracer is
 * present). The native tracer still makes the spans of our withCallSpan calls and of each SQL
 * statement in memory: bench/tracing-overhead.ts measured that at 7-15% of the throughput of
 * userinfo, a Management list and a Public API write against the tracer switched off
 * (docs/decisions/production-operation.md, "After review"), so runtime.ts switches it off.
 */
export const TracingLive = (config: AppConfig) => {
  const url = config.otlpTracesUrl
  if (url === undefined) return Layer.empty
  return Layer.unwrap(
    Effect.gen(function* () {
      // Export failures happen outside any fiber: their line is written with this layer's
      // services (the process's logger and LOG_LEVEL).
      const context = yield* Effect.context<never>()
      const report = (level: "warn" | "info", message: string) =>
        void Effect.runPromiseWith(context)(level === "warn" ? Effect.logWarning(message) : Effect.logInfo(message))
      return tracingLayer(otlpProcessor(url, config.otlpProtocol, report), config.otelResource)
    }),
  )
}
