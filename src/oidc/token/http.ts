import { Effect } from "effect"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { route } from "../../http/route.js"
import { presentedClient } from "./client-auth.js"
import { failuresAsServerError, invalidRequest } from "./errors.js"
import { authorizationCodeGrant } from "./grant-authorization-code.js"
import { refreshTokenGrant } from "./grant-refresh-token.js"
import { readParams } from "./params.js"
import { limitOAuthRequest } from "./rate-limit.js"
import { tokenResponse } from "./response.js"
import { countWith } from "../../platform/observability/metrics.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Spec, Token: the two grants; every other grant_type is invalid_request (spec, Errors). */
const GRANTS = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
} as const

/**
 * POST /oauth2/token. The steps, in protocol order: parse the form or JSON body, check
 * grant_type, read the client credentials, run the grant (which authenticates the client
 * first, from the row it reads with its own state), answer no-store JSON.
 */
export const tokenEndpoint = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const params = yield* readParams
  const grantType = yield* params.required("grant_type")
  const grant = Object.hasOwn(GRANTS, grantType) ? GRANTS[grantType as keyof typeof GRANTS] : undefined
  if (!grant) return yield* invalidRequest(`Unsupported grant_type: use authorization_code or refresh_token`)
  const presented = yield* presentedClient(params)
  // Before the grant reads or consumes anything: a refused request changes nothing.
  yield* limitOAuthRequest("token", env.record.id, presented.clientId)
  const body = yield* grant({ params, presented, environmentId: env.record.id, issuer: env.urls.issuer })
  yield* countWith((m) => m.tokensIssued.inc({ grant: grantType }))
  return tokenResponse(body)
}).pipe(failuresAsServerError, withCallSpan("oidc.token"))

export const tokenRoutes = [route("POST", "/oauth2/token", tokenEndpoint)]
