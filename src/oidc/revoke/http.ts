import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { route } from "../../http/route.js"
import { constantTimeEqual, sha256Hex } from "../../platform/crypto.js"
import { generationHash } from "../refresh/repo.js"
import { revokeFamilyByToken } from "../refresh/service.js"
import { parseRefreshToken } from "../refresh/token-format.js"
import { failuresAsServerError, invalidRequest } from "../token/errors.js"
import { presentedClient } from "../token/client-auth.js"
import { readParams } from "../token/params.js"
import { limitOAuthRequest } from "../token/rate-limit.js"
import { NO_STORE } from "../token/response.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * POST /oauth2/revoke (spec: Revoke; RFC 7009). No client authentication. The token's
 * format is detected whatever `token_type_hint` says: a refresh token proven by its
 * generation's secret revokes its whole family; unknown, malformed and access tokens get
 * 200 `{}` (access tokens are not denylisted). Storage failure is 503 server_error.
 */
export const revocationEndpoint = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const params = yield* readParams
  // No client authentication here, but a client that presents itself (Basic or client_id) is
  // counted under its own budget.
  const presented = yield* presentedClient(params).pipe(Effect.option)
  yield* limitOAuthRequest("revoke", env.record.id, presented._tag === "Some" ? presented.value.clientId : undefined)
  const token = yield* params.one("token")
  if (token === undefined) return yield* invalidRequest("token is required")
  const refresh = parseRefreshToken(token)
  if (refresh) {
    const hash = yield* generationHash(env.record.id, refresh.familyId, refresh.generation)
    if (hash !== undefined && constantTimeEqual(sha256Hex(refresh.secret), hash)) {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* revokeFamilyByToken(env.record.id, refresh.familyId, now)
    }
  }
  return HttpServerResponse.jsonUnsafe({}, { headers: NO_STORE })
}).pipe(failuresAsServerError, withCallSpan("oidc.revoke"))

export const revocationRoutes = [route("POST", "/oauth2/revoke", revocationEndpoint)]
