import type { AppConfig } from "../../platform/config.js"
import { rateLimitAddress } from "../../platform/ip-prefix.js"

/** One rate limit: at most `limit` hits per fixed window of `windowMs` for one subject. */
export interface Limit {
  readonly bucket: string
  readonly limit: number
  readonly windowMs: number
}

const MINUTE = 60_000

/**
 * The login rate limits (spec, Limits: "Rate-limit numbers and windows: not shown"; the
 * numbers and the reasoning are in docs/decisions.md, "Lockout-proof login rate limits").
 * Every number comes from `RATE_LIMIT_*` (src/platform/config.ts) so tests and benchmarks
 * can raise them. Windows are per Environment.
 *
 * The shape (issue 12): whatever a stranger can send is counted per client address first
 * (IPv4 address, IPv6 /64), so one address exhausts only its own budget; limits shared by
 * everyone (per client, per email from all addresses) are ceilings far above what one
 * address may spend, and a refused request never reaches them.
 */
export const loginLimits = (config: AppConfig) => {
  const r = config.rateLimits
  return {
    /** Login transactions created (POST /auth/transactions and /oauth2/authorize) per client address. */
    transactionsPerIp: { bucket: "txn_create:ip", limit: r.ipPerMinute, windowMs: MINUTE },
    /** ... and per client, from all addresses: a ceiling that protects the service, not a per-user limit. */
    transactionsPerClient: { bucket: "txn_create:client", limit: r.clientPerMinute, windowMs: MINUTE },
    /** OTP mails (start and resend) per client address. */
    otpSendPerIp: { bucket: "otp_send:ip", limit: r.ipPerMinute, windowMs: MINUTE },
    /** OTP mails to one email address from one client address. */
    otpSendPerEmailAndIp: { bucket: "otp_send:email+ip", limit: r.emailPerWindow, windowMs: 10 * MINUTE },
    /** OTP mails to one email address from all addresses: the mail-bomb ceiling (counted only for mails sent). */
    otpSendPerEmail: { bucket: "otp_send:email", limit: r.emailCeilingPerHour, windowMs: 60 * MINUTE },
    /**
     * Changes of an email's one valid code against someone else who relies on it, from all
     * addresses (src/login/email-otp/replacement.ts): a stranger cannot keep killing it.
     */
    otpCodeChangesPerEmail: { bucket: "otp_code_change:email", limit: r.otpCodeChangesPerEmailPer10Minutes, windowMs: 10 * MINUTE },
    /** OTP verifies per client address. */
    otpVerifyPerIp: { bucket: "otp_verify:ip", limit: r.ipPerMinute, windowMs: MINUTE },
    /** OTP verifies for one email address from one client address. */
    otpVerifyPerEmailAndIp: { bucket: "otp_verify:email+ip", limit: r.otpVerifyPerEmailPerMinute, windowMs: MINUTE },
    /**
     * Wrong codes for one email address from one client address, across every challenge and
     * resend (DESIGN: failures are also capped per Environment + email, so new challenges do
     * not buy more guesses). Once reached, that address's verifies are refused unread.
     */
    otpFailuresPerEmailAndIp: { bucket: "otp_fail:email+ip", limit: r.otpFailuresPerEmailPerHour, windowMs: 60 * MINUTE },
    /**
     * Wrong codes for one email address from all addresses. Once reached, only a challenge's
     * first attempt is still checked (the owner typing the code from their mail), so
     * strangers cannot lock the owner out, while guesses stay bounded by the mail ceiling.
     */
    otpFailuresPerEmail: { bucket: "otp_fail:email", limit: r.otpFailuresCeilingPerHour, windowMs: 60 * MINUTE },
  } satisfies Record<string, Limit>
}

/**
 * An address that signed in as an email within 30 days: its OTP mails to that email pass the
 * all-addresses mail ceiling (strangers who exhaust it cannot keep a returning user from
 * getting codes on their usual network); its per-address limits still apply.
 */
export const KNOWN_ADDRESS = { bucket: "otp_signed_in:email+ip", ttlMs: 30 * 24 * 3600_000 } as const

/** The subject of a per-address limit. */
export const addressSubject = (ip: string | undefined) => rateLimitAddress(ip)

/** The subject of a per email + address limit (NUL cannot occur in either part). */
export const emailAddressSubject = (emailNormalized: string, ip: string | undefined) => `${emailNormalized}\u0000${rateLimitAddress(ip)}`
