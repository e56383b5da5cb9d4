import { ByteSize, Cause, Clock, Effect, Option, Tracer } from "effect"
import {
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse,
  HttpTraceContext,
} from "effect/http"
import { SqlClient } from "effect/sql"
import { Config } from "../platform/config.js"
import { newRequestId } from "../platform/request-id.js"
import { CurrentRequest } from "../platform/request-context.js"
import { clientIp, UNTRUSTED_FORWARDING_WARNING, untrustedForwardingDetector } from "../platform/trust-proxy.js"
import { Tenancy } from "../tenancy/service.js"
import { environmentUrls } from "../tenancy/urls.js"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import {
  EnvironmentSuspended,
  InvalidRequest,
  NotFound,
  OAuthError,
  RateLimited,
  ServiceUnavailable,
} from "./errors.js"
import { isStorageUnavailable } from "./storage-failure.js"
import { classifyHost } from "./hosts.js"
import { logRequest } from "./log.js"
import {
  isProblemTag,
  oauthErrorResponse,
  type Refusal,
  oauthRateLimitedResponse,
  PROBLEMS,
  type ProblemEntry,
  problemResponse,
  STORAGE_RETRY_AFTER_SECONDS,
} from "./problems.js"
import { MAX_BODY_BYTES } from "./route.js"
import { CurrentMetrics } from "../platform/observability/metrics.js"
import { logLevelEnabled } from "../platform/observability/log-level.js"
import { metricsEndpoint } from "./metrics.js"
import { type MatchedRoute, makeSurface } from "./surface.js"
import { withAnyOrigin } from "./cors/any-origin.js"
import type { Route } from "./route.js"
import type { BrowserFailurePages } from "./browser-failure.js"

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
  if (error instanceof OAuthError) {
    matched.refusal = { code: error.error, detail: error.description }
    return Effect.succeed(oauthErrorResponse(error))
  }
  if (error instanceof RateLimited) {
    matched.limit = error.limit
    matched.refusal = { code: "temporarily_unavailable", detail: undefined }
    if (OAUTH_RATE_LIMITED_PATH.test(path))
      return Effect.succeed(oauthRateLimitedResponse(error.limit, error.retryAfterSeconds))
    return problemResponse(
      PROBLEMS.RateLimited,
      undefined,
      { "retry-after": String(Math.max(1, Math.ceil(error.retryAfterSeconds))) },
      { limit: error.limit },
    )
  }
  if (isStorageUnavailable(error)) {
    matched.refusal = { code: "server_error", detail: undefined }
    return Effect.logWarning("storage unavailable", cause).pipe(
      Effect.andThen(
        OAUTH_ERROR_PATH.test(path)
          ? Effect.succeed(
              oauthErrorResponse(
                new OAuthError({ error: "server_error", description: "Storage is unavailable; retry later" }),
              ),
            )
          : problemResponse(PROBLEMS.ServiceUnavailable, "The database is not reachable; retry later", {
              "retry-after": String(STORAGE_RETRY_AFTER_SECONDS),
            }),
      ),
    )
  }
  if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError") {
    const tooLarge = (error.reason as { reason?: string }).reason === "BodyTooLarge"
    const entry = tooLarge ? PROBLEMS.PayloadTooLarge : PROBLEMS.InvalidRequestBody
    matched.refusal = { code: entry.code, detail: undefined }
    return problemResponse(entry)
  }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  if (tag !== undefined && isProblemTag(tag)) {
    const entry: ProblemEntry = PROBLEMS[tag]
    const e = error as {
      detail?: string
      retryAfterSeconds?: number
      allow?: ReadonlyArray<string>
      wwwAuthenticate?: string
      errors?: ReadonlyArray<unknown>
    }
    const headers: Record<string, string> = {}
    if (e.retryAfterSeconds !== undefined) headers["retry-after"] = String(Math.max(1, Math.ceil(e.retryAfterSeconds)))
    // Every 503 says when to retry (RFC 9110 10.2.3): /readyz, logout, a provider outage.
    else if (entry.status === 503) headers["retry-after"] = String(STORAGE_RETRY_AFTER_SECONDS)
    if (e.allow !== undefined) headers["allow"] = e.allow.join(", ")
    // Bearer failures carry their RFC 6750 challenge (src/oidc/access-token/errors.ts).
    if (e.wwwAuthenticate !== undefined) headers["www-authenticate"] = e.wwwAuthenticate
    matched.refusal = { code: entry.code, detail: e.detail }
    // Every invalid field of a body, as the `errors` extension member (src/http/field-errors.ts).
    return problemResponse(entry, e.detail, headers, e.errors !== undefined ? { errors: e.errors } : undefined)
  }
  return Effect.logError("unhandled failure", cause).pipe(
    Effect.andThen(problemResponse({ status: 500, code: "internal_error", title: "Internal server error" })),
  )
}

