import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { constantTimeEqual, sha256Hex } from "../../platform/crypto.js"
import { OAuthError } from "../../http/errors.js"
import { clientById, type OAuthClientRow } from "./client-repo.js"
import { invalidClient, invalidRequest } from "./errors.js"
import type { OAuthParams } from "./params.js"

/** How the caller presented itself (spec: Authentication, `/oauth2/token`). */
export type PresentedClient =
  | { readonly method: "none"; readonly clientId: string }
  | { readonly method: "client_secret_basic" | "client_secret_post"; readonly clientId: string; readonly secret: string }

/** RFC 6749 2.3.1: client id and secret are form-urlencoded before Basic encoding. */
const formDecode = (value: string) => {
  try {
    return decodeURIComponent(value.replace(/\+/g, " "))
  } catch {
    return undefined
  }
}

const parseBasic = (header: string) => {
  const m = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim())
  if (!m) return undefined
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return undefined
  const clientId = formDecode(decoded.slice(0, colon))
  const secret = formDecode(decoded.slice(colon + 1))
  return clientId === undefined || secret === undefined ? undefined : { clientId, secret }
}

/**
 * Which credentials the request carries: HTTP Basic, or `client_id` (+ `client_secret`) in
 * the body. Using two methods at once is invalid_request (RFC 6749 2.3); no client id at
 * all is invalid_client.
 */
export const presentedClient = (params: OAuthParams) => Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const authorization = request.headers["authorization"]
  const bodyClientId = yield* params.one("client_id")
  const bodySecret = yield* params.one("client_secret")
  if (authorization !== undefined && /^Basic\b/i.test(authorization.trim())) {
    const basic = parseBasic(authorization)
    if (!basic) return yield* invalidClient("The Authorization header is not valid HTTP Basic client authentication")
    if (bodySecret !== undefined) return yield* invalidRequest("Use one client authentication method, not Basic and client_secret together")
    if (bodyClientId !== undefined && bodyClientId !== basic.clientId) {
      return yield* invalidRequest("client_id in the body differs from the one in the Authorization header")
    }
    return { method: "client_secret_basic", clientId: basic.clientId, secret: basic.secret } satisfies PresentedClient as PresentedClient
  }
  if (bodyClientId === undefined) return yield* invalidClient("Client authentication is missing: send client_id (and its secret for a confidential client)")
  if (bodySecret !== undefined) return { method: "client_secret_post", clientId: bodyClientId, secret: bodySecret } as PresentedClient
  return { method: "none", clientId: bodyClientId } as PresentedClient
})

/**
 * Authenticates the client (spec: Authentication rule 1) against its row (undefined: no such
 * client). Public clients (method `none`) send only `client_id`: a secret from them is
 * invalid_client. Confidential (web_bff) clients send their secret by `client_secret_basic`
 * or `client_secret_post` (either is accepted, decisions.md); it is compared as SHA-256 hex
 * in constant time. Unknown, deleted and disabled clients are invalid_client.
 */
export const checkClient = (presented: PresentedClient, client: OAuthClientRow | undefined) => {
  if (!client) return invalidClient("Client authentication failed")
  if (client.status !== "active") return invalidClient("The client is disabled")
  const confidential = client.token_endpoint_auth_method !== "none"
  if (!confidential) return presented.method === "none" ? client : invalidClient("A public client must not send a client secret")
  if (presented.method === "none" || client.secret_hash === null) {
    return invalidClient("Client authentication failed: this client must authenticate with its secret")
  }
  if (!constantTimeEqual(sha256Hex(presented.secret), client.secret_hash)) return invalidClient("Client authentication failed")
  return client
}

/** Looks the client up and authenticates it (introspection; the grants read it with their own row). */
export const authenticateClient = (environmentId: string, presented: PresentedClient) => Effect.gen(function* () {
  const checked = checkClient(presented, yield* clientById(environmentId, presented.clientId))
  return checked instanceof OAuthError ? yield* checked : checked
})
