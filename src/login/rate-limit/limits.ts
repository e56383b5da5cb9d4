import type { AppConfig } from "../../platform/config.js"

/** One rate limit: at most `limit` hits per fixed window of `windowMs` for one subject. */
export interface Limit {
  readonly bucket: string
  readonly limit: number
  readonly windowMs: number
}

const MINUTE = 60_000

/**
 * The login rate limits (spec, Limits: "Rate-limit numbers and windows: not shown"; the
 * numbers are decisions recorded in docs/decisions.md). Every number comes from
 * `RATE_LIMIT_*` (src/platform/config.ts) so tests and benchmarks can raise them.
 * Windows are per Environment.
 */
export const loginLimits = (config: AppConfig) => {
  const r = config.rateLimits
  return {
    /** OTP mails (start and resend) per client IP. */
    otpSendPerIp: { bucket: "otp_send:ip", limit: r.ipPerMinute, windowMs: MINUTE },
    /** OTP mails (start and resend) per email address: a cap on mail bombing. */
    otpSendPerEmail: { bucket: "otp_send:email", limit: r.emailPerWindow, windowMs: 10 * MINUTE },
    /** OTP verifies per client IP. */
    otpVerifyPerIp: { bucket: "otp_verify:ip", limit: r.ipPerMinute, windowMs: MINUTE },
    /** OTP verifies per email address. */
    otpVerifyPerEmail: { bucket: "otp_verify:email", limit: r.otpVerifyPerEmailPerMinute, windowMs: MINUTE },
    /**
     * Wrong codes per email address across every challenge and resend (DESIGN: failures are
     * also capped per Environment + email, so new challenges do not buy more guesses).
     */
    otpFailuresPerEmail: { bucket: "otp_fail:email", limit: r.otpFailuresPerEmailPerHour, windowMs: 60 * MINUTE },
    /** Login transactions created (POST /auth/transactions and /oauth2/authorize) per client. */
    transactionsPerClient: { bucket: "txn_create:client", limit: r.clientPerMinute, windowMs: MINUTE },
  } satisfies Record<string, Limit>
}
