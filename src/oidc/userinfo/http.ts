import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest } from "../../http/errors.js"
import { route } from "../../http/route.js"
import { bearerToken } from "../access-token/bearer.js"
import { rememberAnswer, userinfoAnswerKey } from "../access-token/remembered-answers.js"
import { anyAudience, verifyAccessToken } from "../access-token/verify.js"
import { userinfoClaims } from "./claims.js"
import { USERINFO_TEMPLATE } from "./from-memory.js"
import { withCallSpan } from "../../platform/observability/span.js"

const REALM = "userinfo"

/**
 * GET and POST /oauth2/userinfo (spec: UserInfo; OIDC Core 5.3, 5.3.1: both methods, the same
 * answer; the access token in the Authorization header, a POST body is not read). Any valid `openid` access token of
 * this issuer (decisions: UserInfo accepts any audience), with the live checks of the
 * shared verifier. Always `sub`; `name`, `locale`, `updated_at` with `profile`; `email`,
 * `email_verified` with `email`; values are the user's current ones.
 */
export const userinfoEndpoint = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const token = yield* bearerToken(REALM)
  const { claims, live, key } = yield* verifyAccessToken(token, {
    environmentId: env.record.id,
    issuer: env.urls.issuer,
    audience: anyAudience,
    realm: REALM,
  })
  if (!claims.scopes.includes("openid")) {
    return yield* new InvalidRequest({ detail: "The access token does not include the openid scope" })
  }
  // Replayed from memory for the same token while nothing behind it changes (docs/decisions/performance.md).
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* rememberAnswer(userinfoAnswerKey(request.url, request.headers["authorization"]!), {
    environmentId: env.record.id,
    userId: claims.sub,
    sessionId: claims.sid,
    live,
    validUntilMs: claims.exp * 1000,
    // On the issuer host only: the listener computes answers there alone.
    ...(env.via === "issuer" && { template: { route: USERINFO_TEMPLATE, issuer: env.urls.issuer, ...key } }),
  })
  return HttpServerResponse.jsonUnsafe(userinfoClaims(claims, live), {
    headers: { "cache-control": "no-store", pragma: "no-cache" },
  })
}).pipe(withCallSpan("oidc.userinfo"))

export const userinfoRoutes = [
  route("GET", "/oauth2/userinfo", userinfoEndpoint),
  route("POST", "/oauth2/userinfo", userinfoEndpoint),
]
