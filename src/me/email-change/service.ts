import { Clock, Effect } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest } from "../../http/errors.js"
import { isAddressSuppressed } from "../../bounces/suppression.js"
import { codeHmac, codeMatches, generateCode, isCodeShape } from "../../login/email-otp/code.js"
import { InvalidCode } from "../../login/email-otp/errors.js"
import { enqueueLoginCodeMail } from "../../login/email-otp/mail-job.js"
import * as otp from "../../login/email-otp/repo.js"
import { consumeMailCeiling, isKnownAddress } from "../../login/email-otp/send-limits.js"
import { countWrongCode } from "../../login/email-otp/attempts.js"
import { CHALLENGE_TTL_MS } from "../../login/email-otp/service.js"
import { emailAddressSubject, loginLimits } from "../../rate-limit/limits.js"
import * as rateLimit from "../../rate-limit/service.js"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto } from "../../platform/crypto.js"
import { maskEmail } from "../../platform/events/schema.js"
import { Events } from "../../platform/events/service.js"
import { Ids } from "../../platform/ids.js"
import { CurrentRequest } from "../../platform/request-context.js"
import { EmailAlreadyRegistered } from "../../users/errors.js"
import { normalizeEmail, type UserRow, userByEmail } from "../../users/repo.js"
import { Users } from "../../users/service.js"
import { CurrentMe, type Me } from "../auth.js"
import { actorOf, lockMe } from "../lock.js"
import { unavailableOnSqlError } from "../unavailable.js"
import { enqueueEmailChangeNotice } from "./notice-job.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

// Email change (spec: Self-service /me, email change rows; /me rule 3; Limits: email-change
// challenge 5 minutes, Email OTP 6 digits, 5 wrong verifies): start mails a code to the
// CURRENT address, verify-old proves it and mails a code to the NEW address, verify-new
// proves that and switches. Challenges are Email OTP challenge rows (the same code, HMAC,
// attempt counting and mail job), told apart by purpose. There is no resend route: a new
// start replaces the user's active challenge.

const taken = (environmentId: string, emailNormalized: string, me: Me) =>
  Effect.map(userByEmail(environmentId, emailNormalized), (u) => u !== undefined && u.id !== me.userId)

const emailTaken = () => new EmailAlreadyRegistered({ detail: "Another account already uses this email address" })

const limitsAndIp = Effect.gen(function* () {
  const request = yield* CurrentRequest
  return { limits: loginLimits(yield* Config), ip: request?.ip ?? "unknown" }
})

/** The 202 answer of start and verify-old. */
const challengeInfo = (row: repo.EmailChangeChallengeRow) => ({
  challenge_id: row.id,
  expires_at: row.expires_at.toISOString(),
})

/** Mails a stage's code (sealed in the job; the same task as login codes) and stores its HMAC. */
const issueChallenge = Effect.fnUntraced(function* (
  user: UserRow,
  stage: repo.EmailChangeStage,
  to: string,
  newEmail: string,
  deliver: boolean,
) {
  const ids = yield* Ids
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const id = yield* ids.make("chl")
  const code = yield* generateCode
  yield* repo.supersedeActiveOfUser(user.environment_id, user.id, new Date(now))
  const row = yield* repo.insertEmailChangeChallenge({
    id,
    workspaceId: user.workspace_id,
    environmentId: user.environment_id,
    userId: user.id,
    purpose: stage,
    email: to,
    emailNormalized: normalizeEmail(to),
    newEmail,
    codeHmac: codeHmac(crypto, id, 1, code),
    now: new Date(now),
    expiresAt: new Date(now + CHALLENGE_TTL_MS),
  })
  yield* enqueueLoginCodeMail({
    environmentId: user.environment_id,
    challengeId: id,
    generation: 1,
    to,
    code,
    deliver,
    purpose: stage,
  })
  return row
})

const audit = Effect.fnUntraced(function* (
  me: Me,
  action: string,
  details: Record<string, unknown>,
  result?: "failure",
) {
  const env = yield* CurrentEnvironment
  yield* (yield* Audit).append({
    workspaceId: env.record.workspaceId,
    environmentId: env.record.id,
    actor: actorOf(me),
    action,
    subjectType: "user",
    subjectId: me.userId,
    details,
    ...(result ? { result } : {}),
  })
})

/**
 * POST /me/email/change/start. A malformed address is 400; the caller's own address 400; an
 * address of another account 409 `email_already_registered` (checked again at each later
 * step). The code goes to the current address (not delivered when it is suppressed: it
 * bounced). Sends are rate-limited like Email OTP sends, for both addresses.
 */
