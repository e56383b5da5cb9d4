import type { Crypto } from "../platform/crypto.js"

/**
 * The `state` sent to a provider (spec: Social login rule 2, "the transaction is recovered
 * from a signed transaction id inside state"; /me rule 2, "signed link state"): a reference
 * to a server-side `social_states` row, its expiry, and an HMAC-SHA256 over both and the
 * Environment under a key derived from MASTER_KEY (HKDF purpose `hmac/social-state`).
 * Form: `<reference>.<expiry unix seconds>.<mac>`, all base64url/decimal, so it survives
 * query strings and form posts untouched. The signature makes tampering and other
 * Environments' states fail before any lookup; the row makes it single-use.
 */

type CryptoShape = typeof Crypto.Service

const stateData = (environmentId: string, reference: string, expiresAtSeconds: number) =>
  `v1.${environmentId}.${reference}.${expiresAtSeconds}`
const mac = (crypto: CryptoShape, environmentId: string, reference: string, expiresAtSeconds: number) =>
  crypto.hmac("social-state", stateData(environmentId, reference, expiresAtSeconds)).toString("base64url")

export const signState = (crypto: CryptoShape, environmentId: string, reference: string, expiresAtMs: number) => {
  const exp = Math.floor(expiresAtMs / 1000)
  return `${reference}.${exp}.${mac(crypto, environmentId, reference, exp)}`
}

export type StateCheck =
  | { readonly ok: true; readonly reference: string }
  | { readonly ok: false; readonly reason: "malformed" | "bad_signature" | "expired" }

/** Checks form, signature (constant time) and expiry; only then is the reference trusted. */
export const verifyState = (crypto: CryptoShape, environmentId: string, state: string, nowMs: number): StateCheck => {
  const m = /^([A-Za-z0-9_-]{43})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(state)
  const [, reference, expText, given] = m ?? []
  if (reference === undefined || expText === undefined || given === undefined) return { ok: false, reason: "malformed" }
  const exp = Number(expText)
  // During a master-key rotation a state signed just before the switch (minutes long) still verifies.
  const signed = crypto
    .hmacCandidates("social-state", stateData(environmentId, reference, exp))
    .map((candidate) => crypto.constantTimeEqual(candidate.toString("base64url"), given))
    .includes(true)
  if (!signed) return { ok: false, reason: "bad_signature" }
  if (exp * 1000 <= nowMs) return { ok: false, reason: "expired" }
  return { ok: true, reference }
}