/**
 * The failure of a browser-facing issuer path as a page: the JSON answer (already logged and
 * counted by `renderFailure`) gives the status and Retry-After, and the refusal `renderFailure`
 * chose gives the code; the detail comes only from our own refusals, never from a driver's error.
 */
const asBrowserPage = (
  pages: BrowserFailurePages,
  matched: RequestRoute,
  answer: HttpServerResponse.HttpServerResponse,
) => {
  const retryAfter = answer.headers["retry-after"]
  return pages.render({
    status: answer.status,
    code: matched.refusal?.code ?? "server_error",
    detail: matched.refusal?.detail,
    retryAfterSeconds: retryAfter === undefined ? undefined : Number(retryAfter),
  })
}

/** Each surface's routes, handed in by the composition root's route table (src/routes.ts). */
export interface SurfaceRoutes {
  readonly management: ReadonlyArray<Route>
  readonly issuer: ReadonlyArray<Route>
  /** Routes of the issuer host itself, outside every Environment (`/`, `/favicon.ico`). */
  readonly issuerHost?: ReadonlyArray<Route>
  readonly interaction: ReadonlyArray<Route>
  /**
   * Issuer paths (under `/e/{environment_id}`) whose every answer carries the any-origin CORS
   * header, the failures before routing included (src/http/cors/any-origin.ts).
   */
  readonly issuerAnyOriginPaths: ReadonlySet<string>
  /**
   * Issuer paths a person's browser visits: every failure there, the ones refused before
   * routing, by storage or by a rate limit included, is answered as a page with the status and
   * Retry-After of the JSON answer it replaces (docs/decisions/rp-libraries.md, "Authorize
   * refusals reaching the client"), never a JSON body whatever the Accept header.
   */
  readonly issuerBrowserPages: BrowserFailurePages
}

