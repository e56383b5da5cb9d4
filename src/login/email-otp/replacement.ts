import { Effect } from "effect"
import { Config } from "../../platform/config.js"
import { Crypto, type makeCrypto } from "../../platform/crypto.js"
import { rateLimitAddress } from "../../platform/ip-prefix.js"
import { loginLimits } from "../../rate-limit/limits.js"
import * as rateLimit from "../../rate-limit/service.js"
import * as repo from "./repo.js"

/*
 * Who may change an email's one valid code (spec: Email OTP challenge, "One valid code at a
 * time per Environment + email + purpose"; docs/decisions/security-hardening.md: "Email OTP: who may change the
 * one valid code"). Any start used to replace the code, so a stranger could keep killing the
 * code someone was about to type. Now a start or resend changes the code freely only when
 * nobody else relies on it; a change against someone else is allowed a small budget per email,
 * and beyond it the start or resend is withheld: the same answer, no new code, no mail, and its
 * challenge verifies against the code already mailed to that address.
 */

const PURPOSE = "email-otp-issuer"
const issuerData = (environmentId: string, emailNormalized: string, ip: string | undefined) =>
  `${environmentId}\u0000${emailNormalized}\u0000${rateLimitAddress(ip)}`

/**
 * `issued_from` of a challenge: HMAC of the client address (IPv4, IPv6 /64: the rate-limit
 * unit), bound to Environment + email, so no IP is kept and two emails' rows cannot be linked.
 */
export const issuerOf = (
  crypto: ReturnType<typeof makeCrypto>,
  environmentId: string,
  emailNormalized: string,
  ip: string | undefined,
) => crypto.hmac(PURPOSE, issuerData(environmentId, emailNormalized, ip)).toString("base64url")

/** Whether `row` was issued from this client address (under either master key while one is being rotated). */
const issuedFrom = (crypto: ReturnType<typeof makeCrypto>, row: repo.ChallengeRow, ip: string | undefined) =>
  row.issued_from !== null &&
  crypto
    .hmacCandidates(PURPOSE, issuerData(row.environment_id, row.email_normalized, ip))
    .some((mac) => crypto.constantTimeEqual(mac.toString("base64url"), row.issued_from!))

export interface CodeChange {
  readonly environmentId: string
  readonly emailNormalized: string
  readonly purpose: "login"
  /** The caller's transaction. */
  readonly transactionId: string
  readonly ip: string | undefined
  /** The caller's address signed in as this email within 30 days (KNOWN_ADDRESS). */
  readonly known: boolean
  readonly now: Date
}

/**
 * May this start or resend change the email's code? Run under the email's lock. Yes when no
 * valid code exists; when every open challenge of the email (the code's holder and every
 * withheld one relying on it) is the caller's own (its transaction, or issued from its client
 * address); or when the caller's address signed in as this email before (a stranger cannot be
 * one). Otherwise the change goes against someone else: it counts against the per-email budget
 * (`otpCodeChangesPerEmail`) and is allowed only within it.
 */
export const mayChangeCode = Effect.fnUntraced(function* (c: CodeChange) {
  const crypto = yield* Crypto
  const open = yield* repo.openChallengesOfEmail(c.environmentId, c.emailNormalized, c.purpose, c.now)
  if (!open.some((row) => row.status === "active")) return true
  if (open.every((row) => row.transaction_id === c.transactionId || issuedFrom(crypto, row, c.ip))) return true
  if (c.known) return true
  return yield* rateLimit.take(c.environmentId, loginLimits(yield* Config).otpCodeChangesPerEmail, c.emailNormalized)
})
