import { Effect } from "effect"
import { emailAddressSubject, KNOWN_ADDRESS, loginLimits } from "../rate-limit/limits.js"
import { Config } from "../../platform/config.js"
import * as rateLimit from "../rate-limit/service.js"

/*
 * The limits of an OTP mail (login start and resend, email change), in the order a stranger's
 * flood meets them: per client address, per email from that address (both counted before
 * anything else, committing on their own), then the all-addresses ceiling per email, counted
 * only for a mail that is really going to be sent.
 */

/** Per client address, then per email from that address; counts commit even when refused. */
export const limitSendPerAddress = (environmentId: string, emailNormalized: string, ip: string | undefined) => Effect.gen(function* () {
  const limits = loginLimits(yield* Config)
  yield* rateLimit.consumePerAddress(environmentId, limits.otpSendPerIp, ip)
  yield* rateLimit.consume(environmentId, limits.otpSendPerEmailAndIp, emailAddressSubject(emailNormalized, ip))
})

/** Whether this client address signed in as this email within 30 days (KNOWN_ADDRESS). */
export const isKnownAddress = (environmentId: string, emailNormalized: string, ip: string | undefined) =>
  rateLimit.isRemembered(environmentId, KNOWN_ADDRESS, emailAddressSubject(emailNormalized, ip))

/**
 * Counts a mail against the all-addresses ceiling of its email (429 past it). An address that
 * signed in as this email before passes (strangers who exhaust the ceiling cannot keep a
 * returning user from getting codes on their usual network).
 */
export const consumeMailCeiling = (environmentId: string, emailNormalized: string, known: boolean) => Effect.gen(function* () {
  const limits = loginLimits(yield* Config)
  yield* rateLimit.consume(environmentId, limits.otpSendPerEmail, emailNormalized).pipe(
    Effect.catchTag("RateLimited", (refusal) => known ? Effect.void : Effect.fail(refusal)))
})
