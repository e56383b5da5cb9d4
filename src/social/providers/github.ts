import * as oidc from "openid-client"
import { GITHUB } from "./endpoints.js"
import type { ProviderAdapter, ProviderCall } from "./types.js"

/**
 * GitHub: plain OAuth 2.0 (no ID token), through openid-client with GitHub's published
 * endpoints, `state` and PKCE S256; the user comes from `GET /user`, the address from
 * `GET /user/emails`, where only an entry with `verified: true` counts (the primary one
 * first). Claims are returned under the OIDC standard names, `sub` = the numeric user id
 * (stable; logins can be renamed), next to GitHub's own /user fields for `profile_mapping`.
 */

const configure = (call: ProviderCall) => {
  const config = new oidc.Configuration(
    {
      issuer: GITHUB.issuer,
      authorization_endpoint: GITHUB.authorizationEndpoint,
      token_endpoint: GITHUB.tokenEndpoint,
    },
    call.connection.provider_client_id ?? "",
    { redirect_uris: [call.redirectUri] },
    oidc.ClientSecretPost(call.clientSecret),
  )
  config[oidc.customFetch] = call.fetch
  config.timeout = 10
  return config
}

const API_HEADERS = {
  accept: "application/vnd.github+json",
  "user-agent": "authservice",
  "x-github-api-version": "2022-11-28",
}

const getJson = async (config: oidc.Configuration, token: string, url: string) => {
  const response = await oidc.fetchProtectedResource(
    config,
    token,
    new URL(url),
    "GET",
    undefined,
    new Headers(API_HEADERS),
  )
  if (response.status !== 200) throw new Error(`GitHub answered ${response.status} for ${new URL(url).pathname}`)
  return response.json() as Promise<unknown>
}

interface GitHubEmail {
  readonly email: string
  readonly primary: boolean
  readonly verified: boolean
}

const isEmailEntry = (e: unknown): e is GitHubEmail =>
  typeof e === "object" &&
  e !== null &&
  typeof (e as GitHubEmail).email === "string" &&
  typeof (e as GitHubEmail).verified === "boolean"

export const githubProvider: ProviderAdapter = {
  authorizationUrl: async (call, checks) =>
    oidc.buildAuthorizationUrl(configure(call), {
      redirect_uri: call.redirectUri,
      scope: call.connection.scopes.join(" "),
      state: checks.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: "S256",
      allow_signup: "true",
    }),
  exchange: async (call, checks, callback) => {
    const config = configure(call)
    const currentUrl = new URL(call.redirectUri)
    for (const [name, value] of callback) currentUrl.searchParams.append(name, value)
    const tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      idTokenExpected: false,
    })
    const user = (await getJson(config, tokens.access_token, GITHUB.userUrl)) as Record<string, unknown>
    if (typeof user["id"] !== "number" && typeof user["id"] !== "string") throw new Error("GitHub /user has no id")
    const emails = await getJson(config, tokens.access_token, GITHUB.emailsUrl)
    const verified = (Array.isArray(emails) ? emails : []).filter(isEmailEntry).filter((e) => e.verified)
    const chosen = verified.find((e) => e.primary) ?? verified[0]
    return {
      issuer: GITHUB.issuer,
      claims: {
        // GitHub's own /user fields (login, avatar_url, html_url, ...), so a profile_mapping can
        // name them; then the standard names, which win. `email` is only a verified address:
        // /user's own `email` (the public profile address) is never verified, so it is replaced.
        ...user,
        sub: String(user["id"]),
        name: user["name"] ?? user["login"],
        picture: user["avatar_url"],
        email: chosen?.email,
        email_verified: chosen !== undefined,
      },
    }
  },
}
