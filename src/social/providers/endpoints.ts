/**
 * The providers' published endpoints (each provider's own documentation). They are fixed:
 * outside production, SOCIAL_PROVIDER_HOSTS moves only the socket of a host name to a local
 * server (tests), so URLs, TLS names and issuer checks stay exactly the real ones.
 */

/** https://developers.google.com/identity/openid-connect/openid-connect#discovery */
export const GOOGLE_ISSUER = "https://accounts.google.com"

/**
 * Microsoft identity platform, multi-tenant: discovery of the `common` authority, whose
 * `issuer` is the template `https://login.microsoftonline.com/{tenantid}/v2.0`; openid-client
 * validates each ID token's `iss` against the template filled with the token's own `tid`.
 */
export const MICROSOFT_AUTHORITY = "https://login.microsoftonline.com/common/v2.0"

/** https://developer.apple.com/documentation/sign_in_with_apple (discovery document). */
export const APPLE_ISSUER = "https://appleid.apple.com"

/**
 * The authorization endpoints these providers publish, as their discovery documents name them:
 * the authorization URL of a start is built from them without any request (discovery is
 * fetched, and cached, for the callback's code exchange). Keyed by the issuer (authority) the
 * adapter discovers.
 */
export const PUBLISHED_AUTHORIZATION_ENDPOINTS: Readonly<Record<string, string>> = {
  [GOOGLE_ISSUER]: "https://accounts.google.com/o/oauth2/v2/auth",
  [MICROSOFT_AUTHORITY]: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
  [APPLE_ISSUER]: "https://appleid.apple.com/auth/authorize",
}

/** GitHub OAuth apps (https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps). */
export const GITHUB = {
  issuer: "https://github.com",
  authorizationEndpoint: "https://github.com/login/oauth/authorize",
  tokenEndpoint: "https://github.com/login/oauth/access_token",
  userUrl: "https://api.github.com/user",
  emailsUrl: "https://api.github.com/user/emails",
} as const
