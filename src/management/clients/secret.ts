import { Effect } from "effect"
import { Crypto, constantTimeEqual, sha256Hex } from "../../platform/crypto.js"
import type { ClientRow } from "./repo.js"

/**
 * Client secrets: 256 random bits as unpadded base64url (43 characters). Only their SHA-256
 * is stored (docs/architecture.md: high-entropy secrets are hashed, not stretched); the plain secret is
 * shown once, at creation or rotation.
 */
export const newClientSecret = Effect.gen(function* () {
  const crypto = yield* Crypto
  const secret = yield* crypto.randomToken(32)
  return { secret, hash: sha256Hex(secret) }
})

/** Whether `secret` is the client's current secret (constant-time on the hashes). */
export const clientSecretMatches = (client: Pick<ClientRow, "secret_hash">, secret: string): boolean =>
  client.secret_hash !== null && constantTimeEqual(sha256Hex(secret), client.secret_hash)

/** `web_spa` and `react_native` are public clients; `web_bff` holds a secret (spec: Authentication rule 1). */
export const allowedAuthMethods = {
  web_bff: ["client_secret_basic", "client_secret_post"],
  web_spa: ["none"],
  react_native: ["none"],
} as const satisfies Record<ClientRow["client_type"], ReadonlyArray<ClientRow["token_endpoint_auth_method"]>>
