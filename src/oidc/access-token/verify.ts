import type { KeyObject } from "node:crypto"
import { type Cause, Clock, Effect, Option } from "effect"
import { decodeProtectedHeader, type JWTPayload, type ProtectedHeaderParameters } from "jose"
import { rememberedHeader, verifyEs256 } from "./jws-verify.js"
import { Keys } from "../../platform/keys/service.js"
import { AccessTokenRejected, UserUnavailable } from "./errors.js"
import { readLiveState } from "./live-cache.js"
import type { LiveState } from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** The claims of one of our access tokens (spec: Authentication rule 8), as verified. */
export interface AccessTokenClaims {
  readonly iss: string
  readonly sub: string
  readonly aud: ReadonlyArray<string>
  readonly exp: number
  readonly iat: number
  readonly jti: string
  readonly sid: string
  readonly client_id: string
  readonly scope: string
  readonly scopes: ReadonlyArray<string>
  readonly amr: ReadonlyArray<string>
  readonly acr: string
  readonly auth_time: number
  readonly sv: number
}

export interface VerifiedAccessToken {
  readonly claims: AccessTokenClaims
  /** The audience exactly as in the token (string or array), for introspection. */
  readonly rawAud: string | ReadonlyArray<string>
  readonly live: LiveState
  /** The Environment key that verified it (the listener's answers from memory verify with it). */
  readonly key: { readonly kid: string; readonly key: KeyObject }
}

export interface VerifyAccessTokenOptions {
  readonly environmentId: string
  /** The Environment's issuer: `iss` must equal it. */
  readonly issuer: string
  /** The caller's audience rule, e.g. "includes the issuer" (/me) or "any" (UserInfo). */
  readonly audience: (aud: ReadonlyArray<string>) => boolean
  /** Realm of the WWW-Authenticate challenge. */
  readonly realm?: string
}

/** The RFC 6750 3 challenge of a refused access token. */
export const bearerChallenge = (realm: string | undefined, description: string) =>
  `Bearer ${realm ? `realm="${realm}", ` : ""}error="invalid_token", error_description="${description.replace(/["\\]/g, "")}"`

const unavailable = (cause: Cause.Cause<unknown>) =>
  Effect.logError("access-token state could not be read", cause).pipe(
    Effect.andThen(Effect.fail(new UserUnavailable({ retryAfterSeconds: 1 }))),
  )

const REQUIRED_CLAIMS = ["sub", "aud", "exp", "iat", "jti"] as const

const str = (v: unknown): v is string => typeof v === "string" && v !== ""
const int = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v)

const shape = (p: JWTPayload): AccessTokenClaims | undefined => {
  const aud = typeof p.aud === "string" ? [p.aud] : Array.isArray(p.aud) && p.aud.every(str) ? p.aud : undefined
  const amr = (p as Record<string, unknown>)["amr"]
  const r = p as Record<string, unknown>
  if (!aud || aud.length === 0 || !str(p.iss) || !str(p.sub) || !int(p.exp) || !int(p.iat) || !str(p.jti))
    return undefined
  if (
    !str(r["sid"]) ||
    !str(r["client_id"]) ||
    typeof r["scope"] !== "string" ||
    !str(r["acr"]) ||
    !int(r["auth_time"]) ||
    !int(r["sv"])
  )
    return undefined
  if (!Array.isArray(amr) || !amr.every(str)) return undefined
  const scope = r["scope"] as string
  return {
    iss: p.iss,
    sub: p.sub,
    aud,
    exp: p.exp,
    iat: p.iat,
    jti: p.jti,
    sid: r["sid"] as string,
    client_id: r["client_id"] as string,
    scope,
    scopes: scope.split(" ").filter((s) => s !== ""),
    amr,
    acr: r["acr"] as string,
    auth_time: r["auth_time"] as number,
    sv: r["sv"] as number,
  }
}

/** A refusal of the checks below: the description its 401 names. */
export type Refusal = { readonly refused: string }
const refused = (description: string): Refusal => ({ refused: description })
export const isRefusal = (value: object): value is Refusal => "refused" in value

/** The `kid` of an ES256 token's header, before any key is chosen (the header `alg` is never trusted). */
export const accessTokenKid = (token: string): { readonly kid: string } | Refusal => {
  // A token seen before has its header parsed already (jose's decoding was 3% of the listener's
  // CPU per introspection); a new one is decoded as always, so its refusals stay the same.
  let header = rememberedHeader(token) as ProtectedHeaderParameters | undefined
  if (header === undefined) {
    try {
      header = decodeProtectedHeader(token)
    } catch {
      return refused("The access token is malformed")
    }
  }
  if (header.alg !== "ES256" || typeof header.kid !== "string")
    return refused("The access token must be signed with ES256 and name its kid")
  return { kid: header.kid }
}

