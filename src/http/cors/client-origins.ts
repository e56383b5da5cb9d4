import { Context, Effect } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { OriginNotAllowed } from "../errors.js"
import { route, type Route } from "../route.js"

/**
 * Client-based CORS, of the Public Authentication API and of the issuer's browser endpoints
 * (token, userinfo, revoke) (spec: CORS; docs/architecture.md, Decisions): a browser call needs
 * its page Origin registered exactly (string equality, no wildcard) in a client's
 * `allowed_origins`. A preflight passes when any active client of the Environment
 * registers the Origin; the real request is checked against its own client wherever the
 * request names one (`assertOriginAllowedForClient`). Requests without an Origin (native
 * apps, servers) and same-origin calls from the Interaction Domain (Hosted Login) pass.
 * No credentials mode: the API never reads cookies of a cross-origin caller. Which routes
 * get these rules, and how an Origin is looked up among the clients, the route table decides
 * (src/routes.ts): this file knows no feature.
 */

/** Is `origin` registered by any active client of the Environment (the preflight's check)? */
export type OriginRegistered<R> = (environmentId: string, origin: string) => Effect.Effect<boolean, never, R>

/** The cross-origin Origin of the current request, once it passed the Environment-wide check. */
export const CorsRequestOrigin = Context.Reference<string | undefined>("http/CorsRequestOrigin", {
  defaultValue: () => undefined,
})

export const CORS_ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
export const CORS_ALLOW_HEADERS = "Authorization, Content-Type, Idempotency-Key, X-Request-Id"
// WWW-Authenticate: browser code must read the Bearer (RFC 6750 3) and invalid_client
// (RFC 6749 5.2) challenges of /oauth2/token, /oauth2/userinfo, /oauth2/revoke and /me.
export const CORS_EXPOSE_HEADERS = "Retry-After, WWW-Authenticate, X-Request-Id"
export const CORS_MAX_AGE_SECONDS = 600

/**
 * Browser navigations are not CORS requests: an identity provider's `form_post` callback
 * arrives as a cross-site POST navigation carrying the provider's Origin.
 */
const isNavigation = (request: HttpServerRequest.HttpServerRequest, path: string) =>
  request.headers["sec-fetch-mode"] === "navigate" || /\/v1\/auth\/social\/[^/]+\/callback$/.test(path)

const pathOf = (url: string) => url.split("?")[0]!

/** Is this Origin allowed to call the Environment's Public API at all? */
const originAllowedInEnvironment = Effect.fnUntraced(function* <R>(registered: OriginRegistered<R>, origin: string) {
  const env = yield* CurrentEnvironment
  if (origin === env.urls.interactionOrigin) return true
  return yield* registered(env.record.id, origin)
})

/** The real request: headers on every response (errors included), and the Environment-wide Origin check. */
const withCors = Effect.fnUntraced(function* <R, R2>(registered: OriginRegistered<R2>, handler: Route<R>["handler"]) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const origin = request.headers["origin"]
  const crossOrigin =
    origin !== undefined && origin !== env.urls.interactionOrigin && !isNavigation(request, pathOf(request.url))
  if (crossOrigin && !(yield* originAllowedInEnvironment(registered, origin))) return yield* new OriginNotAllowed()
  // A pre-response handler reaches every response of this request, including the error
  // bodies rendered later by src/http/app.ts, so a browser can read those too.
  yield* HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(
      HttpServerResponse.setHeaders(response, {
        vary: "Origin",
        "cache-control": response.headers["cache-control"] ?? "no-store",
        ...(crossOrigin
          ? { "access-control-allow-origin": origin, "access-control-expose-headers": CORS_EXPOSE_HEADERS }
          : {}),
      }),
    ),
  )
  return yield* crossOrigin ? Effect.provideService(handler, CorsRequestOrigin, origin) : handler
})

/** OPTIONS preflight: 204 with the allowed methods and headers, or 403 `origin_not_allowed`. */
const preflight = Effect.fnUntraced(function* <R>(registered: OriginRegistered<R>, allow: string) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const origin = request.headers["origin"]
  if (origin === undefined) return HttpServerResponse.empty({ status: 204, headers: { allow } })
  if (!(yield* originAllowedInEnvironment(registered, origin))) return yield* new OriginNotAllowed()
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": CORS_ALLOW_METHODS,
      "access-control-allow-headers": CORS_ALLOW_HEADERS,
      "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
      vary: "Origin",
      "cache-control": "no-store",
    },
  })
})

/**
 * Wraps every route in the CORS rules and adds one OPTIONS route per path, so a preflight is
 * answered here rather than by the router's 405. Applied in src/routes.ts, to the whole Public
 * API list and to the issuer's browser endpoints.
 */
export const withClientCors = <R>(registered: OriginRegistered<R>, routes: ReadonlyArray<Route>): Array<Route> => {
  const wrapped = routes.map((r) => ({ ...r, handler: withCors(registered, r.handler) }))
  const methodsByPath = new Map<string, Set<string>>()
  for (const r of routes) methodsByPath.set(r.path, (methodsByPath.get(r.path) ?? new Set()).add(r.method))
  const preflights = [...methodsByPath]
    .filter(([, methods]) => !methods.has("OPTIONS"))
    .map(([path, methods]) =>
      route("OPTIONS", path as `/${string}`, preflight(registered, [...methods, "OPTIONS"].join(", "))),
    )
  return [...wrapped, ...preflights]
}

/**
 * The real request's Origin must be registered by the client the request names (the
 * `client_id` of /config and POST /auth/transactions, or the client of the transaction).
 */
export const assertOriginAllowedForClient = Effect.fnUntraced(function* (client: {
  readonly allowed_origins: ReadonlyArray<string>
}) {
  const origin = yield* CorsRequestOrigin
  if (origin !== undefined && !client.allowed_origins.includes(origin)) return yield* new OriginNotAllowed()
})
