import { Effect } from "effect"
import { emailAddressSubject, KNOWN_ADDRESS, loginLimits } from "../../rate-limit/limits.js"
import { Config } from "../../platform/config.js"
import * as rateLimit from "../../rate-limit/service.js"

/*
 * The limits of an OTP mail (login start and resend, email change), narrowest first: per
 * email from the client address, then per client address (both counted before anything
 * else, committing on their own), then the all-addresses ceiling per email, counted only for
 * a mail that is really going to be sent. A request refused by a narrower limit is not counted
 * by a wider one: a caller flooding one email does not spend the budget of everyone else
 * behind its address (decisions: "Every 429 names its limit").
 */

/** Per email from the client address, then per client address; counts commit even when refused. */
export const limitSendPerAddress = Effect.fnUntraced(function* (
  environmentId: string,
  emailNormalized: string,
  ip: string | undefined,
) {
  const limits = loginLimits(yield* Config)
  yield* rateLimit.consumeAll(environmentId, [
    { limit: limits.otpSendPerEmailAndIp, subject: emailAddressSubject(emailNormalized, ip) },
    ...rateLimit.addressSteps(limits.otpSendPerIp, ip),
  ])
})

/** Whether this client address signed in as this email within 30 days (KNOWN_ADDRESS). */
export const isKnownAddress = (environmentId: string, emailNormalized: string, ip: string | undefined) =>
  rateLimit.isRemembered(environmentId, KNOWN_ADDRESS, emailAddressSubject(emailNormalized, ip))

/**
 * Counts a mail against the all-addresses ceiling of its email (429 past it). An address that
 * signed in as this email before passes (strangers who exhaust the ceiling cannot keep a
 * returning user from getting codes on their usual network).
 */
export const consumeMailCeiling = Effect.fnUntraced(function* (
  environmentId: string,
  emailNormalized: string,
  known: boolean,
) {
  const limits = loginLimits(yield* Config)
  yield* rateLimit
    .consume(environmentId, limits.otpSendPerEmail, emailNormalized)
    .pipe(Effect.catchTag("RateLimited", (refusal) => (known ? Effect.void : Effect.fail(refusal))))
})