/**
 * The checks of a token under the Environment key its `kid` named: signature, then the claim
 * checks in the order jose's jwtVerify made them (typ, required claims, iss, nbf, exp), each with
 * the same answer as before (jws-verify.ts says why not jose), then the claims' shape and the
 * caller's audience rule. Synchronous: the listener's answers from memory make the same checks.
 */
export const checkSignedAccessToken = (
  token: string,
  key: KeyObject,
  nowMs: number,
  options: Pick<VerifyAccessTokenOptions, "issuer" | "audience">,
): Omit<VerifiedAccessToken, "live" | "key"> | Refusal => {
  const verified = verifyEs256(token, key, "at+jwt")
  if (verified === "typ") return refused("The token is not an access token (typ at+jwt)")
  if (typeof verified === "string") return refused("The access token is malformed or its signature is invalid")
  const p = verified.payload
  if (p["iss"] === undefined) return refused("The access token was issued by another issuer")
  if (REQUIRED_CLAIMS.some((c) => p[c] === undefined))
    return refused("The access token is malformed or its signature is invalid")
  if (p["iss"] !== options.issuer) return refused("The access token was issued by another issuer")
  const nowSeconds = Math.floor(nowMs / 1000)
  if (
    (p["iat"] !== undefined && typeof p["iat"] !== "number") ||
    typeof p["exp"] !== "number" ||
    (p["nbf"] !== undefined && (typeof p["nbf"] !== "number" || p["nbf"] > nowSeconds))
  ) {
    return refused("The access token is malformed or its signature is invalid")
  }
  if (p["exp"] <= nowSeconds) return refused("The access token has expired")
  const claims = shape(p as JWTPayload)
  if (!claims) return refused("The access token lacks required claims")
  if (!options.audience(claims.aud)) return refused("The access token is not meant for this audience")
  return { claims, rawAud: p["aud"] as string | ReadonlyArray<string> }
}

/**
 * The live checks (UserInfo / Introspect; spec: Authentication rule 8): the user is active, `sv`
 * equals the user's security version, and the session behind `sid` belongs to the user and is
 * neither revoked nor expired. Undefined when the token passes them.
 */
export const liveRefusal = (
  live: LiveState | undefined,
  claims: AccessTokenClaims,
  nowMs: number,
): Refusal | undefined => {
  if (live?.status !== "active") return refused("The user is not active")
  if (live.security_version !== claims.sv)
    return refused("The access token was issued before a security change; sign in again")
  if (live.session_id === null || live.session_revoked_at !== null)
    return refused("The session of this access token has ended")
  if (live.session_idle_expires_at!.getTime() <= nowMs || live.session_absolute_expires_at!.getTime() <= nowMs)
    return refused("The session of this access token has expired")
  return undefined
}

/**
 * THE access-token verifier (UserInfo, introspection, /me). Spec, Authentication rule 6:
 * ES256 is fixed (the header `alg` is never trusted; every other value fails), `typ` must be
 * at+jwt (RFC 9068 4), `kid` selects an Environment key (active, or retired and kept);
 * then `iss`, the caller's `aud` rule and expiry against the Effect Clock. Then the live
 * checks (liveRefusal). A database failure while reading that state is 503
 * user_unavailable, never 401.
 */
export const verifyAccessToken = Effect.fnUntraced(function* (token: string, options: VerifyAccessTokenOptions) {
  const keys = yield* Keys
  const nowMs = yield* Clock.currentTimeMillis
  const reject = ({ refused: description }: Refusal) =>
    new AccessTokenRejected({ detail: description, wwwAuthenticate: bearerChallenge(options.realm, description) })

  const header = accessTokenKid(token)
  if (isRefusal(header)) return yield* reject(header)
  const key = yield* keys.verificationKey(options.environmentId, header.kid).pipe(Effect.catchCause(unavailable))
  if (Option.isNone(key)) return yield* reject(refused("The access token was not signed by a key of this issuer"))
  const checked = checkSignedAccessToken(token, key.value, nowMs, options)
  if (isRefusal(checked)) return yield* reject(checked)
  const { claims } = checked
  const live = yield* readLiveState(options.environmentId, claims.sub, claims.sid).pipe(Effect.catchCause(unavailable))
  const refusal = liveRefusal(live, claims, nowMs)
  if (refusal !== undefined) return yield* reject(refusal)
  return {
    ...checked,
    live: live!,
    key: { kid: header.kid, key: key.value },
  } satisfies VerifiedAccessToken
}, withCallSpan("oidc.verifyAccessToken"))

/** Audience rules of the spec's decisions: UserInfo and introspection accept any audience; /me needs the issuer. */
export const anyAudience = () => true
export const audienceIncludes = (value: string) => (aud: ReadonlyArray<string>) => aud.includes(value)
