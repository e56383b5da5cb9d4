import type { MiddlewareHandler } from "hono"
import {
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose"
import { IssuerUnavailableError, isIssuerUnavailable } from "./errors.js"
import { isLocalHost } from "./origin.js"
import { problem, temporarilyUnavailable } from "./problem.js"
import type { AccessTokenActor, AccessTokenClaims, BearerVariables } from "./types.js"

export interface BearerTokenOptions {
  /** The Environment's issuer; its discovery document names the JWKS. */
  readonly issuer: string
  /**
   * This API's identifier: `aud` must contain it (or one of the list). Required: a token the
   * issuer minted for another API (or the issuer itself) must not open this one. `false`
   * accepts any audience of the issuer, a choice that must be written down (decisions, Hono
   * helpers, "Bearer tokens"). A token without `resource` has the issuer as its audience.
   */
  readonly audience: string | ReadonlyArray<string> | false
  /** Fetch for discovery and JWKS. Default global fetch. */
  readonly fetch?: typeof fetch
  /** `realm` of the WWW-Authenticate challenge (RFC 6750 3). Default `api`. */
  readonly realm?: string
  /** Minimum time between two JWKS fetches caused by an unknown `kid`. Default 30 s. */
  readonly jwksCooldownMs?: number
  /** Longest time a fetched JWKS is used before it is fetched again. Default 10 minutes. */
  readonly jwksMaxAgeMs?: number
  /** The clock for `exp`/`nbf` (epoch ms). Default Date.now. */
  readonly now?: () => number
}

/**
 * RFC 9068 JWT access tokens, verified locally against the issuer's JWKS (spec: Token
 * format): ES256 fixed here, never taken from the token header (RFC 8725 3.1); header `typ`
 * `at+jwt` (RFC 9068 4), so an ID token (`typ` `JWT`) is not accepted as an access token;
 * `iss`, `aud` (unless `audience: false`), `exp`. A token with the RFC 8693 `act` claim (an
 * impersonation: someone else acts as the subject) passes, marked in `accessTokenAct` and
 * `accessTokenImpersonator` so the API can refuse or audit it. The JWKS is cached and refetched when a token names
 * an unknown `kid` (key rotation), at most once per cooldown, so garbage `kid`s cannot make
 * us hammer the issuer.
 */
const TOKEN_ERRORS = new Set<string>([
  joseErrors.JWTClaimValidationFailed.code,
  joseErrors.JWTExpired.code,
  joseErrors.JOSEAlgNotAllowed.code,
  joseErrors.JOSENotSupported.code,
  joseErrors.JWSInvalid.code,
  joseErrors.JWTInvalid.code,
  joseErrors.JWKSNoMatchingKey.code,
  joseErrors.JWKSMultipleMatchingKeys.code,
  joseErrors.JWSSignatureVerificationFailed.code,
])

const isTokenError = (e: unknown) =>
  typeof e === "object" &&
  e !== null &&
  typeof (e as { code?: unknown }).code === "string" &&
  TOKEN_ERRORS.has((e as { code: string }).code)

/** RFC 6750 2.1: `Bearer` (case-insensitive), one space, b64token. */
const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i

const quoted = (s: string) => `"${s.replace(/[\\"]/g, "\\$&")}"`

/** RFC 9068 4 names the type `at+jwt`; `application/at+jwt` is the same (RFC 7515 4.1.9), as jose compares it. */
const isAccessTokenTyp = (typ: unknown) =>
  typeof typ === "string" && typ.toLowerCase().replace(/^application\//, "") === "at+jwt"

/**
 * What the token alone shows can never verify, checked before any network call: a JWS compact
 * serialisation whose header and payload decode (RFC 7515 7.1, RFC 7519 7.2), `alg` ES256 (the
 * only key type the issuer signs with; RFC 8725 3.1) and `typ` at+jwt (RFC 9068 4). jwtVerify
 * checks them again with the key. Checking first keeps a malformed or foreign token a 401 while
 * the issuer is unreachable: 503 is only for a token that could be valid.
 */
const refusedWithoutKeys = (token: string) => {
  try {
    const header = decodeProtectedHeader(token)
    decodeJwt(token)
    return header.alg !== "ES256" || !isAccessTokenTyp(header.typ)
  } catch {
    return true
  }
}

/** The audience rule, refused at construction unless it is a non-empty identifier (list) or an explicit `false`. */
const audienceOf = (value: unknown): string | Array<string> | undefined => {
  if (value === false) return undefined
  if (typeof value === "string" && value !== "") return value
  if (Array.isArray(value) && value.length > 0 && value.every((a) => typeof a === "string" && a !== ""))
    return [...value] as Array<string>
  throw new TypeError(
    "bearerTokenMiddleware: set `audience` to this API's identifier (the `resource` its clients ask tokens for; " +
      "the issuer URL for tokens requested without one), or `audience: false` to accept tokens minted for any audience of the issuer",
  )
}

/**
 * RFC 8693 4.1 `act`: the party acting for the subject. The issuer puts it on impersonation
 * tokens (a Workspace member acting as the user); an object whose `sub` names the actor.
 * Undefined without the claim; `null` when the claim is there but malformed (refused).
 */
const actorOf = (claims: AccessTokenClaims): AccessTokenActor | undefined | null => {
  const act = claims["act"]
  if (act === undefined) return undefined
  if (
    typeof act !== "object" ||
    act === null ||
    Array.isArray(act) ||
    typeof (act as { sub?: unknown }).sub !== "string"
  )
    return null
  return act as AccessTokenActor
}

export const bearerTokenMiddleware = (
  options: BearerTokenOptions,
): MiddlewareHandler<{ Variables: BearerVariables }> => {
  const issuerUrl = new URL(options.issuer)
  if (issuerUrl.protocol !== "https:" && !(issuerUrl.protocol === "http:" && isLocalHost(issuerUrl.hostname))) {
    throw new TypeError("bearerTokenMiddleware: issuer must use https (http is accepted only for localhost)")
  }
  const audience = audienceOf((options as { audience?: unknown }).audience)
  const fetchImpl = options.fetch ?? fetch
  const challenge = `Bearer realm=${quoted(options.realm ?? "api")}, error="invalid_token"`
  const now = options.now ?? Date.now

  // Discovery (OIDC Discovery 1.0 4) once; a failure is not cached.
  let keys: Promise<JWTVerifyGetKey> | undefined
  const discover = async (): Promise<JWTVerifyGetKey> => {
    const url = `${options.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`
    const res = await fetchImpl(url, {
      headers: { accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(5_000),
    })
    if (res.status !== 200) throw new Error(`discovery answered ${res.status}`)
    const metadata = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown }
    // OIDC Discovery 4.3: the document's issuer must be exactly the one we asked about.
    if (metadata.issuer !== options.issuer) throw new Error("discovery: issuer mismatch")
    if (typeof metadata.jwks_uri !== "string") throw new Error("discovery: no jwks_uri")
    return createRemoteJWKSet(new URL(metadata.jwks_uri), {
      cooldownDuration: options.jwksCooldownMs ?? 30_000,
      cacheMaxAge: options.jwksMaxAgeMs ?? 600_000,
      [customFetch]: fetchImpl,
    })
  }
  const keySet = () => {
    keys ??= discover().catch((cause: unknown) => {
      keys = undefined
      throw new IssuerUnavailableError("OpenID Provider discovery failed", { cause })
    })
    return keys
  }

  return async (c, next) => {
    const refuse = () => problem(c, "invalid_token", { headers: { "WWW-Authenticate": challenge } })
    const match = BEARER.exec(c.req.header("authorization") ?? "")
    if (match === null || refusedWithoutKeys(match[1]!)) return refuse()
    try {
      const getKey = await keySet()
      const { payload } = await jwtVerify(match[1]!, getKey, {
        algorithms: ["ES256"],
        typ: "at+jwt",
        issuer: options.issuer,
        ...(audience === undefined ? {} : { audience }),
        requiredClaims: ["exp", "sub"],
        currentDate: new Date(now()),
      })
      const claims = payload as AccessTokenClaims
      const actor = actorOf(claims)
      if (actor === null) return refuse()
      c.set("accessTokenClaims", claims)
      c.set("accessTokenSubject", claims.sub)
      c.set("accessTokenScope", typeof claims.scope === "string" ? claims.scope.split(" ").filter(Boolean) : [])
      c.set("accessTokenAct", actor)
      c.set("accessTokenImpersonator", actor?.sub)
    } catch (e) {
      if (isTokenError(e)) return refuse()
      if (isIssuerUnavailable(e) || e instanceof Error) {
        // JWKS unreachable, timed out, not 200, not a key set: the issuer's problem, not the caller's
        return temporarilyUnavailable(c)
      }
      throw e
    }
    await next()
  }
}
