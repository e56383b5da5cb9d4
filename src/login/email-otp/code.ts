import { Effect } from "effect"
import { Crypto, type makeCrypto } from "../../platform/crypto.js"

/** Spec, Limits: Email OTP is 6 digits. */
export const CODE_DIGITS = 6
const RANGE = 10 ** CODE_DIGITS
/** The largest multiple of 10^6 below 2^32: values at or above it are redrawn (no modulo bias). */
const UNBIASED_LIMIT = Math.floor(2 ** 32 / RANGE) * RANGE

/** A uniformly random 6-digit code from the CSPRNG. */
export const generateCode = Effect.gen(function* () {
  const crypto = yield* Crypto
  for (;;) {
    const bytes = yield* crypto.randomBytes(4)
    const n = Buffer.from(bytes).readUInt32BE(0)
    if (n < UNBIASED_LIMIT) return String(n % RANGE).padStart(CODE_DIGITS, "0")
  }
})

export const isCodeShape = (code: string) => /^[0-9]{6}$/.test(code)

/**
 * The stored form of a code (docs/architecture.md): HMAC-SHA256 under the master-key pepper over
 * challenge id + generation + code, so a code of an earlier generation or of another
 * challenge never matches, and the database alone cannot be brute-forced.
 */
export const codeHmac = (
  crypto: ReturnType<typeof makeCrypto>,
  challengeId: string,
  generation: number,
  code: string,
) => crypto.hmac("email-otp", `${challengeId}\u0000${generation}\u0000${code}`).toString("hex")

/**
 * Whether `code` matches the stored HMAC. During a master-key rotation the previous key's
 * HMAC is accepted too, so a code sent just before the switch still works for its 5 minutes.
 */
export const codeMatches = (
  crypto: ReturnType<typeof makeCrypto>,
  challengeId: string,
  generation: number,
  code: string,
  stored: string,
) =>
  crypto
    .hmacCandidates("email-otp", `${challengeId}\u0000${generation}\u0000${code}`)
    .map((mac) => crypto.constantTimeEqual(mac.toString("hex"), stored))
    .reduce((any, ok) => any || ok, false)
