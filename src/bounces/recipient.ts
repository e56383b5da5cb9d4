import type { makeCrypto } from "../platform/crypto.js"
import { normalizeEmail } from "../users/repo.js"

/**
 * `recipientHash` of `email.delivery.bounced` (spec: 43 characters, base64url of an
 * HMAC-SHA256): HMAC under a master-key-derived key per Workspace of the normalized address,
 * so one address hashes differently in two Workspaces and a subscriber cannot test guesses
 * without the key. The same value keys deliveries and suppressions: no address in clear.
 */
export const recipientHash = (crypto: ReturnType<typeof makeCrypto>, workspaceId: string, address: string) =>
  crypto.hmac(`email-recipient/${workspaceId}`, normalizeEmail(address)).toString("base64url")
