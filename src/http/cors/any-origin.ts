import { Effect } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { route, type Route } from "../route.js"

/**
 * CORS of public documents: answers that are public, unauthenticated and the same for every
 * caller, so any page may read them (the issuer's discovery and JWKS; docs/decisions/rp-libraries.md, RP
 * libraries, "CORS of discovery and JWKS": a browser library such as oidc-client-ts in a SPA
 * starts by fetching discovery). The answer is `Access-Control-Allow-Origin: *` without
 * credentials (Fetch standard: `*` never goes with credentials, so no cookie or Authorization
 * header is ever read cross-origin here), and an OPTIONS preflight is answered 204 for GET.
 * The client-specific rules (src/http/cors/client-origins.ts) do not apply: these documents
 * reveal nothing about any client. Which paths are public documents is the route table's
 * choice (src/routes.ts).
 */
export const ANY_ORIGIN_ALLOW_METHODS = "GET, HEAD, OPTIONS"
const MAX_AGE_SECONDS = 600

/** A requested header list we echo in a preflight: field names separated by commas (RFC 9110 5.1). */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/

/**
 * Gives EVERY answer of a public-document request the any-origin header: the 200 and the 304,
 * and the failures too, including those before any route runs (unknown Environment 404, a 503
 * when the Environment cannot be read). Without it a browser library sees an opaque network
 * error instead of the status (Fetch standard: a CORS failure hides the response). The issuer
 * dispatch (src/http/app.ts) wraps the request in this before the Environment lookup; the
 * pre-response handler reaches the error bodies rendered afterwards.
 */
export const withAnyOrigin = <A, E, R>(run: Effect.Effect<A, E, R>) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "access-control-allow-origin", "*")),
  ).pipe(Effect.andThen(run))

const preflight = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requested = request.headers["access-control-request-headers"]?.trim()
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      allow: ANY_ORIGIN_ALLOW_METHODS,
      "access-control-allow-origin": "*",
      "access-control-allow-methods": ANY_ORIGIN_ALLOW_METHODS,
      ...(requested !== undefined && HEADER_LIST.test(requested) ? { "access-control-allow-headers": requested } : {}),
      "access-control-max-age": String(MAX_AGE_SECONDS),
      vary: "Access-Control-Request-Headers",
    },
  })
})

/** Adds one OPTIONS preflight route per path (the any-origin header itself: `withAnyOrigin`). */
export const withAnyOriginPreflights = (routes: ReadonlyArray<Route>): Array<Route> => [
  ...routes,
  ...[...new Set(routes.map((r) => r.path))].map((path) => route("OPTIONS", path, preflight)),
]
