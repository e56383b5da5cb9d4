import type { CustomFetch } from "openid-client"
import type { ConnectionRow } from "../../management/connections/repo.js"
import type { RefreshingCache } from "./refreshing-cache.js"

/** A provider's discovery response as received (the request URL, body and media type). */
export interface DiscoveryDocument {
  readonly url: string
  readonly body: string
  readonly contentType: string
}

/** The process's discovery documents by issuer URL (src/social/provider-discovery-cache.ts). */
export type DiscoveryCache = RefreshingCache<DiscoveryDocument>

/** Everything a provider adapter needs for one call; it holds no state between calls. */
export interface ProviderCall {
  readonly connection: ConnectionRow
  /** The plain provider client secret (opened from its sealed column for this call only). */
  readonly clientSecret: string
  /** The redirect URI registered at the provider: the Connection's callback URL. */
  readonly redirectUri: string
  readonly fetch: CustomFetch
  /** Effect Clock time, for what the adapter signs (Apple's client secret JWT) and cache expiry. */
  readonly nowMs: number
  /** Discovery documents already fetched by this process (each start no longer asks the provider). */
  readonly discovery: DiscoveryCache
}

/** The per-redirect values bound into the authorization request and checked at the callback. */
export interface AuthorizationChecks {
  readonly state: string
  readonly nonce: string
  /** PKCE (RFC 7636) S256 verifier; the challenge is derived from it. */
  readonly codeVerifier: string
}

/** A provider's validated answer: who it says the user is, and which issuer says so. */
export interface VerifiedAnswer {
  /**
   * The issuer of the subject: the ID token's validated `iss` (OIDC Core 3.1.3.7; Microsoft's is
   * per tenant), or GitHub's fixed origin (plain OAuth 2, no issuer of its own). With the subject
   * it names the identity (OIDC Core 2: only `iss` + `sub` together are stable and unique).
   */
  readonly issuer: string
  readonly claims: Record<string, unknown>
}

export interface ProviderAdapter {
  /** The provider's authorization endpoint with every parameter (the URL the browser opens). */
  readonly authorizationUrl: (call: ProviderCall, checks: AuthorizationChecks) => Promise<URL>
  /**
   * Validates the callback (state, `iss` where the provider sends it), redeems the code and
   * returns the issuer and the validated claims of the user, standard names (`sub`, `email`,
   * `email_verified`, `name`, `picture`, `locale`) plus anything else the provider sent.
   */
  readonly exchange: (
    call: ProviderCall,
    checks: AuthorizationChecks,
    callback: URLSearchParams,
  ) => Promise<VerifiedAnswer>
}
