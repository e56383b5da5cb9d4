import { Effect } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { route, type Route } from "../http/route.js"

/**
 * CORS of the issuer's public documents, discovery and JWKS (issue 16). Both are public,
 * unauthenticated and the same for every caller, so any page may read them: a browser
 * library (oidc-client-ts in a SPA) starts by fetching discovery. The answer is
 * `Access-Control-Allow-Origin: *` without credentials (Fetch standard: `*` never goes with
 * credentials, so no cookie or Authorization header is ever read cross-origin here), and an
 * OPTIONS preflight is answered 204 for GET. The client-specific rules of the Public API
 * (src/login/cors) do not apply: these documents reveal nothing about any client.
 */
export const PUBLIC_DOCUMENT_ALLOW_METHODS = "GET, HEAD, OPTIONS"
const MAX_AGE_SECONDS = 600

/** A requested header list we echo in a preflight: field names separated by commas (RFC 9110 5.1). */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/

const withAnyOrigin = <R>(handler: Route<R>["handler"]) => Effect.gen(function* () {
  // Errors rendered later (src/http/app.ts) carry the header too, so a page can read them.
  yield* HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "access-control-allow-origin", "*")))
  return yield* handler
})

const preflight = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requested = request.headers["access-control-request-headers"]?.trim()
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      allow: PUBLIC_DOCUMENT_ALLOW_METHODS,
      "access-control-allow-origin": "*",
      "access-control-allow-methods": PUBLIC_DOCUMENT_ALLOW_METHODS,
      ...(requested !== undefined && HEADER_LIST.test(requested) ? { "access-control-allow-headers": requested } : {}),
      "access-control-max-age": String(MAX_AGE_SECONDS),
      vary: "Access-Control-Request-Headers",
    },
  })
})

/** Adds the any-origin header to each GET route and one OPTIONS preflight route per path. */
export const withPublicDocumentCors = (routes: ReadonlyArray<Route>): Array<Route> => [
  ...routes.map((r) => ({ ...r, handler: withAnyOrigin(r.handler) })),
  ...[...new Set(routes.map((r) => r.path))].map((path) => route("OPTIONS", path, preflight)),
]
