import { ByteSize, Cause, Clock, Effect, Option, Tracer } from "effect"
import { HttpIncomingMessage, HttpServerError, HttpServerRequest, HttpServerResponse, HttpTraceContext } from "effect/http"
import { SqlClient } from "effect/sql"
import { Config } from "../platform/config.js"
import { newRequestId } from "../platform/request-id.js"
import { CurrentRequest } from "../platform/request-context.js"
import { clientIp, UNTRUSTED_FORWARDING_WARNING, untrustedForwardingDetector } from "../platform/trust-proxy.js"
import { Tenancy } from "../tenancy/service.js"
import { environmentUrls } from "../tenancy/urls.js"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { EnvironmentSuspended, InvalidRequest, NotFound, OAuthError, RateLimited, ServiceUnavailable } from "./errors.js"
import { isStorageUnavailable } from "./storage-failure.js"
import { classifyHost } from "./hosts.js"
import { logRequest } from "./log.js"
import { oauthErrorResponse, oauthRateLimitedResponse, PROBLEMS, problemResponse, STORAGE_RETRY_AFTER_SECONDS } from "./problems.js"
import { MAX_BODY_BYTES } from "./route.js"
import { CurrentMetrics } from "../platform/observability/metrics.js"
import { metricsEndpoint } from "./metrics.js"
import { type MatchedRoute, makeSurface } from "./surface.js"
import { withAnyOrigin } from "./cors/any-origin.js"
import type { Route } from "./route.js"

/** The endpoints whose errors are OAuth error bodies (RFC 6749 §4.1.2.1, §5.2; RFC 7009; RFC 7662). */
const OAUTH_ERROR_ENDPOINTS = /\/oauth2\/(token|revoke|introspect|authorize)$/

/** Paths an Environment keeps serving while suspended: verifiers must still check old tokens. */
const SERVED_WHILE_SUSPENDED = new Set(["/.well-known/openid-configuration", "/oauth2/jwks"])

/** The socket peer: the one address no header can change. */
const socketPeer = (request: HttpServerRequest.HttpServerRequest) =>
  request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined

/**
 * The OAuth endpoints whose storage failures are OAuth error bodies (spec: Errors, OAuth error
 * responses; introspection as its caller check already answers: decisions, Tokens: introspection).
 */
const OAUTH_ERROR_PATH = /\/oauth2\/(token|revoke|authorize|introspect)$/

/** The OAuth endpoints whose rate-limit refusals are OAuth error bodies (spec: Errors, OAuth error responses). */
const OAUTH_RATE_LIMITED_PATH = /\/oauth2\/(token|revoke|introspect)$/

/**
 * Turns any failure into a response: the ONE place error bodies are written. A rate-limit
 * refusal names its limit in the body and in `matched.limit` (the request's log line).
 */
