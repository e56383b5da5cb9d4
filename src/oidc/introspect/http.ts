import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../http/current-environment.js"
import { route } from "../../http/route.js"
import { anyAudience, verifyAccessToken } from "../access-token/verify.js"
import { looksLikeRefreshToken } from "../refresh/token-format.js"
import { failuresAsServerError, invalidRequest } from "../token/errors.js"
import { readParams } from "../token/params.js"
import { NO_STORE } from "../token/response.js"
import { introspectionCallerAllowed } from "./caller.js"

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
  const allowed = yield* introspectionCallerAllowed(env.record, params.value).pipe(failuresAsServerError)
  if (!allowed) return inactive()
  const token = yield* params.value.one("token").pipe(Effect.orElseSucceed(() => undefined))
  if (token === undefined) return yield* invalidRequest("token is required")
  if (looksLikeRefreshToken(token)) return inactive()
  const verified = yield* verifyAccessToken(token, { environmentId: env.record.id, issuer: env.urls.issuer, audience: anyAudience }).pipe(
    Effect.catchTag("AccessTokenRejected", () => Effect.succeed(undefined)))
  if (!verified) return inactive()
  const c = verified.claims
  return HttpServerResponse.jsonUnsafe({
    active: true,
    scope: c.scope,
    client_id: c.client_id,
    token_type: "Bearer",
    exp: c.exp,
    iat: c.iat,
    sub: c.sub,
    aud: verified.rawAud,
    iss: c.iss,
    jti: c.jti,
    sid: c.sid,
    auth_time: c.auth_time,
    amr: c.amr,
    acr: c.acr,
  }, { headers: NO_STORE })
}).pipe(Effect.withSpan("oidc.introspect"))

export const introspectionRoutes = [
  route("POST", "/oauth2/introspect", introspectionEndpoint),
]
