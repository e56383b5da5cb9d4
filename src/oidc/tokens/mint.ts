import { Effect } from "effect"
import { Crypto } from "../../platform/crypto.js"
import { Keys } from "../../platform/keys/service.js"
import { type ProfileSource, scopedUserClaims, unixSeconds } from "./claims.js"
import { signEs256 } from "./jws.js"
import { rememberOwnSignature } from "../access-token/jws-verify.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Spec, Limits: access token and ID token 300 seconds (`expires_in` 300). */
export const ACCESS_TOKEN_TTL_S = 300
export const ID_TOKEN_TTL_S = 300

/** What one token response is issued for (a code exchange or a refresh). */
export interface TokenGrant {
  readonly issuer: string
  readonly environmentId: string
  readonly clientId: string
  readonly userId: string
  readonly sessionId: string
  /** The scopes of THIS response (a refresh may have narrowed them). */
  readonly scopes: ReadonlyArray<string>
  /** The resources of THIS response: the access token's audiences. */
  readonly resources: ReadonlyArray<string>
  /** One of email_otp, passkey, social, refresh_token. */
  readonly amr: string
  readonly acr: string
  readonly authTime: Date
  /** The user's security version (`sv`). */
  readonly securityVersion: number
  /** Only on code exchange; a refreshed ID token carries none (OIDC Core 12.2, errata). */
  readonly nonce: string | null
  readonly user: ProfileSource
}

/**
 * `aud` of an access token: each requested resource (a string when one, an array when
 * several), otherwise the issuer (spec: Authentication rule 8).
 */
export const accessTokenAudience = (issuer: string, resources: ReadonlyArray<string>): string | Array<string> =>
  resources.length === 0 ? issuer : resources.length === 1 ? resources[0]! : [...resources]

/**
 * Mints the access token (typ at+jwt, exactly the spec's claims: never azp, never email)
 * and, when `openid` is granted, the ID token (typ JWT, aud = client id).
 */
export const mintTokens = Effect.fnUntraced(function* (grant: TokenGrant, nowMs: number) {
  const keys = yield* Keys
  const crypto = yield* Crypto
  const { kid, key, publicKey } = yield* keys.signingKey(grant.environmentId)
  const iat = unixSeconds(nowMs)
  const authTime = unixSeconds(grant.authTime)
  const amr = [grant.amr]
  const jti = yield* crypto.randomToken(16)
  const accessToken = signEs256(
    { alg: "ES256", typ: "at+jwt", kid },
    {
      iss: grant.issuer,
      sub: grant.userId,
      aud: accessTokenAudience(grant.issuer, grant.resources),
      exp: iat + ACCESS_TOKEN_TTL_S,
      iat,
      jti,
      sid: grant.sessionId,
      client_id: grant.clientId,
      scope: grant.scopes.join(" "),
      amr,
      acr: grant.acr,
      auth_time: authTime,
      sv: grant.securityVersion,
    },
    key,
  )
  rememberOwnSignature(accessToken, publicKey)
  const idToken = grant.scopes.includes("openid")
    ? signEs256(
        { alg: "ES256", typ: "JWT", kid },
        {
          iss: grant.issuer,
          sub: grant.userId,
          aud: grant.clientId,
          exp: iat + ID_TOKEN_TTL_S,
          iat,
          sid: grant.sessionId,
          auth_time: authTime,
          amr,
          acr: grant.acr,
          ...(grant.nonce !== null ? { nonce: grant.nonce } : {}),
          ...scopedUserClaims(grant.scopes, grant.user),
        },
        key,
      )
    : undefined
  return { accessToken, idToken }
}, withCallSpan("oidc.mintTokens"))
