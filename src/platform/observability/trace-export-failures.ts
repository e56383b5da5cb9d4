import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"

/** The first pause after a failed export, doubled after each further failure up to the most. */
const FIRST_PAUSE_MS = 1_000
const LONGEST_PAUSE_MS = 60_000

/** `ExportResultCode.SUCCESS` of @opentelemetry/core (a transitive dependency: its value, not its import). */
const SUCCESS = 0

/**
 * A span exporter that says when the collector cannot be reached, once, instead of the
 * OTLP exporter's silence (it reports to the OpenTelemetry diag logger, off by default), and
 * that then backs off: while paused, batches are dropped without a connection attempt (1 s,
 * doubling to 60 s), so a collector that is down costs neither a log line nor a connect per
 * batch. The first export that succeeds again says so, once. Spans are never queued beyond
 * the batch processor's own buffer: tracing must not hold memory for a collector that is gone.
 */
export const reportingExporter = (
  inner: SpanExporter,
  url: string,
  report: (level: "warn" | "info", message: string) => void,
): SpanExporter => {
  let failing = false
  let pause = FIRST_PAUSE_MS
  let pausedUntil = 0
  return {
    export: (spans: Array<ReadableSpan>, done) => {
      if (failing && Date.now() < pausedUntil) {
        done({ code: 1, error: new Error("the trace collector is unreachable; backing off") })
        return
      }
      inner.export(spans, (result) => {
        if (result.code === SUCCESS) {
          if (failing) report("info", `traces are exported again to ${url}`)
          failing = false
          pause = FIRST_PAUSE_MS
        } else {
          if (!failing)
            report(
              "warn",
              `traces cannot be exported to ${url} (${result.error?.message ?? "export failed"}); spans are dropped and the export is retried with backoff (up to every ${LONGEST_PAUSE_MS / 1000} s)`,
            )
          failing = true
          pausedUntil = Date.now() + pause
          pause = Math.min(pause * 2, LONGEST_PAUSE_MS)
        }
        done(result)
      })
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  }
}
