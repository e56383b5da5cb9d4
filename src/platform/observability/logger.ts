import { Context, Layer, Logger, Option, References, Tracer } from "effect"
import { writeLogLine } from "./log-sink.js"
import { redactValue } from "./redact.js"
import { EFFECT_LOG_LEVEL, type LogLevelName } from "./log-level.js"

/**
 * Production log lines (docs/architecture.md, Operability): one JSON object per line on stdout with
 * `time`, `level`, `msg`, the annotations (`request_id` inside a request), the `trace_id` /
 * `span_id` of the current span and the failure `cause`, every string passed through the
 * redaction net (./redact.ts). The per-request line is written by src/http/log.ts.
 */
export const jsonLogger = Logger.make((options) => {
  const structured = Logger.formatStructured.log(options)
  // Trace ids only when spans are recorded (an exporter is configured): others name nothing.
  const span = options.fiber.getRef(References.TracerEnabled)
    ? Context.getOption(options.fiber.context, Tracer.ParentSpan)
    : Option.none()
  // `Effect.logInfo("webhook attempt", { ...fields })`: the text is `msg`, the objects become fields.
  const parts: ReadonlyArray<unknown> = Array.isArray(structured.message) ? structured.message : [structured.message]
  const fields: Record<string, unknown> = {}
  const texts: Array<unknown> = []
  for (const part of parts) {
    if (part !== null && typeof part === "object" && !Array.isArray(part)) Object.assign(fields, part)
    else texts.push(part)
  }
  const line = {
    time: structured.timestamp,
    level: structured.level.toLowerCase(),
    ...(redactValue({
      msg: texts.length === 1 ? texts[0] : texts,
      ...fields,
      ...structured.annotations,
      ...(structured.cause ? { cause: structured.cause } : {}),
    }) as Record<string, unknown>),
    ...(span._tag === "Some" ? { trace_id: span.value.traceId, span_id: span.value.spanId } : {}),
  }
  writeLogLine(JSON.stringify(line) + "\n")
})

/**
 * JSON lines in production; Effect's readable default elsewhere; either way only lines at
 * LOG_LEVEL or above (graphile-worker's own lines follow the same level: ../worker-logger.ts).
 */
export const LoggerLive = (production: boolean, level: LogLevelName = "info") =>
  Layer.mergeAll(
    production ? Logger.layer([jsonLogger]) : Layer.empty,
    Layer.succeed(References.MinimumLogLevel, EFFECT_LOG_LEVEL[level]),
  )