export const makeHttpApp = (routes: SurfaceRoutes) =>
  Effect.gen(function* () {
    const config = yield* Config
    const tenancy = yield* Tenancy
    const sql = yield* SqlClient.SqlClient
    const metrics = yield* CurrentMetrics
    const forwardedButUntrusted = untrustedForwardingDetector(config.trustProxy)
    // Request lines are info lines: LOG_LEVEL=warn or error leaves them out too.
    const logRequests = config.logRequests && logLevelEnabled(config.logLevel, "info")
    const management = makeSurface(routes.management)
    const issuer = makeSurface(routes.issuer)
    const issuerHost = makeSurface(routes.issuerHost ?? [])
    const interaction = makeSurface(routes.interaction)
    const browserPages = routes.issuerBrowserPages
    const isBrowserPagePath = (path: string) => {
      const within = /^\/e\/[^/]+(\/.*)$/.exec(path)?.[1]
      return within !== undefined && browserPages.paths.has(within)
    }

    /**
     * The probes answer on every Host (a container's or load balancer's probe names whatever
     * host it likes, `localhost` usually) and reveal nothing beyond ok / not ready.
     */
    const probe = (path: string) => {
      if (path === "/healthz") return Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok" }))
      if (path === "/readyz") {
        // Not a table: `npm run migrate` holds schema_migrations exclusively while it runs, and the
        // running servers must stay ready meanwhile (decisions: "Migrations are a step of their own").
        return sql`select 1`.pipe(
          Effect.as(HttpServerResponse.jsonUnsafe({ status: "ready" })),
          Effect.catch(() => Effect.fail(new ServiceUnavailable({ detail: "The database is not reachable" }))),
        )
      }
      return undefined
    }
    // The Prometheus endpoint on the Management host: never open there in production
    // (docs/decisions/observability.md): METRICS_PORT moves it away, else METRICS_TOKEN guards it.
    const metricsOnManagementHost =
      config.metricsPort === undefined && (!config.production || config.metricsToken !== undefined)

    const withEnvironment = (
      environmentId: string | undefined,
      via: "issuer" | "interaction",
      path: string,
      // biome-ignore lint/suspicious/noExplicitAny: a route list mixes routes that need different services; the app layer provides them all
      run: Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal, any>,
    ) =>
      Effect.gen(function* () {
        const record = environmentId === undefined ? undefined : yield* tenancy.environment(environmentId)
        if (!record || record.status === "deleted") return yield* new NotFound({ detail: "Unknown Environment" })
        if (record.status === "suspended" && !SERVED_WHILE_SUSPENDED.has(path)) return yield* new EnvironmentSuspended()
        return yield* Effect.provideService(run, CurrentEnvironment, {
          record,
          urls: environmentUrls(config, record),
          via,
        })
      })

    /** Routes the request; `matched` receives the surface and route template (logs, metrics, spans). */
    const dispatch = (request: HttpServerRequest.HttpServerRequest, matched: RequestRoute) => {
      const url = request.url
      const path = url.split("?")[0]!
      const probeResponse = probe(path)
      if (probeResponse) {
        matched.surface = "probe"
        matched.route = path
        return probeResponse
      }
      const target = classifyHost(config, request.headers["host"])
      if (!target) return Effect.fail(new NotFound({ detail: "Unknown host" }))
      matched.surface = target.surface
      // No identifier or parameter may hold U+0000, and Postgres cannot compare text that does
      // (a lookup would fail as a server error): refused before routing, in the endpoint's format.
      if (url.includes("%00")) {
        const detail = "The request URL must not contain the NUL character (%00)"
        return Effect.fail(
          OAUTH_ERROR_ENDPOINTS.test(path)
            ? new OAuthError({ error: "invalid_request", description: detail })
            : new InvalidRequest({ detail }),
        )
      }
      if (path === "/metrics" && target.surface === "management" && metricsOnManagementHost) {
        matched.route = path
        return metricsEndpoint
      }
      switch (target.surface) {
        case "management":
          return management.handle(request.method, url, matched)
        case "issuer": {
          const m = /^\/e\/([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(url)
          if (!m?.[2]) return m ? Effect.fail(new NotFound({})) : issuerHost.handle(request.method, url, matched)
          matched.prefix = "/e/{environment_id}"
          const run = withEnvironment(m[1], "issuer", m[2], issuer.handle(request.method, m[2] + (m[3] ?? ""), matched))
          // Discovery and JWKS: `*` on every answer, the Environment lookup's failures included
          // (docs/decisions/rp-libraries.md, RP libraries: "CORS of discovery and JWKS").
          return routes.issuerAnyOriginPaths.has(m[2]) ? withAnyOrigin(run) : run
        }
        case "interaction":
          return withEnvironment(
            target.environmentId,
            "interaction",
            path,
            interaction.handle(request.method, url, matched),
          )
        case "custom":
          return Effect.flatMap(tenancy.environmentByCustomHost(target.hostname), (record) =>
            withEnvironment(record?.id, "interaction", path, interaction.handle(request.method, url, matched)),
          )
      }
    }

    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = yield* Clock.currentTimeNanos
      const requestId = newRequestId()
      const inbound = request.headers["x-request-id"]
      if (forwardedButUntrusted(request.headers)) yield* Effect.logWarning(UNTRUSTED_FORWARDING_WARNING)
      const responseHeaders: Record<string, string> = {}
      const info = {
        requestId,
        ip: clientIp(config.trustProxy, socketPeer(request), request.headers["x-forwarded-for"]),
        responseHeaders,
      }
      const matched: RequestRoute = { surface: "unknown", prefix: "", route: undefined }
      const path = request.url.split("?")[0]!
      const answered = yield* dispatch(request, matched).pipe(
        Effect.catchCause((cause) =>
          renderFailure(
            path,
            matched,
          )(cause).pipe(
            Effect.map((answer) =>
              matched.surface === "issuer" && isBrowserPagePath(path)
                ? asBrowserPage(browserPages, matched, answer)
                : answer,
            ),
          ),
        ),
        Effect.provideService(CurrentRequest, info),
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
        Effect.annotateLogs("request_id", requestId),
      )
      // Headers a service added for whatever the answer is (the Management RateLimit fields).
      const response =
        Object.keys(responseHeaders).length === 0 ? answered : HttpServerResponse.setHeaders(answered, responseHeaders)
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
      if (logRequests) {
        const traceId = Option.isSome(span)
          ? span.value.traceId
          : Option.getOrUndefined(Option.map(HttpTraceContext.fromHeaders(request.headers), (s) => s.traceId))
        logRequest(config, {
          at: yield* Clock.currentTimeMillis,
          requestId,
          inbound,
          traceId,
          method: request.method,
          host: request.headers["host"],
          surface: matched.surface,
          route,
          url: request.url,
          status: response.status,
          duration,
          limit: matched.limit,
        })
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
  /** The code (and our own detail) of the refusal answered, for a page that replaces the JSON. */
  refusal?: { readonly code: string; readonly detail: string | undefined }
}
