import type { Context } from "hono"
import { decodeJwt } from "jose"
import type * as oidc from "openid-client"
import { type CookieAttributes, clearCookie, readCookie, writeCookie } from "./cookies.js"
import type { Sealer } from "./seal.js"
import type { AuthSession, AuthUser } from "./types.js"

/** What the sealed session cookie holds. Short keys: the cookie travels on every request. */
export interface StoredSession {
  readonly sid: string
  readonly user: AuthUser
  readonly at: string
  readonly atExp: number
  readonly rt?: string
  readonly it?: string
  readonly scope: ReadonlyArray<string>
}

const SESSION_PURPOSE = "session"

/** ID-token claims about the protocol, not the user (OIDC Core 2): not copied into authUser. */
const PROTOCOL_CLAIMS = new Set([
  "iss",
  "aud",
  "exp",
  "iat",
  "nbf",
  "jti",
  "nonce",
  "at_hash",
  "c_hash",
  "s_hash",
  "auth_time",
  "amr",
  "acr",
  "azp",
  "sid",
])

const userOf = (claims: oidc.IDToken): AuthUser => {
  const user: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(claims)) if (!PROTOCOL_CLAIMS.has(k)) user[k] = v
  // `sub` is copied above; naming it again types it and keeps its place among the claims.
  return { ...user, sub: claims.sub }
}

/** Access-token expiry from `expires_in` (RFC 6749 5.1), else from the JWT's own `exp`. */
const accessTokenExpiry = (tokens: oidc.TokenEndpointResponse, now: number): number => {
  if (typeof tokens.expires_in === "number") return now + tokens.expires_in * 1000
  try {
    const exp = decodeJwt(tokens.access_token).exp
    if (typeof exp === "number") return exp * 1000
  } catch {
    // an opaque access token without expires_in: refresh it on every use
  }
  return now
}

/** A session from a token response: a new sign-in (`previous` undefined) or a refresh. */
export const sessionFromTokens = (
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
  now: number,
  previous: { readonly sid: string; readonly session?: StoredSession; readonly requestedScope: string },
): StoredSession => {
  const claims = tokens.claims()
  const user = claims ? userOf(claims) : previous.session?.user
  if (user === undefined) throw new TypeError("the token response carries no ID token")
  const rt = tokens.refresh_token ?? previous.session?.rt
  const it = tokens.id_token ?? previous.session?.it
  return {
    sid: previous.sid,
    user,
    at: tokens.access_token,
    atExp: accessTokenExpiry(tokens, now),
    ...(rt === undefined ? {} : { rt }),
    ...(it === undefined ? {} : { it }),
    scope: (tokens.scope ?? previous.session?.scope.join(" ") ?? previous.requestedScope).split(" ").filter(Boolean),
  }
}

const isStoredSession = (v: Record<string, unknown>): v is Record<string, unknown> & StoredSession =>
  typeof v["sid"] === "string" &&
  typeof v["at"] === "string" &&
  typeof v["atExp"] === "number" &&
  typeof v["user"] === "object" &&
  v["user"] !== null &&
  typeof (v["user"] as { sub?: unknown }).sub === "string" &&
  Array.isArray(v["scope"])

/**
 * What the session cookie needs of the auth object (`Auth` of ./auth.ts has it): named here, so
 * this file does not import auth.ts, which imports the refresher, which imports this file.
 */
export interface SessionCookieSettings {
  readonly cookies: { readonly session: string; readonly attributes: CookieAttributes }
  readonly sealer: Sealer
  readonly sessionMaxAgeSeconds: number
  readonly now: () => number
}

export const readSession = (c: Context, auth: SessionCookieSettings): StoredSession | undefined => {
  const sealed = readCookie(c, auth.cookies.session)
  if (sealed === undefined) return undefined
  const payload = auth.sealer.open(SESSION_PURPOSE, sealed, auth.now())
  return payload !== undefined && isStoredSession(payload) ? payload : undefined
}

export const writeSession = (c: Context, auth: SessionCookieSettings, session: StoredSession) => {
  const sealed = auth.sealer.seal(SESSION_PURPOSE, session, auth.now() + auth.sessionMaxAgeSeconds * 1000)
  writeCookie(c, auth.cookies.session, sealed, auth.cookies.attributes, auth.sessionMaxAgeSeconds)
}

export const clearSession = (c: Context, auth: SessionCookieSettings) =>
  clearCookie(c, auth.cookies.session, auth.cookies.attributes)

/** True when the request carries any cookie of the session (so a refusal should clear it). */
export const hasSessionCookie = (c: Context, auth: SessionCookieSettings) =>
  readCookie(c, auth.cookies.session) !== undefined

export const publicView = (s: StoredSession): AuthSession => ({
  id: s.sid,
  user: s.user,
  accessTokenExpiresAt: s.atExp,
  scope: s.scope,
})
