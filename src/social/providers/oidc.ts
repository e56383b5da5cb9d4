import * as oidc from "openid-client"
import { discover } from "./discovery.js"
import { PUBLISHED_AUTHORIZATION_ENDPOINTS } from "./endpoints.js"
import type { AuthorizationChecks, ProviderAdapter, ProviderCall } from "./types.js"

/**
 * OpenID Connect providers through openid-client (discovery, PKCE S256, state, nonce and the
 * ID-token validation of OIDC Core section 3.1.3.7: `iss`, `aud`, `exp`, `iat`, `nonce`; the
 * ID token comes straight from the token endpoint over TLS, so, as item 6 there allows,
 * openid-client does not fetch the provider's JWKS to check its signature). Google,
 * Microsoft, Apple and generic OIDC differ only in the options below.
 */
export interface OidcOptions {
  /** The issuer (or authority) to discover. */
  readonly issuer: (call: ProviderCall) => string
  /** RFC 7636 PKCE; every provider here but Apple documents it. */
  readonly pkce: boolean
  /** Extra authorization request parameters (Apple: `response_mode=form_post`). */
  readonly authorizationParameters?: Readonly<Record<string, string>>
  /** The client secret to present (Apple: a freshly signed ES256 JWT). */
  readonly clientSecret?: (call: ProviderCall) => Promise<string>
  /** Scopes always asked for (OIDC needs `openid`). */
  readonly requiredScopes: ReadonlyArray<string>
}

/**
 * Client authentication at the token endpoint (RFC 8414 section 2: without
 * `token_endpoint_auth_methods_supported` the default is client_secret_basic): post when
 * the provider lists it, basic otherwise.
 */
const secretAuth =
  (secret: string): oidc.ClientAuth =>
  (as, client, body, headers) => {
    const methods = as.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]
    const auth = methods.includes("client_secret_post") ? oidc.ClientSecretPost(secret) : oidc.ClientSecretBasic(secret)
    return auth(as, client, body, headers)
  }

/**
 * The secret is made only when the token endpoint is called (Apple's is a signed JWT: no
 * signature for an authorization URL). oauth4webapi awaits client authentication.
 */
const lazyAuth =
  (call: ProviderCall, options: OidcOptions): oidc.ClientAuth =>
  async (as, client, body, headers) => {
    const secret = options.clientSecret ? await options.clientSecret(call) : call.clientSecret
    return secretAuth(secret)(as, client, body, headers)
  }

const clientMetadataOf = (call: ProviderCall) => ({ redirect_uris: [call.redirectUri], response_types: ["code"] })

/** Discovery from the process's cache (discovery.ts): no request while the provider's document is fresh. */
const configure = async (call: ProviderCall, options: OidcOptions) => {
  const secret = lazyAuth(call, options)
  const clientId = call.connection.provider_client_id ?? ""
  const issuer = new URL(options.issuer(call))
  const metadata = clientMetadataOf(call)
  const config = await discover(call, issuer, clientId, metadata, secret)
  // openid-client expects RS256 ID tokens unless told otherwise; a provider that signs with
  // something else says so in its metadata (OIDC Discovery, id_token_signing_alg_values_supported).
  const algs = config.serverMetadata().id_token_signing_alg_values_supported ?? []
  if (algs.length === 0 || algs.includes("RS256")) return config
  return discover(call, issuer, clientId, { ...metadata, id_token_signed_response_alg: algs[0]! }, secret)
}

/**
 * The configuration an authorization URL needs. A provider whose authorization endpoint is
 * published (endpoints.ts) needs no request at all, so a start works even while its discovery
 * document cannot be fetched; any other is discovered (cached).
 */
const authorizationConfiguration = async (call: ProviderCall, options: OidcOptions) => {
  const issuer = options.issuer(call)
  const published = PUBLISHED_AUTHORIZATION_ENDPOINTS[issuer]
  if (published === undefined) return configure(call, options)
  return new oidc.Configuration(
    { issuer, authorization_endpoint: published },
    call.connection.provider_client_id ?? "",
    clientMetadataOf(call),
  )
}

const scopeOf = (call: ProviderCall, options: OidcOptions) =>
  [...new Set([...options.requiredScopes, ...call.connection.scopes])].join(" ")

export const oidcProvider = (options: OidcOptions): ProviderAdapter => ({
  authorizationUrl: async (call, checks) => {
    const config = await authorizationConfiguration(call, options)
    return oidc.buildAuthorizationUrl(config, {
      response_type: "code",
      redirect_uri: call.redirectUri,
      scope: scopeOf(call, options),
      state: checks.state,
      nonce: checks.nonce,
      ...(options.pkce
        ? { code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier), code_challenge_method: "S256" }
        : {}),
      ...options.authorizationParameters,
    })
  },
  exchange: async (call, checks: AuthorizationChecks, callback) => {
    const config = await configure(call, options)
    // openid-client reads the redirect URI from this URL (origin + path) and the response from its query.
    const currentUrl = new URL(call.redirectUri)
    for (const [name, value] of callback) currentUrl.searchParams.append(name, value)
    const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
      ...(options.pkce ? { pkceCodeVerifier: checks.codeVerifier } : {}),
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    })
    const claims: Record<string, unknown> = { ...tokens.claims() }
    // openid-client validated `iss` against the discovered issuer (Microsoft: the template filled with the token's `tid`).
    const issuer = String(claims["iss"])
    // Providers that keep profile claims out of the ID token serve them at UserInfo; the
    // subject must be the ID token's (openid-client checks it, OIDC Core section 5.3.2).
    if (claims["email"] === undefined && config.serverMetadata().userinfo_endpoint !== undefined) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, String(claims["sub"]))
      return { issuer, claims: { ...info, ...claims } }
    }
    return { issuer, claims }
  },
})