export const startEmailChange = Effect.fnUntraced(function* (newEmail: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  const newNormalized = normalizeEmail(newEmail)
  if (newNormalized === me.user.email_normalized)
    return yield* new InvalidRequest({ detail: "new_email is already the address of your account" })
  if (yield* unavailableOnSqlError(taken(env.record.id, newNormalized, me))) return yield* emailTaken()
  const { limits, ip } = yield* limitsAndIp
  // Both addresses get a code: each counted as Email OTP mails are (per address from this
  // client address, and the all-addresses ceiling), so many accounts cannot bomb one address.
  // As for sign-in codes, an address that signed in as that email passes the ceiling, so a
  // flood of strangers' sign-in starts cannot block the user's own change. Narrowest first
  // (decisions: "Every 429 names its limit"): a request refused per email from this address
  // is not counted against the address's budget, which others behind it share.
  const addresses = [me.user.email_normalized, newNormalized]
  for (const address of addresses) {
    yield* unavailableOnSqlError(
      rateLimit.consume(env.record.id, limits.otpSendPerEmailAndIp, emailAddressSubject(address, ip)),
    )
  }
  yield* unavailableOnSqlError(rateLimit.consumePerAddress(env.record.id, limits.otpSendPerIp, ip))
  for (const address of addresses) {
    const known = yield* unavailableOnSqlError(isKnownAddress(env.record.id, address, ip))
    yield* unavailableOnSqlError(consumeMailCeiling(env.record.id, address, known))
  }
  return yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        const user = yield* lockMe(me)
        const row = yield* issueChallenge(user, "email_change_old", user.email, newEmail, !user.email_suppressed)
        yield* audit(me, "user.email_change_started", { challenge_id: row.id, masked_new_email: maskEmail(newEmail) })
        return challengeInfo(row)
      }),
    ),
  )
}, withCallSpan("me.startEmailChange"))

type Checked =
  | { readonly kind: "right"; readonly row: repo.EmailChangeChallengeRow; readonly now: number }
  | { readonly kind: "wrong"; readonly invalidated: boolean }
  | { readonly kind: "expired" }
  | { readonly kind: "dead" }

/**
 * Locks the caller's challenge of this stage and checks the code. A wrong code counts an
 * attempt (the 5th invalidates the challenge) and a failure for the address; the caller
 * commits that before it answers the error (docs/architecture.md: failure bookkeeping commits).
 */
const checkCode = Effect.fnUntraced(function* (
  me: Me,
  stage: repo.EmailChangeStage,
  challengeId: string,
  code: string,
) {
  const env = yield* CurrentEnvironment
  const crypto = yield* Crypto
  const { limits, ip } = yield* limitsAndIp
  const now = yield* Clock.currentTimeMillis
  const row = yield* repo.lockEmailChangeChallenge(env.record.id, me.userId, challengeId, stage)
  if (row?.status !== "active") return { kind: "dead" } as Checked
  if (row.expires_at.getTime() <= now) return { kind: "expired" } as Checked
  // Under either master key during a rotation: a code sent by a process on the other side of the
  // switch still works for its 5 minutes (docs/master-key-rotation.md).
  if (!codeMatches(crypto, row.id, row.generation, code, row.code_hmac)) {
    const counted = yield* countWrongCode({
      environmentId: env.record.id,
      challengeId: row.id,
      emailNormalized: row.email_normalized,
      emailAndIp: emailAddressSubject(me.user.email_normalized, ip),
      limits,
      now: new Date(now),
    })
    yield* audit(me, "user.email_change_failed", { challenge_id: row.id, stage, reason: "invalid_code" }, "failure")
    return { kind: "wrong", invalidated: counted.invalidated } as Checked
  }
  return { kind: "right", row, now } as Checked
})

/**
 * Rate limits of a verify, counted before the check (they commit even when it is refused),
 * narrowest first: a verify refused for this email from this address (too many wrong codes,
 * too many verifies) is not counted against the address's budget, which others behind it share.
 */
const verifyLimits = Effect.fnUntraced(function* (me: Me, code: string) {
  const env = yield* CurrentEnvironment
  if (!isCodeShape(code)) return yield* new InvalidRequest({ detail: "code must be 6 digits" })
  const { limits, ip } = yield* limitsAndIp
  const emailAndIp = emailAddressSubject(me.user.email_normalized, ip)
  yield* unavailableOnSqlError(rateLimit.ensureNotExhausted(env.record.id, limits.otpFailuresPerEmailAndIp, emailAndIp))
  yield* unavailableOnSqlError(rateLimit.consume(env.record.id, limits.otpVerifyPerEmailAndIp, emailAndIp))
  yield* unavailableOnSqlError(rateLimit.consumePerAddress(env.record.id, limits.otpVerifyPerIp, ip))
})

const refuse = (checked: Exclude<Checked, { kind: "right" }>) => {
  switch (checked.kind) {
    case "wrong":
      return new InvalidCode({
        detail: checked.invalidated ? "Wrong code; too many attempts, start the email change again" : "Wrong code",
      })
    case "expired":
      return new InvalidCode({ detail: "The code has expired; start the email change again" })
    case "dead":
      return new InvalidCode({ detail: "The code is no longer valid; start the email change again" })
  }
}

/**
 * POST /me/email/change/verify-old: proves the current address. The new address is checked
 * again (409 when another account took it meanwhile: the challenge is spent), then its own
 * code is mailed to it; 202 with the new challenge.
 */
