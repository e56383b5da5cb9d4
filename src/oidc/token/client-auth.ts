import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { constantTimeEqual, sha256Hex } from "../../platform/crypto.js"
import { OAuthError } from "../../http/errors.js"
import { readClientRow } from "../access-token/live-cache.js"
import type { OAuthClientRow } from "./client-repo.js"
import { invalidClient, invalidRequest } from "./errors.js"
import type { OAuthParams } from "./params.js"

/** How the caller presented itself (spec: Authentication, `/oauth2/token`). */
export type PresentedClient =
  | { readonly method: "none"; readonly clientId: string }
  | {
      readonly method: "client_secret_basic" | "client_secret_post"
      readonly clientId: string
      readonly secret: string
    }

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
 * Which credentials a request carries: HTTP Basic, or `client_id` (+ `client_secret`) in
 * the body. Using two methods at once is invalid_request (RFC 6749 2.3); no client id at
 * all is invalid_client. Synchronous: the listener's introspection from memory reads the same way.
 */
export const presentedClientOf = (
  authorization: string | undefined,
  bodyClientId: string | undefined,
  bodySecret: string | undefined,
): PresentedClient | OAuthError => {
  if (authorization !== undefined && /^Basic\b/i.test(authorization.trim())) {
    const basic = parseBasic(authorization)
    if (!basic)
      return invalidClient("The Authorization header is not valid HTTP Basic client authentication", {
        basicChallenge: true,
      })
    if (bodySecret !== undefined)
      return invalidRequest("Use one client authentication method, not Basic and client_secret together")
    if (bodyClientId !== undefined && bodyClientId !== basic.clientId)
      return invalidRequest("client_id in the body differs from the one in the Authorization header")
    return { method: "client_secret_basic", clientId: basic.clientId, secret: basic.secret }
  }
  if (bodyClientId === undefined)
    return invalidClient("Client authentication is missing: send client_id (and its secret for a confidential client)")
  if (bodySecret !== undefined) return { method: "client_secret_post", clientId: bodyClientId, secret: bodySecret }
  return { method: "none", clientId: bodyClientId }
}

/** `presentedClientOf` the current request and its parameters. */
export const presentedClient = Effect.fnUntraced(function* (params: OAuthParams) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const presented = presentedClientOf(
    request.headers["authorization"],
    yield* params.one("client_id"),
    yield* params.one("client_secret"),
  )
  return presented instanceof OAuthError ? yield* presented : presented
})

/** What a failed check says, and whether the answer carries the Basic challenge (RFC 6749 5.2). */
const refuse = (presented: PresentedClient, client: OAuthClientRow | undefined, description: string) =>
  invalidClient(description, {
    basicChallenge:
      presented.method === "client_secret_basic" || client?.token_endpoint_auth_method === "client_secret_basic",
  })

const METHOD_WORDS: Readonly<Record<PresentedClient["method"], string>> = {
  none: "client_id in the body without a secret (none)",
  client_secret_basic: "HTTP Basic (client_secret_basic)",
  client_secret_post: "client_id and client_secret in the body (client_secret_post)",
}

/**
 * Authenticates the client (spec: Authentication rule 1) against its row (undefined: no such
 * client). The client must use exactly the `token_endpoint_auth_method` it registered
 * (RFC 7591 2: the registered method is THE method; docs/decisions/rp-libraries.md): a public client (`none`)
 * sends only `client_id`, so a secret from it is invalid_client; a `client_secret_basic`
 * client must use HTTP Basic and a `client_secret_post` client the body. The secret is
 * compared as SHA-256 hex in constant time. Unknown, deleted and disabled clients are
 * invalid_client. The Basic challenge is sent only to callers that tried Basic or whose
 * client is registered for it.
 */
export const checkClient = (presented: PresentedClient, client: OAuthClientRow | undefined) => {
  if (!client) return refuse(presented, client, "Client authentication failed")
  if (client.status !== "active") return refuse(presented, client, "The client is disabled")
  const registered = client.token_endpoint_auth_method
  if (presented.method !== registered) {
    return refuse(
      presented,
      client,
      registered === "none"
        ? "A public client must not send a client secret: send only client_id"
        : `Client authentication failed: this client is registered for ${registered} and must authenticate with ${METHOD_WORDS[registered]}, not ${METHOD_WORDS[presented.method]}`,
    )
  }
  if (presented.method === "none") return client
  if (client.secret_hash === null || !constantTimeEqual(sha256Hex(presented.secret), client.secret_hash)) {
    return refuse(presented, client, "Client authentication failed")
  }
  return client
}

/** Looks the client up and authenticates it (introspection; the grants read it with their own row). */
export const authenticateClient = Effect.fnUntraced(function* (environmentId: string, presented: PresentedClient) {
  // Through the replica's memory (src/oidc/access-token/live-cache.ts): the row, never a verdict; the secret is checked below every time.
  const checked = checkClient(presented, yield* readClientRow(environmentId, presented.clientId))
  return checked instanceof OAuthError ? yield* checked : checked
})