const renderFailure = (path: string, matched: RequestRoute) => (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  if (error instanceof OAuthError) return Effect.succeed(oauthErrorResponse(error))
  if (error instanceof RateLimited) {
    matched.limit = error.limit
    if (OAUTH_RATE_LIMITED_PATH.test(path)) return Effect.succeed(oauthRateLimitedResponse(error.limit, error.retryAfterSeconds))
    return problemResponse(PROBLEMS["RateLimited"]!, undefined,
      { "retry-after": String(Math.max(1, Math.ceil(error.retryAfterSeconds))) }, { limit: error.limit })
  }
  if (isStorageUnavailable(error)) {
    return Effect.logWarning("storage unavailable", cause).pipe(Effect.andThen(OAUTH_ERROR_PATH.test(path)
      ? Effect.succeed(oauthErrorResponse(new OAuthError({ error: "server_error", description: "Storage is unavailable; retry later" })))
      : problemResponse(PROBLEMS["ServiceUnavailable"]!, "The database is not reachable; retry later", { "retry-after": String(STORAGE_RETRY_AFTER_SECONDS) })))
  }
  if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError") {
    const tooLarge = (error.reason as { reason?: string }).reason === "BodyTooLarge"
    return problemResponse(PROBLEMS[tooLarge ? "PayloadTooLarge" : "InvalidRequestBody"]!)
  }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  const entry = tag === undefined ? undefined : PROBLEMS[tag]
  if (entry) {
    const e = error as { detail?: string; retryAfterSeconds?: number; allow?: ReadonlyArray<string>; wwwAuthenticate?: string }
    const headers: Record<string, string> = {}
    if (e.retryAfterSeconds !== undefined) headers["retry-after"] = String(Math.max(1, Math.ceil(e.retryAfterSeconds)))
    // Every 503 says when to retry (RFC 9110 10.2.3): /readyz, logout, a provider outage.
    else if (entry.status === 503) headers["retry-after"] = String(STORAGE_RETRY_AFTER_SECONDS)
    if (e.allow !== undefined) headers["allow"] = e.allow.join(", ")
    // Bearer failures carry their RFC 6750 challenge (src/oidc/access-token/errors.ts).
    if (e.wwwAuthenticate !== undefined) headers["www-authenticate"] = e.wwwAuthenticate
    return problemResponse(entry, e.detail, headers)
  }
  return Effect.logError("unhandled failure", cause).pipe(
    Effect.andThen(problemResponse({ status: 500, code: "internal_error", title: "Internal server error" })))
}

/** Each surface's routes, handed in by the composition root's route table (src/routes.ts). */
export interface SurfaceRoutes {
  readonly management: ReadonlyArray<Route>
  readonly issuer: ReadonlyArray<Route>
  readonly interaction: ReadonlyArray<Route>
  /**
   * Issuer paths (under `/e/{environment_id}`) whose every answer carries the any-origin CORS
   * header, the failures before routing included (src/http/cors/any-origin.ts).
   */
  readonly issuerAnyOriginPaths: ReadonlySet<string>
}

