import { importPKCS8, SignJWT } from "jose"
import { APPLE_ISSUER } from "./endpoints.js"
import { oidcProvider } from "./oidc.js"
import type { ProviderAdapter, ProviderCall } from "./types.js"

/**
 * Sign in with Apple. The connection's `provider_client_secret` holds the Apple key as JSON
 * `{"team_id", "key_id", "private_key"}` (the .p8 PKCS#8 PEM; docs/decisions/social-login.md); the
 * client secret sent to Apple is an ES256 JWT signed with it for each call (Apple,
 * "Creating a client secret": header `kid`, claims `iss` team id, `iat`, `exp`, `aud`
 * https://appleid.apple.com, `sub` the Services ID). The answer comes as a form POST
 * (`response_mode=form_post`, required by Apple when `name` or `email` is asked for).
 */

export interface AppleKey {
  readonly team_id: string
  readonly key_id: string
  readonly private_key: string
}

/** Short-lived: one call needs it, Apple accepts up to six months. */
export const APPLE_CLIENT_SECRET_TTL_SECONDS = 300

export const parseAppleKey = (secret: string): AppleKey | undefined => {
  try {
    const v = JSON.parse(secret) as Record<string, unknown>
    if (typeof v["team_id"] === "string" && typeof v["key_id"] === "string" && typeof v["private_key"] === "string") {
      return { team_id: v["team_id"], key_id: v["key_id"], private_key: v["private_key"] }
    }
  } catch {
    // not JSON
  }
  return undefined
}

export const appleClientSecret = async (call: ProviderCall) => {
  const key = parseAppleKey(call.clientSecret)
  if (!key) throw new Error("the Apple connection's provider_client_secret must be JSON {team_id, key_id, private_key}")
  const now = Math.floor(call.nowMs / 1000)
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", kid: key.key_id })
    .setIssuer(key.team_id)
    .setIssuedAt(now)
    .setExpirationTime(now + APPLE_CLIENT_SECRET_TTL_SECONDS)
    .setAudience(APPLE_ISSUER)
    .setSubject(call.connection.provider_client_id ?? "")
    .sign(await importPKCS8(key.private_key, "ES256"))
}

const base = oidcProvider({
  issuer: () => APPLE_ISSUER,
  pkce: false,
  authorizationParameters: { response_mode: "form_post" },
  clientSecret: appleClientSecret,
  requiredScopes: [],
})

/** Apple sends the user's name only on the first authorization, as a `user` JSON form field. */
const nameFromUserField = (raw: string | null) => {
  if (raw === null) return undefined
  try {
    const name = (JSON.parse(raw) as { name?: { firstName?: unknown; lastName?: unknown } }).name
    const parts = [name?.firstName, name?.lastName].filter((p): p is string => typeof p === "string" && p.trim() !== "")
    return parts.length > 0 ? parts.join(" ") : undefined
  } catch {
    return undefined
  }
}

export const appleProvider: ProviderAdapter = {
  authorizationUrl: base.authorizationUrl,
  exchange: async (call, checks, callback) => {
    const user = callback.get("user")
    const params = new URLSearchParams([...callback].filter(([name]) => name !== "user"))
    const answer = await base.exchange(call, checks, params)
    const name = nameFromUserField(user)
    return name !== undefined && answer.claims["name"] === undefined
      ? { ...answer, claims: { ...answer.claims, name } }
      : answer
  },
}
