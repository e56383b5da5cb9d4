import { Context, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { OriginNotAllowed } from "../http/errors.js"
import type { Route } from "../http/route.js"
import { loginClient } from "../login/clients.js"
import { CorsRequestOrigin } from "../http/cors/client-origins.js"
import { UserUnavailable } from "../oidc/access-token/errors.js"
import { type AccessTokenClaims, audienceIncludes, verifyAccessToken } from "../oidc/access-token/verify.js"
import { type UserRow, userById } from "../users/repo.js"
import { BearerTokenMissing } from "./errors.js"
import { unavailableOnSqlError } from "./unavailable.js"
import { withCallSpan } from "../platform/observability/span.js"

// Authentication of the self-service `/me` routes (spec, Authentication: "/me endpoints:
// OIDC access token in Authorization: Bearer; ID tokens and Hosted Login cookies are not
// accepted"; /me rule 7; docs/architecture.md: /me accepts access tokens whose `aud` includes the issuer).
// Every /me route is wrapped in `withMe`, which provides `CurrentMe` to the handler.

export const ME_REALM = "me"

/** The caller of a /me route: a live access token, its user and the session behind `sid`. */
export interface Me {
  readonly claims: AccessTokenClaims
  readonly user: UserRow
  readonly userId: string
  readonly sessionId: string
  readonly clientId: string
  /** `auth_time` of the session (ms), which a refresh does not change. */
  readonly authTimeMs: number
}

export class CurrentMe extends Context.Service<CurrentMe, Me>()("me/CurrentMe") {}

/** Spec, /me rule 1 and Limits: a fresh session has `auth_time` within the last 5 minutes. */
export const FRESH_SESSION_MS = 5 * 60_000

/**
 * `Authorization: Bearer <token>`. No header, or another scheme: 401 `unauthorized` (nothing
 * that could be a token was sent). A Bearer value that is not token68: 401 `invalid_token`
 * from the verifier's shape checks.
 */
const bearer = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const header = request.headers["authorization"]
  const m = header === undefined ? null : /^Bearer +(\S*) *$/i.exec(header)
  if (!m || m[1] === "") {
    return yield* new BearerTokenMissing({
      detail:
        header === undefined
          ? "Send Authorization: Bearer <access token>"
          : "The Authorization header does not carry a Bearer access token",
      wwwAuthenticate: `Bearer realm="${ME_REALM}"`,
    })
  }
  return m[1]!
})

/**
 * Authenticates the request with the shared access-token verifier (src/oidc/access-token):
 * ES256 + `typ` at+jwt (an ID token is refused), this issuer, `aud` including the issuer,
 * not expired; then the live checks (user active, `sv` current, session neither revoked nor
 * expired). A database failure reading that state, or the client for the CORS check, is 503
 * `user_unavailable`.
 */
export const authenticateMe = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const token = yield* bearer
  const { claims } = yield* verifyAccessToken(token, {
    environmentId: env.record.id,
    issuer: env.urls.issuer,
    audience: audienceIncludes(env.urls.issuer),
    realm: ME_REALM,
  })
  const user = yield* userById(env.record.id, claims.sub).pipe(
    Effect.catchCause((cause) =>
      Effect.logError("user state could not be read", cause).pipe(
        Effect.andThen(Effect.fail(new UserUnavailable({ retryAfterSeconds: 1 }))),
      ),
    ),
  )
  // The verifier found the user active a moment ago; a vanished row is a read failure.
  if (!user) return yield* new UserUnavailable({ retryAfterSeconds: 1 })
  // CORS (docs/architecture.md): a cross-origin call is checked against the token's own client.
  const origin = yield* CorsRequestOrigin
  if (origin !== undefined) {
    const client = yield* unavailableOnSqlError(loginClient(env.record.id, claims.client_id))
    if (!client?.allowed_origins.includes(origin)) return yield* new OriginNotAllowed()
  }
  return {
    claims,
    user,
    userId: claims.sub,
    sessionId: claims.sid,
    clientId: claims.client_id,
    authTimeMs: claims.auth_time * 1000,
  } satisfies Me
}).pipe(withCallSpan("me.authenticate"))

/** Wraps a /me handler: authenticates first, then runs it with `CurrentMe`. */
export const withMe = <R>(handler: Route<R>["handler"]) =>
  Effect.flatMap(authenticateMe, (me) => Effect.provideService(handler, CurrentMe, me))
