import { Cause, Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest, ServiceUnavailable } from "../../http/errors.js"
import { RouteMatch, route } from "../../http/route.js"
import { revokeSessionAndFamilies } from "../refresh/service.js"
import { clientById } from "../token/client-repo.js"
import { fromQuery, type OAuthParams, readParams } from "../token/params.js"
import { verifyIdTokenHint } from "./id-token-hint.js"
import { logoutRedirectLocation } from "./redirect.js"
import { withCallSpan } from "../../platform/observability/span.js"

const refuse = (detail: string) => new InvalidRequest({ detail })

/**
 * GET|POST /oauth2/logout (spec: Logout; OpenID RP-Initiated Logout 1.0). Steps: read the
 * parameters; check `id_token_hint` (optional, expired accepted, signature and issuer
 * checked); pick the client (`client_id`, else the hint's `aud`); require
 * `post_logout_redirect_uri` byte-equal to one of the client's registered values; end the
 * hint's session (`sid`) and its refresh families (`session.revoked`, reason user_logout);
 * 302 to the URI with `state` added. Every refusal is 400 invalid_request as Problem
 * Details and no redirect (docs/decisions/login-and-tokens.md).
 */
const logout = Effect.fnUntraced(
  function* <R>(readParameters: Effect.Effect<OAuthParams, InvalidRequest, R>) {
    const env = yield* CurrentEnvironment
    const sql = yield* SqlClient.SqlClient
    const params = yield* readParameters
    const one = (name: string) =>
      params.one(name).pipe(Effect.mapError(() => refuse(`${name} must not be sent more than once`)))
    const hintText = yield* one("id_token_hint")
    const redirectUri = yield* one("post_logout_redirect_uri")
    const clientIdParam = yield* one("client_id")
    const state = yield* one("state")
    if (redirectUri === undefined) return yield* refuse("post_logout_redirect_uri is required")

    const hint = hintText === undefined ? undefined : yield* verifyIdTokenHint(env.record.id, env.urls.issuer, hintText)
    if (hintText !== undefined && !hint) return yield* refuse("id_token_hint is not a valid ID token of this issuer")
    if (hint && clientIdParam !== undefined && !hint.aud.includes(clientIdParam)) {
      return yield* refuse("client_id is not the audience of id_token_hint")
    }
    const clientId = clientIdParam ?? (hint?.aud.length === 1 ? hint.aud[0] : undefined)
    if (clientId === undefined)
      return yield* refuse("client_id or id_token_hint is required to check post_logout_redirect_uri")
    const client = yield* clientById(env.record.id, clientId)
    if (client?.status !== "active") return yield* refuse("Unknown or disabled client")
    if (!client.post_logout_redirect_uris.includes(redirectUri)) {
      return yield* refuse("post_logout_redirect_uri is not registered for this client")
    }

    if (hint?.sid !== undefined) {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sql.withTransaction(
        revokeSessionAndFamilies({
          environmentId: env.record.id,
          userId: hint.sub,
          sessionId: hint.sid,
          reason: "user_logout",
          familyReason: "user_logout",
          actor: { type: "end_user", id: hint.sub },
          now,
          audit: { action: "session.logout", details: { client_id: client.id } },
        }),
      )
    }
    return HttpServerResponse.empty({
      status: 302,
      headers: { location: logoutRedirectLocation(redirectUri, state), "cache-control": "no-store" },
    })
  },
  Effect.catchCause((cause): Effect.Effect<never, InvalidRequest | ServiceUnavailable> => {
    const error = Cause.squash(cause)
    if (error instanceof InvalidRequest) return Effect.fail(error)
    return Effect.logError("logout failed", cause).pipe(
      Effect.andThen(Effect.fail(new ServiceUnavailable({ detail: "Logout could not be completed; retry later" }))),
    )
  }),
  withCallSpan("oidc.logout"),
)

const fromRequestQuery = Effect.map(Effect.service(RouteMatch), (m) => fromQuery(m.query))
const fromRequestBody = readParams.pipe(Effect.mapError((e) => refuse(e.description)))

export const logoutRoutes = [
  route("GET", "/oauth2/logout", logout(fromRequestQuery)),
  route("POST", "/oauth2/logout", logout(fromRequestBody)),
]