export const verifyOldEmail = Effect.fnUntraced(function* (challengeId: string, code: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  yield* verifyLimits(me, code)
  const outcome = yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        const user = yield* lockMe(me)
        const checked = yield* checkCode(me, "email_change_old", challengeId, code)
        if (checked.kind !== "right") return checked
        const { row, now } = checked
        // The code went to the address the user had at start; it proves nothing about another one.
        if (row.email_normalized !== user.email_normalized) return { kind: "dead" } as const
        if (yield* taken(env.record.id, normalizeEmail(row.new_email), me)) {
          yield* otp.finishChallenge({
            environmentId: env.record.id,
            id: row.id,
            status: "consumed",
            now: new Date(now),
          })
          return { kind: "taken" } as const
        }
        yield* otp.finishChallenge({ environmentId: env.record.id, id: row.id, status: "verified", now: new Date(now) })
        const next = yield* issueChallenge(user, "email_change_new", row.new_email, row.new_email, true)
        yield* audit(me, "user.email_change_old_verified", { challenge_id: row.id, next_challenge_id: next.id })
        return { kind: "issued", next } as const
      }),
    ),
  )
  if (outcome.kind === "issued") return challengeInfo(outcome.next)
  if (outcome.kind === "taken") return yield* emailTaken()
  return yield* refuse(outcome)
}, withCallSpan("me.verifyOldEmail"))

/**
 * POST /me/email/change/verify-new: proves the new address and switches, in one SQL
 * transaction holding the user row lock and an advisory lock on the new address, so of two
 * accounts racing to one address exactly one wins (the other gets 409 and its challenge is
 * spent; the unique index on the address is the backstop). The switch verifies the address,
 * raises the security version (every earlier access token becomes inactive at /me, UserInfo
 * and introspection; refresh of earlier sessions stops), revokes the user's live sessions
 * (`session.revoked` `user_logout`: the user must sign in again), emits `user.updated`, and
 * enqueues the change notice to the old address.
 */
export const verifyNewEmail = Effect.fnUntraced(function* (challengeId: string, code: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  const users = yield* Users
  yield* verifyLimits(me, code)
  const outcome = yield* unavailableOnSqlError(
    sql
      .withTransaction(
        Effect.gen(function* () {
          const user = yield* lockMe(me)
          const checked = yield* checkCode(me, "email_change_new", challengeId, code)
          if (checked.kind !== "right") return checked
          const { row, now } = checked
          const newNormalized = normalizeEmail(row.new_email)
          yield* otp.lockEmail(env.record.id, newNormalized, "email_change")
          if (yield* taken(env.record.id, newNormalized, me)) {
            yield* otp.finishChallenge({
              environmentId: env.record.id,
              id: row.id,
              status: "consumed",
              now: new Date(now),
            })
            return { kind: "taken" } as const
          }
          // The flag follows the address (bounces are kept per address, src/bounces): recomputed for the new one.
          const emailSuppressed = yield* isAddressSuppressed({
            workspaceId: env.record.workspaceId,
            environmentId: env.record.id,
            address: row.new_email,
            userFlag: undefined,
          })
          const switched = yield* repo.switchEmail({
            environmentId: env.record.id,
            userId: user.id,
            email: row.new_email,
            emailNormalized: newNormalized,
            emailSuppressed,
            now: new Date(now),
          })
          yield* otp.finishChallenge({
            environmentId: env.record.id,
            id: row.id,
            status: "verified",
            now: new Date(now),
          })
          yield* users.revokeSessions({
            workspaceId: env.record.workspaceId,
            environmentId: env.record.id,
            userId: user.id,
            reason: "user_logout",
            actor: actorOf(me),
          })
          const changedFields: [string, ...Array<string>] = user.email_verified
            ? ["email"]
            : ["email", "email_verified"]
          yield* (yield* Events).emit({
            type: "user.updated",
            workspaceId: env.record.workspaceId,
            environmentId: env.record.id,
            actor: actorOf(me),
            payload: { userId: user.id, changedFields },
          })
          yield* audit(me, "user.email_changed", {
            challenge_id: row.id,
            masked_old_email: maskEmail(user.email),
            masked_new_email: maskEmail(row.new_email),
          })
          if (!user.email_suppressed) {
            yield* enqueueEmailChangeNotice({
              environmentId: env.record.id,
              userId: user.id,
              securityVersion: switched.security_version,
              oldEmail: user.email,
              newEmail: row.new_email,
            })
          }
          return { kind: "switched", email: row.new_email } as const
        }),
      )
      .pipe(
        // Backstop: an account created with the address between the check and the UPDATE (a first
        // login does not take the advisory lock) trips the unique index: the same 409.
        Effect.catch((e) => (isUniqueViolation(e) ? Effect.succeed({ kind: "taken" } as const) : Effect.fail(e))),
      ),
  )
  if (outcome.kind === "switched") return { email: outcome.email, email_verified: true as const }
  if (outcome.kind === "taken") return yield* emailTaken()
  return yield* refuse(outcome)
}, withCallSpan("me.verifyNewEmail"))

const isUniqueViolation = (e: unknown) => SqlError.isSqlError(e) && e.reason._tag === "UniqueViolation"
