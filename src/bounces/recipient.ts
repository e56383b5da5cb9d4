import { Effect } from "effect"
import { Crypto } from "../platform/crypto.js"
import { HmacDataKeys } from "../platform/hmac-data-keys.js"
import { normalizeEmail } from "../users/repo.js"

/**
 * `recipientHash` of `email.delivery.bounced` (spec: 43 characters, base64url of an
 * HMAC-SHA256) of the normalized address, under a key derived per Workspace from the
 * `email-recipient` HMAC data key (src/platform/hmac-data-keys.ts), so one address hashes
 * differently in two Workspaces, a subscriber cannot test guesses without the key, and a
 * suppression stays found across master-key rotations. The same value keys deliveries and
 * suppressions: no address in clear.
 */
export const recipientHash = Effect.fnUntraced(function* (workspaceId: string, address: string) {
  const keys = yield* HmacDataKeys
  return (yield* keys.hmac("email-recipient", `email-recipient/${workspaceId}`, normalizeEmail(address))).toString(
    "base64url",
  )
})

/**
 * Every hash a stored row of this address may carry: the current one, then those made before
 * the data key existed (keyed by MASTER_KEY itself, and MASTER_KEY_PREVIOUS during a
 * rotation). Lookups and deletions use them all; new rows get the current one.
 */
export const recipientHashes = Effect.fnUntraced(function* (workspaceId: string, address: string) {
  const crypto = yield* Crypto
  const current = yield* recipientHash(workspaceId, address)
  const legacy = crypto
    .hmacCandidates(`email-recipient/${workspaceId}`, normalizeEmail(address))
    .map((mac) => mac.toString("base64url"))
  return { current, all: [current, ...legacy] }
})
