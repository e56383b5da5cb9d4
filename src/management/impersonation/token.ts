import { Effect } from "effect"
import { Crypto } from "../../platform/crypto.js"
import { Keys } from "../../platform/keys/service.js"
import { ACR_BASIC } from "../../oidc/codes/issue.js"
import { unixSeconds } from "../../oidc/tokens/claims.js"
import { signEs256 } from "../../oidc/tokens/jws.js"

/** The only scope an impersonation token carries. */
export const IMPERSONATION_SCOPE = "profile"

/**
 * Login scopes an impersonation never carries: `openid` (no ID token, no UserInfo), `email`
 * (no contact data release) and `offline_access` (no refresh token: it cannot outlive its
 * expiry). The response lists them as `forbidden_scopes`.
 */
export const FORBIDDEN_SCOPES = ["openid", "email", "offline_access"] as const

/**
 * An access token (typ at+jwt, ES256, the Environment's key) for the impersonated user,
 * with the RFC 8693 4.1 `act` claim naming the Dashboard user who acts. `sid` is the
 * impersonation id, which is no login session: the service's own stateful endpoints
 * (UserInfo, introspection, /me) find no live session behind it and refuse the token, so an
 * impersonator can never change the user's account (email, passkeys, deletion); resource
 * servers of the customer that verify tokens locally see `act` and decide what to allow.
 * No `client_id` (no client asked for it) and no `amr` (nobody authenticated as the user).
 */
export const mintImpersonationToken = Effect.fnUntraced(function* (input: {
  readonly issuer: string
  readonly environmentId: string
  readonly impersonationId: string
  readonly userId: string
  readonly securityVersion: number
  readonly actorPlatformUserId: string
  readonly issuedAtMs: number
  readonly expiresAtMs: number
}) {
  const { kid, key } = yield* (yield* Keys).signingKey(input.environmentId)
  const jti = yield* (yield* Crypto).randomToken(16)
  const iat = unixSeconds(input.issuedAtMs)
  return signEs256(
    { alg: "ES256", typ: "at+jwt", kid },
    {
      iss: input.issuer,
      sub: input.userId,
      aud: input.issuer,
      exp: unixSeconds(input.expiresAtMs),
      iat,
      jti,
      sid: input.impersonationId,
      scope: IMPERSONATION_SCOPE,
      acr: ACR_BASIC,
      auth_time: iat,
      sv: input.securityVersion,
      act: { sub: input.actorPlatformUserId, actor_type: "workspace_member" },
    },
    key,
  )
})
