import { Effect } from "effect"
import type { RateLimited } from "../../http/errors.js"
import type { loginLimits } from "../../rate-limit/limits.js"
import * as rateLimit from "../../rate-limit/service.js"
import * as repo from "./repo.js"

// How many wrong codes a challenge takes (spec, Limits: "max 5 wrong verifies (the 5th
// invalidates)"), and what a wrong code counts besides: the per-email failure counters that
// outlive the challenge, so a resend or a new start buys no guesses. The bookkeeping commits
// before the error is answered (docs/architecture.md, Security model).

export const MAX_FAILED_ATTEMPTS = 5

type FailureLimits = Pick<ReturnType<typeof loginLimits>, "otpFailuresPerEmailAndIp" | "otpFailuresPerEmail">

/**
 * A wrong code for an open challenge: one attempt of the challenge (the 5th invalidates it),
 * one failure of the email from this address, one of the email from all addresses.
 */
export const countWrongCode = (input: {
  readonly environmentId: string
  readonly challengeId: string
  readonly emailNormalized: string
  /** The email-and-address subject (`emailAddressSubject`). */
  readonly emailAndIp: string
  readonly limits: FailureLimits
  readonly now: Date
}) =>
  Effect.gen(function* () {
    const counted = yield* repo.recordFailure({
      environmentId: input.environmentId,
      id: input.challengeId,
      maxFailures: MAX_FAILED_ATTEMPTS,
      now: input.now,
    })
    yield* rateLimit.record(input.environmentId, input.limits.otpFailuresPerEmailAndIp, input.emailAndIp)
    yield* rateLimit.record(input.environmentId, input.limits.otpFailuresPerEmail, input.emailNormalized)
    return { invalidated: counted?.status === "invalidated" }
  })

/**
 * Past the email's all-addresses failure ceiling, only the first attempt of a challenge whose
 * own code was mailed is still checked: withheld challenges were never bounded by the mail
 * ceiling, so they would give every start a free guess.
 */
export const isPastFailureCeiling = (ceiling: RateLimited | undefined, challenge: repo.ChallengeRow) =>
  ceiling !== undefined && (challenge.failed_attempts > 0 || challenge.status === "withheld")
