import type { AppConfig } from "../platform/config.js"
import { rateLimitAddress } from "../platform/ip-prefix.js"

/** One rate limit: at most `limit` hits per fixed window of `windowMs` for one subject. */
export interface Limit {
  readonly bucket: string
  readonly limit: number
  readonly windowMs: number
}

const MINUTE = 60_000

/**
 * A limit per client address with its IPv6 aggregates: the address (IPv4 address, IPv6 /64),
 * then, for IPv6, its /56 and /48 (a site and an organisation hold many /64s; without these
 * one /56 had 256 per-address budgets, enough to reach the per-client ceiling).
 */
export interface AddressLimits {
  readonly address: Limit
  readonly network56: Limit
  readonly network48: Limit
  /** The family's per-Environment ceiling, counted last (only requests every address limit let through). */
  readonly ceiling?: Limit
}

const perAddress = (bucket: string, r: AppConfig["rateLimits"]): AddressLimits => ({
  address: { bucket: `${bucket}:ip`, limit: r.ipPerMinute, windowMs: MINUTE },
  network56: { bucket: `${bucket}:ipv6/56`, limit: r.ipv6Network56PerMinute, windowMs: MINUTE },
  network48: { bucket: `${bucket}:ipv6/48`, limit: r.ipv6Network48PerMinute, windowMs: MINUTE },
})

/**
 * The login rate limits (spec, Limits: "Rate-limit numbers and windows: not shown"; the
 * numbers and the reasoning are in docs/decisions/rate-limits-and-caches.md, "Lockout-proof login rate limits").
 * Every number comes from `RATE_LIMIT_*` (src/platform/config.ts) so tests and benchmarks
 * can raise them. Windows are per Environment.
 *
 * The shape (docs/decisions/rate-limits-and-caches.md): whatever a stranger can send is counted per client address first
 * (IPv4 address, IPv6 /64, then the /56 and /48 around it), so one address exhausts only its own budget; limits shared by
 * everyone (per client, per email from all addresses) are ceilings far above what one
 * address may spend, and a refused request never reaches them.
 */
export const loginLimits = (config: AppConfig) => {
  const r = config.rateLimits
  return {
    /** Login transactions created (POST /auth/transactions and /oauth2/authorize) per client address. */
    transactionsPerIp: perAddress("txn_create", r),
    /** ... and per client, from all addresses: a ceiling that protects the service, not a per-user limit. */
    transactionsPerClient: { bucket: "txn_create:client", limit: r.clientPerMinute, windowMs: MINUTE },
    /** OTP mails (start and resend) per client address. */
    otpSendPerIp: perAddress("otp_send", r),
    /** OTP mails to one email address from one client address. */
    otpSendPerEmailAndIp: { bucket: "otp_send:email+ip", limit: r.emailPerWindow, windowMs: 10 * MINUTE },
    /** OTP mails to one email address from all addresses: the mail-bomb ceiling (counted only for mails sent). */
    otpSendPerEmail: { bucket: "otp_send:email", limit: r.emailCeilingPerHour, windowMs: 60 * MINUTE },
    /**
     * Changes of an email's one valid code against someone else who relies on it, from all
     * addresses (src/login/email-otp/replacement.ts): a stranger cannot keep killing it.
     */
    otpCodeChangesPerEmail: {
      bucket: "otp_code_change:email",
      limit: r.otpCodeChangesPerEmailPer10Minutes,
      windowMs: 10 * MINUTE,
    },
    /** OTP verifies per client address. */
    otpVerifyPerIp: perAddress("otp_verify", r),
    /** OTP verifies for one email address from one client address. */
    otpVerifyPerEmailAndIp: { bucket: "otp_verify:email+ip", limit: r.otpVerifyPerEmailPerMinute, windowMs: MINUTE },
    /**
     * Wrong codes for one email address from one client address, across every challenge and
     * resend (docs/architecture.md: failures are also capped per Environment + email, so new challenges do
     * not buy more guesses). Once reached, that address's verifies are refused unread.
     */
    otpFailuresPerEmailAndIp: {
      bucket: "otp_fail:email+ip",
      limit: r.otpFailuresPerEmailPerHour,
      windowMs: 60 * MINUTE,
    },
    /**
     * Wrong codes for one email address from all addresses. Once reached, only a challenge's
     * first attempt is still checked (the owner typing the code from their mail), so
     * strangers cannot lock the owner out, while guesses stay bounded by the mail ceiling.
     */
    otpFailuresPerEmail: { bucket: "otp_fail:email", limit: r.otpFailuresCeilingPerHour, windowMs: 60 * MINUTE },
  } satisfies Record<string, Limit | AddressLimits>
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
export const emailAddressSubject = (emailNormalized: string, ip: string | undefined) =>
  `${emailNormalized}\u0000${rateLimitAddress(ip)}`
