import * as oidc from "openid-client"
import { type CachePolicy, type Loaded, maxAgeOf } from "./refreshing-cache.js"
import type { DiscoveryDocument, ProviderCall } from "./types.js"

/**
 * OpenID Provider discovery (OIDC Discovery 1.0 4) through a per-process cache: a provider's
 * document is fetched once per lifetime (1 hour, or its Cache-Control max-age between 5
 * minutes and 24 hours), not at every start and callback. The cache keeps the response bytes
 * and openid-client's `discovery` runs on them each time, so its checks (status, JSON object,
 * `issuer` equal to the one asked for, Microsoft's `{tenantid}` template) apply to every use
 * exactly as to a fresh fetch. Only a document that passed them is cached.
 */
export const DISCOVERY_CACHE_POLICY: CachePolicy = {
  defaultTtlMs: 3600_000,
  minTtlMs: 5 * 60_000,
  maxTtlMs: 24 * 3600_000,
  retryAfterFailureMs: 60_000,
  maxEntries: 1000,
}

const TIMEOUT_SECONDS = 10

/** A client id for the validating fetch only (openid-client wants one; nothing is sent with it). */
const VALIDATION_CLIENT_ID = "discovery-check"

/** Fetches the issuer's document through the call's guarded fetch; cached only once openid-client accepted it. */
const fetchDocument = async (issuer: URL, fetchImpl: oidc.CustomFetch): Promise<Loaded<DiscoveryDocument>> => {
  let captured: { document: DiscoveryDocument; cacheControl: string | null } | undefined
  const capture: oidc.CustomFetch = async (url, options) => {
    const response = await fetchImpl(url, options)
    const body = await response.text()
    captured = {
      document: { url, body, contentType: response.headers.get("content-type") ?? "" },
      cacheControl: response.headers.get("cache-control"),
    }
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
  }
  await oidc.discovery(issuer, VALIDATION_CLIENT_ID, undefined, undefined, {
    [oidc.customFetch]: capture,
    timeout: TIMEOUT_SECONDS,
  })
  if (captured === undefined) throw new Error("discovery made no request")
  return { value: captured.document, maxAgeMs: maxAgeOf(captured.cacheControl) }
}

/** Serves the cached response to openid-client's discovery request (and nothing else). */
const replay =
  (document: DiscoveryDocument): oidc.CustomFetch =>
  async (url) => {
    if (url !== document.url) throw new Error(`discovery replay: unexpected request for ${new URL(url).pathname}`)
    return new Response(document.body, { status: 200, headers: { "content-type": document.contentType } })
  }

/**
 * openid-client's Configuration for the call's client at `issuer`, from the cached document
 * (one request per issuer per lifetime; concurrent first uses share it). Requests after
 * discovery (token endpoint, UserInfo) go through the call's guarded fetch.
 */
export const discover = async (
  call: ProviderCall,
  issuer: URL,
  clientId: string,
  metadata: Partial<oidc.ClientMetadata>,
  auth: oidc.ClientAuth,
): Promise<oidc.Configuration> => {
  const document = await call.discovery.get(issuer.href, call.nowMs, () => fetchDocument(issuer, call.fetch))
  const config = await oidc.discovery(issuer, clientId, metadata, auth, {
    [oidc.customFetch]: replay(document),
    timeout: TIMEOUT_SECONDS,
  })
  config[oidc.customFetch] = call.fetch
  return config
}
