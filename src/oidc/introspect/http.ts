import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { bodyText, route } from "../../http/route.js"
import { introspectionAnswerKey, rememberAnswer } from "../access-token/remembered-answers.js"
import { anyAudience, verifyAccessToken } from "../access-token/verify.js"
import { looksLikeRefreshToken } from "../refresh/token-format.js"
import { failuresAsServerError, invalidRequest } from "../token/errors.js"
import { readParams } from "../token/params.js"
import { NO_STORE } from "../token/response.js"
import { introspectionCaller, limitIntrospection } from "./caller.js"
import { activeIntrospection } from "./claims.js"
import { INTROSPECTION_TEMPLATE } from "./from-memory.js"
import { withCallSpan } from "../../platform/observability/span.js"

const inactive = () => HttpServerResponse.jsonUnsafe({ active: false }, { headers: NO_STORE })

/**
 * POST /oauth2/introspect (spec: Introspect; RFC 7662). Callers that are not allowed, and
 * tokens that are invalid or inactive, get 200 `{active:false}`. Refresh tokens are never
 * active (whatever `token_type_hint` says). An access token is active when the shared
 * verifier accepts it: signature, expiry, issuer, then user status, security version and
 * session. Any audience is accepted (a resource server asks about its own tokens).
 */
export const introspectionEndpoint = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const params = yield* readParams.pipe(Effect.option)
  if (params._tag === "None") return inactive()
  // Before the caller is authenticated or the token read: a throttled introspection is a 429
  // (OAuth body, Retry-After), never `{active:false}`, which would call a good token dead; it
  // is decided before the token is looked at, so it says nothing about it (decisions: "Write
  // limits: every cheap-to-send write is counted per address").
  yield* limitIntrospection(env.record.id, params.value).pipe(failuresAsServerError)
  const caller = yield* introspectionCaller(env.record, params.value).pipe(failuresAsServerError)
  if (!caller) return inactive()
  const token = yield* params.value.one("token").pipe(Effect.orElseSucceed(() => undefined))
  if (token === undefined) return yield* invalidRequest("token is required")
  if (looksLikeRefreshToken(token)) return inactive()
  const verified = yield* verifyAccessToken(token, {
    environmentId: env.record.id,
    issuer: env.urls.issuer,
    audience: anyAudience,
  }).pipe(Effect.catchTag("AccessTokenRejected", () => Effect.succeed(undefined)))
  if (!verified) return inactive()
  const c = verified.claims
  if ("client" in caller) {
    // Replayed from memory for the same caller, token and body while nothing behind it changes.
    const request = yield* HttpServerRequest.HttpServerRequest
    const key = introspectionAnswerKey(
      request.url,
      request.headers["authorization"],
      request.headers["content-type"],
      yield* bodyText,
    )
    yield* rememberAnswer(key, {
      environmentId: env.record.id,
      userId: c.sub,
      sessionId: c.sid,
      live: verified.live,
      client: caller.client,
      validUntilMs: c.exp * 1000,
      // On the issuer host only: the listener computes answers there alone.
      ...(env.via === "issuer" && {
        template: { route: INTROSPECTION_TEMPLATE, issuer: env.urls.issuer, ...verified.key },
      }),
    })
  }
  return HttpServerResponse.jsonUnsafe(activeIntrospection(c, verified.rawAud), { headers: NO_STORE })
}).pipe(withCallSpan("oidc.introspect"))

export const introspectionRoutes = [route("POST", "/oauth2/introspect", introspectionEndpoint)]
