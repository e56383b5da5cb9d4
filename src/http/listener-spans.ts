import type { IncomingMessage } from "node:http"
import { Clock, Context, Effect, Exit, Option, References, Tracer } from "effect"
import { Headers, HttpTraceContext, UrlParams } from "effect/http"

/** What the listener knows of an answer it gave without the Effect application. */
export interface ListenerAnswerSpan {
  /** The route template, as the application labels it (`/e/{environment_id}/oauth2/userinfo`). */
  readonly route: string
  readonly status: number
  readonly requestId: string
  /** When the listener received the request (the Clock's nanoseconds). */
  readonly started: bigint
}

/** Records the answer's server span and returns its trace id (for the request's log line). */
export type RecordListenerSpan = (request: IncomingMessage, answer: ListenerAnswerSpan) => string

const DEFAULT_PORTS: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 }

/**
 * The server span of an answer the listener gives from memory (src/oidc/access-token/fast-lane.ts)
 * while traces are exported: the span effect/http's tracer middleware makes for every request the
 * application answers, with the same name (the method), kind, parent (an inbound `traceparent`),
 * attributes (method, URL, user agent, client address, status; no headers, the middleware's
 * default) and the two the application adds (`http.route`, `app.request_id`). So exporting traces
 * no longer sends every request through the application: with the listener's answers switched off
 * when traced, UserInfo and introspection ran at a fifth to a third of their untraced rate
 * (docs/decisions/performance.md, "With traces exported"). Undefined when nothing is exported:
 * then no request gets a server span at all (src/platform/observability/tracing.ts).
 */
export const makeListenerSpans = Effect.gen(function* () {
  const tracer = yield* Tracer.Tracer
  if (tracer === Tracer.nativeTracer || !(yield* References.TracerEnabled)) return undefined
  const clock = yield* Clock.Clock
  const redactedParams = yield* UrlParams.CurrentRedactedNames
  const record: RecordListenerSpan = (request, answer) => {
    const method = request.method!
    const parent = HttpTraceContext.fromHeaders(Headers.fromRecordUnsafe(request.headers as Record<string, string>))
    const span = tracer.span({
      name: method,
      parent,
      annotations: Context.empty(),
      links: [],
      startTime: answer.started,
      kind: "server",
      root: false,
      sampled: Option.isNone(parent) || parent.value.sampled !== false,
    })
    if (span.sampled) {
      span.attribute("http.request.method", method)
      const url = urlOf(request)
      if (url !== undefined) {
        const query = UrlParams.redactUrl(url.search, redactedParams).slice(1)
        span.attribute("url.full", UrlParams.redactUrl(url.href, redactedParams))
        span.attribute("url.path", url.pathname)
        if (query !== "") span.attribute("url.query", query)
        span.attribute("url.scheme", url.protocol.slice(0, -1))
        if (url.hostname !== "") {
          span.attribute("server.address", url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname)
          const port = url.port === "" ? DEFAULT_PORTS[url.protocol] : Number(url.port)
          if (port !== undefined) span.attribute("server.port", port)
        }
      }
      const userAgent = request.headers["user-agent"]
      if (userAgent !== undefined) span.attribute("user_agent.original", userAgent)
      if (request.socket.remoteAddress !== undefined) span.attribute("client.address", request.socket.remoteAddress)
      span.attribute("http.response.status_code", answer.status)
    }
    span.attribute("http.route", answer.route)
    span.attribute("app.request_id", answer.requestId)
    span.end(clock.currentTimeNanosUnsafe(), Exit.void)
    return span.traceId
  }
  return record
})

/** The request's URL as effect/http builds it for the span (the listener serves plain HTTP). */
const urlOf = (request: IncomingMessage) => {
  const target = request.url!
  try {
    return new URL(target.startsWith("/") ? `.${target}` : target, `http://${request.headers.host ?? "localhost"}`)
  } catch {
    return undefined
  }
}
