import * as oidc from "openid-client"
import type { CookieAttributes } from "./cookies.js"
import { IssuerUnavailableError } from "./errors.js"
import { isLocalHost } from "./origin.js"
import { makeRefresher, type Refresher } from "./refresh.js"
import { makeSealer, type Sealer } from "./seal.js"

export interface AuthOptions {
  /** The Environment's issuer, `{scheme}://{host}/e/{environment_id}`. */
  readonly issuer: string
  readonly clientId: string
  /** A `web_bff` client's secret (kept on the server; never reaches the browser). */
  readonly clientSecret?: string
  /** How the secret is sent to the token endpoint. Default `client_secret_basic`. */
  readonly tokenEndpointAuthMethod?: "client_secret_basic" | "client_secret_post"
  /** Registered redirect URI; its path must be `{basePath}/callback`. */
  readonly redirectUri: string
  /** Registered post-logout redirect URI (RP-initiated logout). */
  readonly postLogoutRedirectUri: string
  /** Default `openid profile email offline_access` (offline_access: a refresh token). */
  readonly scope?: string
  /** Where mountAuthRoutes puts login/callback/logout. Default `/auth`. */
  readonly basePath?: string
  /** Seals the cookies. A list rotates keys: the first seals, all open. At least 32 characters each. */
  readonly cookieSecret: string | ReadonlyArray<string>
  /** Cookie name stem. Default `authservice` (`authservice_session`, `authservice_login`). */
  readonly cookieName?: string
  /** Session cookie lifetime in seconds, renewed on every refresh. Default 30 days (the refresh family's idle limit). */
  readonly sessionMaxAgeSeconds?: number
  /** Refresh this many seconds before the access token expires. Default 30. */
  readonly refreshBeforeExpirySeconds?: number
  /** Fetch used for discovery and the token endpoint (a proxy, a test double). Default global fetch. */
  readonly fetch?: typeof fetch
  /** The clock (epoch ms) deciding expiry and refresh. Default Date.now. */
  readonly now?: () => number
}

/** The server auth object: configuration plus the shared state (discovery, refreshes in flight). */
export interface Auth {
  readonly basePath: string
  readonly issuer: string
  readonly clientId: string
  readonly redirectUri: string
  readonly postLogoutRedirectUri: string
  readonly scope: string
  /** Origin of the application (from redirectUri): CSRF checks and return-to paths compare with it. */
  readonly appOrigin: string
  readonly cookies: { readonly session: string; readonly login: string; readonly attributes: CookieAttributes }
  readonly sessionMaxAgeSeconds: number
  readonly refreshBeforeExpiryMs: number
  readonly now: () => number
  /** Discovered issuer configuration (cached; a failure is not cached and is IssuerUnavailableError). */
  readonly configuration: () => Promise<oidc.Configuration>
  readonly sealer: Sealer
  readonly refresher: Refresher
}

const DEFAULT_SCOPE = "openid profile email offline_access"
const THIRTY_DAYS_SECONDS = 30 * 24 * 3600

const parseUrl = (name: string, value: string): URL => {
  try {
    return new URL(value)
  } catch {
    throw new TypeError(`createAuth: ${name} must be an absolute URL (got ${JSON.stringify(value)})`)
  }
}

/** https everywhere except a local development machine. */
const requireSecureUrl = (name: string, url: URL) => {
  if (url.protocol === "https:") return
  if (url.protocol === "http:" && isLocalHost(url.hostname)) return
  throw new TypeError(`createAuth: ${name} must use https (http is accepted only for localhost)`)
}

const normaliseBasePath = (value: string) => {
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(value) || value.includes("//")) {
    throw new TypeError(`createAuth: basePath must be a path such as "/auth" (got ${JSON.stringify(value)})`)
  }
  return value.length > 1 && value.endsWith("/") ? value.slice(0, -1) : value
}

export const createAuth = (options: AuthOptions): Auth => {
  const issuerUrl = parseUrl("issuer", options.issuer)
  requireSecureUrl("issuer", issuerUrl)
  const redirect = parseUrl("redirectUri", options.redirectUri)
  requireSecureUrl("redirectUri", redirect)
  requireSecureUrl("postLogoutRedirectUri", parseUrl("postLogoutRedirectUri", options.postLogoutRedirectUri))
  if (typeof options.clientId !== "string" || options.clientId === "")
    throw new TypeError("createAuth: clientId is required")
  const basePath = normaliseBasePath(options.basePath ?? "/auth")
  const secrets = typeof options.cookieSecret === "string" ? [options.cookieSecret] : [...options.cookieSecret]
  const sealer = makeSealer(secrets)
  const secure = redirect.protocol === "https:"
  // __Host-: the browser accepts the cookie only with Secure, Path=/ and no Domain, so a
  // sibling subdomain cannot plant or overwrite it (RFC 6265bis 4.1.3.2).
  const stem = `${secure ? "__Host-" : ""}${options.cookieName ?? "authservice"}`
  const now = options.now ?? Date.now
  const fetchImpl = options.fetch

  let discovered: Promise<oidc.Configuration> | undefined
  const discover = async () => {
    const auth =
      options.clientSecret === undefined
        ? oidc.None()
        : options.tokenEndpointAuthMethod === "client_secret_post"
          ? oidc.ClientSecretPost(options.clientSecret)
          : oidc.ClientSecretBasic(options.clientSecret)
    const execute = issuerUrl.protocol === "http:" ? [oidc.allowInsecureRequests] : []
    return oidc.discovery(issuerUrl, options.clientId, undefined, auth, {
      execute,
      ...(fetchImpl === undefined ? {} : { [oidc.customFetch]: fetchImpl as oidc.CustomFetch }),
    })
  }
  const configuration = () => {
    discovered ??= discover().catch((cause: unknown) => {
      discovered = undefined // retry on the next request instead of caching the outage
      throw new IssuerUnavailableError("OpenID Provider discovery failed", { cause })
    })
    return discovered
  }

  const self: Auth = {
    basePath,
    issuer: options.issuer,
    clientId: options.clientId,
    redirectUri: redirect.href,
    postLogoutRedirectUri: options.postLogoutRedirectUri,
    scope: options.scope ?? DEFAULT_SCOPE,
    appOrigin: redirect.origin,
    cookies: { session: `${stem}_session`, login: `${stem}_login`, attributes: { secure } },
    sessionMaxAgeSeconds: options.sessionMaxAgeSeconds ?? THIRTY_DAYS_SECONDS,
    refreshBeforeExpiryMs: (options.refreshBeforeExpirySeconds ?? 30) * 1000,
    now,
    configuration,
    sealer,
    refresher: makeRefresher({ configuration, now }),
  }
  return self
}
