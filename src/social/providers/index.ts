import type { Provider } from "../../management/connections/schema.js"
import { appleProvider } from "./apple.js"
import { GOOGLE_ISSUER, MICROSOFT_AUTHORITY } from "./endpoints.js"
import { githubProvider } from "./github.js"
import { oidcProvider } from "./oidc.js"
import type { ProviderAdapter } from "./types.js"

/**
 * Google and Microsoft would answer an account already signed in at them without showing
 * anything; the account chooser (OIDC Core 3.1.2.1 `prompt=select_account`, documented by both)
 * shows the user which app asks, so a forwarded authorization URL never completes silently
 * (docs/decisions/social-login.md, Social login: "Custom UI: the completion proof").
 */
const ACCOUNT_CHOOSER = { prompt: "select_account" } as const

/** One adapter per provider path segment (spec: Social login, "Provider path segments"). */
export const PROVIDER_ADAPTERS: Readonly<Record<Provider, ProviderAdapter>> = {
  google: oidcProvider({
    issuer: () => GOOGLE_ISSUER,
    pkce: true,
    requiredScopes: ["openid"],
    authorizationParameters: ACCOUNT_CHOOSER,
  }),
  microsoft: oidcProvider({
    issuer: () => MICROSOFT_AUTHORITY,
    pkce: true,
    requiredScopes: ["openid"],
    authorizationParameters: ACCOUNT_CHOOSER,
  }),
  generic_oidc: oidcProvider({
    issuer: (call) => call.connection.issuer ?? "",
    pkce: true,
    requiredScopes: ["openid"],
  }),
  github: githubProvider,
  apple: appleProvider,
}

/**
 * Which providers' addresses count as verified, and how (docs/decisions/social-login.md). Microsoft's
 * `email` claim is not verified by Microsoft unless its optional `xms_edov` claim says so.
 */
export const verifiedEmailClaims = (provider: Provider, claims: Record<string, unknown>): Record<string, unknown> => {
  if (provider !== "microsoft") return claims
  const { email_verified: _ignored, ...rest } = claims
  return claims["xms_edov"] === true || claims["xms_edov"] === "1" ? { ...rest, email_verified: true } : rest
}