export const makeHttpApp = (routes: SurfaceRoutes) => Effect.gen(function* () {
  const config = yield* Config
  const tenancy = yield* Tenancy
  const sql = yield* SqlClient.SqlClient
  const metrics = yield* CurrentMetrics
  const forwardedButUntrusted = untrustedForwardingDetector(config.trustProxy)
  const management = makeSurface(routes.management)
  const issuer = makeSurface(routes.issuer)
  const interaction = makeSurface(routes.interaction)

  const health = (path: string, surface: string) => {
    // The Prometheus endpoint lives on the Management host unless METRICS_PORT moves it away.
    if (path === "/metrics" && surface === "management" && config.metricsPort === undefined) return metricsEndpoint
    if (path === "/healthz") return Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok" }))
    if (path === "/readyz") {
      return sql`select count(*)::int as n from schema_migrations`.pipe(
        Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
        Effect.catch(() => Effect.fail(new ServiceUnavailable({ detail: "The database is not reachable" }))))
    }
    return undefined
  }

  const withEnvironment = (environmentId: string | undefined, via: "issuer" | "interaction", path: string,
    run: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, any>) => Effect.gen(function* () {
    const record = environmentId === undefined ? undefined : yield* tenancy.environment(environmentId)
    if (!record || record.status === "deleted") return yield* new NotFound({ detail: "Unknown Environment" })
    if (record.status === "suspended" && !SERVED_WHILE_SUSPENDED.has(path)) return yield* new EnvironmentSuspended()
    return yield* Effect.provideService(run, CurrentEnvironment, { record, urls: environmentUrls(config, record), via })
  })

  /** Routes the request; `matched` receives the surface and route template (logs, metrics, spans). */
  const dispatch = (request: HttpServerRequest.HttpServerRequest, matched: RequestRoute) => {
    const url = request.url
    const path = url.split("?")[0]!
    const target = classifyHost(config, request.headers["host"])
    if (!target) return Effect.fail(new NotFound({ detail: "Unknown host" }))
    matched.surface = target.surface
    // No identifier or parameter may hold U+0000, and Postgres cannot compare text that does
    // (a lookup would fail as a server error): refused before routing, in the endpoint's format.
    if (url.includes("%00")) {
      const detail = "The request URL must not contain the NUL character (%00)"
      return Effect.fail(OAUTH_ERROR_ENDPOINTS.test(path) ? new OAuthError({ error: "invalid_request", description: detail }) : new InvalidRequest({ detail }))
    }
    const healthResponse = health(path, target.surface)
    if (healthResponse) {
      matched.route = path
      return healthResponse
    }
    switch (target.surface) {
      case "management":
        return management.handle(request.method, url, matched)
      case "issuer": {
        const m = /^\/e\/([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(url)
        if (!m || !m[2]) return Effect.fail(new NotFound({}))
        matched.prefix = "/e/{environment_id}"
        const run = withEnvironment(m[1], "issuer", m[2], issuer.handle(request.method, m[2] + (m[3] ?? ""), matched))
        // Discovery and JWKS: `*` on every answer, the Environment lookup's failures included
        // (docs/decisions/rp-libraries.md, RP libraries: "CORS of discovery and JWKS").
        return routes.issuerAnyOriginPaths.has(m[2]) ? withAnyOrigin(run) : run
      }
      case "interaction":
        return withEnvironment(target.environmentId, "interaction", path, interaction.handle(request.method, url, matched))
      case "custom":
        return Effect.flatMap(tenancy.environmentByCustomHost(target.hostname), (record) =>
          withEnvironment(record?.id, "interaction", path, interaction.handle(request.method, url, matched)))
    }
  }

  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = yield* Clock.currentTimeNanos
    const requestId = newRequestId()
    const inbound = request.headers["x-request-id"]
    if (forwardedButUntrusted(request.headers)) yield* Effect.logWarning(UNTRUSTED_FORWARDING_WARNING)
    const responseHeaders: Record<string, string> = {}
    const info = { requestId, ip: clientIp(config.trustProxy, socketPeer(request), request.headers["x-forwarded-for"]), responseHeaders }
    const matched: RequestRoute = { surface: "unknown", prefix: "", route: undefined }
    const answered = yield* dispatch(request, matched).pipe(
      Effect.catchCause(renderFailure(request.url.split("?")[0]!, matched)),
      Effect.provideService(CurrentRequest, info),
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
      Effect.annotateLogs("request_id", requestId),
    )
    // Headers a service added for whatever the answer is (the Management RateLimit fields).
    const response = Object.keys(responseHeaders).length === 0 ? answered : HttpServerResponse.setHeaders(answered, responseHeaders)
    const duration = Number((yield* Clock.currentTimeNanos) - started) / 1e6
    // Unmatched paths share one label: raw paths would let any caller mint new series.
    const route = matched.route === undefined ? "unmatched" : matched.prefix + matched.route
    const status = String(response.status)
    const labels = { surface: matched.surface, method: request.method, route, status }
    metrics.httpRequests.inc(labels)
    metrics.httpDuration.observe(labels, duration / 1000)
    // The server span (present only when tracing is on) learns the route template it matched.
    const span = yield* Effect.serviceOption(Tracer.ParentSpan)
    if (Option.isSome(span) && span.value._tag === "Span") {
      span.value.attribute("http.route", route)
      span.value.attribute("app.request_id", requestId)
    }
    if (config.logRequests) {
      const traceId = Option.isSome(span) ? span.value.traceId : Option.getOrUndefined(Option.map(HttpTraceContext.fromHeaders(request.headers), (s) => s.traceId))
      logRequest(config, { at: yield* Clock.currentTimeMillis, requestId, inbound, traceId, method: request.method, host: request.headers["host"], surface: matched.surface, route, url: request.url, status: response.status, duration, limit: matched.limit })
    }
    return HttpServerResponse.setHeader(response, "x-request-id", requestId)
  }) as Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
})

/** What the dispatcher learned of a request: its surface and the matched route template. */
interface RequestRoute extends MatchedRoute {
  surface: string
  /** Prepended to the surface's template (the issuer's `/e/{environment_id}`). */
  prefix: string
  /** The limit that refused the request with 429, if one did (logged). */
  limit?: string
}
