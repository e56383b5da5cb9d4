import { Effect, Option, References, Tracer } from "effect"
import { Headers, HttpTraceContext } from "effect/http"

/**
 * The W3C `traceparent` of the current span, when spans are recorded (an exporter is
 * configured): what a job queued here stores in its payload and what an outbound request
 * (webhook, social provider) sends, so the work it causes joins the request's trace.
 * Without tracing there is nothing to join: undefined, and nothing is stored or sent.
 */
export const currentTraceparent: Effect.Effect<string | undefined> = Effect.gen(function* () {
  if (!(yield* References.TracerEnabled)) return undefined
  const span = yield* Effect.serviceOption(Tracer.ParentSpan)
  if (Option.isNone(span)) return undefined
  const { traceId, spanId, sampled } = span.value
  return `00-${traceId.padStart(32, "0")}-${spanId}-${sampled ? "01" : "00"}`
})

/** The span a stored `traceparent` names (a job's payload), to parent the job's span under. */
export const spanOfTraceparent = (value: unknown): Tracer.ExternalSpan | undefined =>
  typeof value === "string"
    ? Option.getOrUndefined(HttpTraceContext.w3c(Headers.fromRecordUnsafe({ traceparent: value })))
    : undefined

/** The `traceparent` a queued job's payload carries, if any (payloads are JSON objects). */
export const traceparentOfPayload = (payload: unknown): unknown =>
  payload !== null && typeof payload === "object" ? (payload as { traceparent?: unknown }).traceparent : undefined
