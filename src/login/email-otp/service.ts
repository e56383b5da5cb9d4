import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest, type RateLimited } from "../../http/errors.js"
import { isAddressSuppressed } from "../../bounces/suppression.js"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto } from "../../platform/crypto.js"
import { maskEmail } from "../../platform/events/schema.js"
import { Events } from "../../platform/events/service.js"
import { Ids } from "../../platform/ids.js"
import { ipPrefixHash } from "../../platform/ip-prefix.js"
import { CurrentRequest } from "../../platform/request-context.js"
import { normalizeEmail, type UserRow, userByEmail } from "../../users/repo.js"
import { Users } from "../../users/service.js"
import { emailAddressSubject, KNOWN_ADDRESS, loginLimits } from "../../rate-limit/limits.js"
import { issuerOf, mayChangeCode } from "./replacement.js"
import { consumeMailCeiling, isKnownAddress, limitSendPerAddress } from "./send-limits.js"
import * as rateLimit from "../../rate-limit/service.js"
import { AccessDenied, InvalidTransactionState } from "../transactions/errors.js"
import * as transactions from "../transactions/repo.js"
import { explainLostTransition, loadTransactionForUse, markInteractionStarted } from "../transactions/service.js"
import { countWrongCode, isPastFailureCeiling } from "./attempts.js"
import { codeHmac, codeMatches, generateCode, isCodeShape } from "./code.js"
import { InvalidCode, NewUserCreationBlocked, ResendTooSoon } from "./errors.js"
import { enqueueLoginCodeMail } from "./mail-job.js"
import * as repo from "./repo.js"
import { markEmailVerified } from "./users.js"
import { accountForAddressProof, completePendingLink, pendingLinkProofAddress } from "../social-linking.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Spec, Limits: Email OTP lifetime 5 minutes; resend >= 30 s apart (wrong verifies: ./attempts.ts). */
export const CHALLENGE_TTL_MS = 5 * 60_000
export const RESEND_INTERVAL_MS = 30_000

/** Statuses from which an Email OTP can be started (restarting with another address included). */
const STARTABLE: ReadonlyArray<transactions.TransactionStatus> = ["created", "interaction_started", "challenge_issued"]
/**
 * `link_required` (social login found the address's existing account, or an address its
 * provider did not verify): an OTP to THAT address proves it (src/login/social-linking.ts); the
 * status stays `link_required`.
 */
const LINK_PROOF: ReadonlyArray<transactions.TransactionStatus> = ["link_required"]

/**
 * The masked address of an audit record, only when a user has the address (their id is then
 * the record's actor, and the purge redacts it with the user's other records). A record written
 * while nobody has the address carries none: nothing would tie it to the user who registers it
 * later, so the purge could not find it (decisions, "Audit records and personal data"). The
 * challenge id stays, and the challenge row names the address for its day.
 */
const auditAddress = (user: UserRow | undefined, email: string) =>
  user === undefined ? {} : { masked_email: maskEmail(email) }

/** A plausible address: one @, no spaces, at most 254 characters (RFC 5321 path limit). */
const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
export const checkEmail = (email: string) => {
  const trimmed = email.trim()
  return trimmed.length <= 254 && EMAIL_SHAPE.test(trimmed) ? trimmed : undefined
}

const requestFacts = Effect.fnUntraced(function* (workspaceId: string) {
  const request = yield* CurrentRequest
  const crypto = yield* Crypto
  const ip = request?.ip
  return { ip, ipHash: ipPrefixHash(crypto, workspaceId, ip) }
})

/**
 * `POST .../email/start` (spec: Email OTP rule 1). The answer is the same 202 shape whether
 * the address is registered, new, suppressed or blocked, and whether the start was allowed
 * to change the email's code or was withheld (./replacement.ts); every branch enqueues the
 * same mail job (a no-op inside the seal when the address is suppressed or the start withheld).
 */
export const startEmailOtp = Effect.fnUntraced(function* (transactionId: string, rawEmail: string) {
  const txn = yield* loadTransactionForUse(transactionId)
  const email = checkEmail(rawEmail)
  if (email === undefined) return yield* new InvalidRequest({ detail: "email must be an email address" })
  const linkProof = txn.status === "link_required"
  if (!STARTABLE.includes(txn.status) && !linkProof) {
    return yield* new InvalidTransactionState({
      detail: `An Email OTP cannot be started on a ${txn.status} transaction`,
    })
  }
  if (linkProof) {
    // The existing account's address, or the address the provider did not verify.
    const proofAddress = yield* pendingLinkProofAddress(txn)
    if (proofAddress === undefined || proofAddress !== normalizeEmail(email)) {
      return yield* new InvalidRequest({
        detail: "To continue this sign-in, the code must go to the address it was started with",
      })
    }
  }
  const facts = yield* requestFacts(txn.workspace_id)
  const emailNormalized = normalizeEmail(email)
  // The first method call moves the transaction on, and counters commit, even if the send is refused:
  // a start that issues its challenge moves it (created included) to challenge_issued in its SQL
  // transaction; one that fails moves it to interaction_started here (one round trip less per start).
  return yield* Effect.onError(
    Effect.gen(function* () {
      yield* limitSendPerAddress(txn.environment_id, emailNormalized, facts.ip)
      const known = yield* isKnownAddress(txn.environment_id, emailNormalized, facts.ip)

      const sql = yield* SqlClient.SqlClient
      const ids = yield* Ids
      const crypto = yield* Crypto
      const events = yield* Events
      const audit = yield* Audit
      const now = yield* Clock.currentTimeMillis
      const challengeId = yield* ids.make("chl")
      const code = yield* generateCode
      const challenge = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* repo.lockEmail(txn.environment_id, emailNormalized, "login")
            const moved = linkProof
              ? yield* transactions.transition(txn.environment_id, txn.id, LINK_PROOF, "link_required", new Date(now))
              : yield* transactions.transition(txn.environment_id, txn.id, STARTABLE, "challenge_issued", new Date(now))
            if (!moved) {
              return yield* explainLostTransition(txn.id, () =>
                Effect.fail(
                  new InvalidTransactionState({
                    detail: "The transaction moved on; an Email OTP can no longer be started",
                  }),
                ),
              )
            }
            const changesCode = yield* mayChangeCode({
              environmentId: txn.environment_id,
              emailNormalized,
              purpose: "login",
              transactionId: txn.id,
              ip: facts.ip,
              known,
              now: new Date(now),
            })
            // Only a mail that is sent counts against the email's all-addresses ceiling.
            if (changesCode) yield* consumeMailCeiling(txn.environment_id, emailNormalized, known)
            yield* repo.supersedeForStart({
              environmentId: txn.environment_id,
              emailNormalized,
              purpose: "login",
              transactionId: txn.id,
              keepEmailCode: !changesCode,
              now: new Date(now),
            })
            const challenge = yield* repo.insertChallenge({
              id: challengeId,
              workspaceId: txn.workspace_id,
              environmentId: txn.environment_id,
              transactionId: txn.id,
              purpose: "login",
              email,
              emailNormalized,
              codeHmac: codeHmac(crypto, challengeId, 1, code),
              status: changesCode ? "active" : "withheld",
              issuedFrom: issuerOf(crypto, txn.environment_id, emailNormalized, facts.ip),
              now: new Date(now),
              expiresAt: new Date(now + CHALLENGE_TTL_MS),
            })
            const user = yield* userByEmail(txn.environment_id, emailNormalized)
            const suppressed = yield* isAddressSuppressed({
              workspaceId: txn.workspace_id,
              environmentId: txn.environment_id,
              address: email,
              userFlag: user?.email_suppressed,
            })
            const delivered = changesCode && !suppressed
            // The mail job and the start's audit record in one statement (one round trip), on every branch alike.
            const audited = yield* audit.cte({
              workspaceId: txn.workspace_id,
              environmentId: txn.environment_id,
              actor: { type: "end_user", ...(user ? { id: user.id } : {}) },
              action: "login.email_otp_sent",
              subjectType: "auth_transaction",
              subjectId: txn.id,
              details: {
                challenge_id: challengeId,
                ...auditAddress(user, email),
                delivered,
                ...(changesCode ? {} : { withheld: true }),
              },
            })
            yield* enqueueLoginCodeMail({
              environmentId: txn.environment_id,
              challengeId,
              generation: 1,
              // A registered address gets its code at the address the account holds: a look-alike
              // typed at start (a KELVIN SIGN lowercases to "k") finds the account, never its mail.
              to: user?.email ?? email,
              code,
              deliver: delivered,
              with: audited,
            })
            if (suppressed && user) {
              yield* events.emit({
                type: "login.failed",
                workspaceId: txn.workspace_id,
                environmentId: txn.environment_id,
                actor: { type: "end_user", id: user.id },
                payload: {
                  userId: user.id,
                  method: "email_otp",
                  reason: "email_suppressed",
                  clientId: txn.client_id,
                  maskedEmail: maskEmail(email),
                  ...(facts.ipHash ? { ipPrefixHash: facts.ipHash } : {}),
                },
              })
            }
            return challenge
          }),
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      return challenge
    }),
    () => markInteractionStarted(txn),
  )
}, withCallSpan("login.startEmailOtp"))

/**
 * `POST .../email/resend` (spec: Email OTP rule 2; Email OTP challenge: "Resend:
 * generation increases; previous code invalid"). The same challenge id gets a new code and
 * new 5 minutes; wrong attempts carry over (a resend buys no guesses). A resend changes the
 * email's code, so it is decided like a start (./replacement.ts): a withheld challenge that
 * may now change it becomes the email's code holder; one that may not stays withheld; and the
 * code holder's resend, while someone else relies on its code and the budget is spent, sends
 * nothing and keeps the code as it is. The answer is the same 202 either way.
 */
export const resendEmailOtp = Effect.fnUntraced(function* (transactionId: string, challengeId: string) {
  const txn = yield* loadTransactionForUse(transactionId)
  if (txn.status !== "challenge_issued" && txn.status !== "link_required") {
    return yield* new InvalidTransactionState({ detail: `No code can be resent on a ${txn.status} transaction` })
  }
  const existing = yield* repo.challengeOfTransaction(txn.environment_id, txn.id, challengeId).pipe(Effect.orDie)
  if (!existing) return yield* new InvalidRequest({ detail: "challenge_id is not a challenge of this transaction" })
  if (!repo.isOpen(existing.status)) {
    return yield* new InvalidRequest({
      detail: "The challenge is no longer active; start again with the email address",
    })
  }
  const now0 = yield* Clock.currentTimeMillis
  const tooSoon = (row: repo.ChallengeRow, now: number) => now - row.last_sent_at.getTime() < RESEND_INTERVAL_MS
  const retryAfter = (row: repo.ChallengeRow, now: number) =>
    Math.ceil((row.last_sent_at.getTime() + RESEND_INTERVAL_MS - now) / 1000)
  if (tooSoon(existing, now0)) return yield* new ResendTooSoon({ retryAfterSeconds: retryAfter(existing, now0) })

  const facts = yield* requestFacts(txn.workspace_id)
  yield* limitSendPerAddress(txn.environment_id, existing.email_normalized, facts.ip)
  const known = yield* isKnownAddress(txn.environment_id, existing.email_normalized, facts.ip)

  const sql = yield* SqlClient.SqlClient
  const crypto = yield* Crypto
  const audit = yield* Audit
  const code = yield* generateCode
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        // The email's lock first (as a start takes it), then the row: of two concurrent resends one
        // renews, the other sees it and is too soon.
        yield* repo.lockEmail(txn.environment_id, existing.email_normalized, "login")
        const row = yield* repo.lockChallenge(txn.environment_id, challengeId)
        if (!row || !repo.isOpen(row.status)) {
          return yield* new InvalidRequest({
            detail: "The challenge is no longer active; start again with the email address",
          })
        }
        if (tooSoon(row, now)) return yield* new ResendTooSoon({ retryAfterSeconds: retryAfter(row, now) })
        const changesCode = yield* mayChangeCode({
          environmentId: txn.environment_id,
          emailNormalized: row.email_normalized,
          purpose: "login",
          transactionId: txn.id,
          ip: facts.ip,
          known,
          now: new Date(now),
        })
        if (changesCode) yield* consumeMailCeiling(txn.environment_id, row.email_normalized, known)
        // A withheld challenge that may change the code takes the place of the email's code holder.
        if (changesCode && row.status === "withheld") {
          yield* repo.supersedeActiveOfEmail({
            environmentId: txn.environment_id,
            emailNormalized: row.email_normalized,
            purpose: "login",
            now: new Date(now),
          })
        }
        // The code holder that may not change its code keeps it (and its expiry); only the send time moves.
        const holdsCode = !changesCode && row.status === "active"
        const generation = holdsCode ? row.generation : row.generation + 1
        const renewed = holdsCode
          ? yield* repo.touchChallenge({ environmentId: txn.environment_id, id: row.id, now: new Date(now) })
          : yield* repo.renewChallenge({
              environmentId: txn.environment_id,
              id: row.id,
              generation,
              codeHmac: codeHmac(crypto, row.id, generation, code),
              status: changesCode ? "active" : "withheld",
              issuedFrom: issuerOf(crypto, txn.environment_id, row.email_normalized, facts.ip),
              now: new Date(now),
              expiresAt: new Date(now + CHALLENGE_TTL_MS),
            })
        const user = yield* userByEmail(txn.environment_id, row.email_normalized)
        const suppressed = yield* isAddressSuppressed({
          workspaceId: txn.workspace_id,
          environmentId: txn.environment_id,
          address: row.email,
          userFlag: user?.email_suppressed,
        })
        const delivered = changesCode && !suppressed
        yield* enqueueLoginCodeMail({
          environmentId: txn.environment_id,
          challengeId: row.id,
          generation,
          to: user?.email ?? row.email,
          code,
          deliver: delivered,
        })
        yield* audit.append({
          workspaceId: txn.workspace_id,
          environmentId: txn.environment_id,
          actor: { type: "end_user", ...(user ? { id: user.id } : {}) },
          action: "login.email_otp_resent",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: {
            challenge_id: row.id,
            generation,
            ...auditAddress(user, row.email),
            delivered,
            ...(changesCode ? {} : { withheld: true }),
          },
        })
        return renewed!
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("login.resendEmailOtp"))

type VerifyOutcome =
  | { readonly kind: "authenticated" }
  | { readonly kind: "wrong"; readonly invalidated: boolean }
  | { readonly kind: "expired" }
  | { readonly kind: "dead" }
  | { readonly kind: "blocked" }
  | { readonly kind: "new_user_blocked" }
  | { readonly kind: "ceiling"; readonly refusal: RateLimited }

/**
 * `POST .../email/verify` (spec: Email OTP; Email OTP challenge; Login transaction
 * challenge_issued -> authenticated). The challenge row is locked, so concurrent verifies
 * count one by one and the 5th wrong one invalidates it. Failure bookkeeping (attempt
 * count, `login.failed`, audit, the per-email failure counter) commits; the error is
 * returned after the commit.
 */
export const verifyEmailOtp = Effect.fnUntraced(function* (transactionId: string, challengeId: string, code: string) {
  const txn = yield* loadTransactionForUse(transactionId)
  if (!isCodeShape(code)) return yield* new InvalidRequest({ detail: "code must be 6 digits" })
  const linkProof = txn.status === "link_required"
  if (txn.status !== "challenge_issued" && !linkProof) {
    return yield* new InvalidTransactionState({ detail: `No code can be verified on a ${txn.status} transaction` })
  }
  const existing = yield* repo.challengeOfTransaction(txn.environment_id, txn.id, challengeId).pipe(Effect.orDie)
  if (!existing) return yield* new InvalidCode({ detail: "Unknown challenge" })

  const config = yield* Config
  const env = yield* CurrentEnvironment
  const limits = loginLimits(config)
  const facts = yield* requestFacts(txn.workspace_id)
  const emailAndIp = emailAddressSubject(existing.email_normalized, facts.ip)
  // Narrowest first, and the checks that only look before those that count: a verify refused
  // for this email (its wrong codes, from this address or from all) or for this email from
  // this address is not counted against the address's budget, which every other caller behind
  // that address shares (decisions: "Every 429 names its limit").
  // Both failure counts are read in one round trip; the narrower refuses first.
  const [narrow, ceiling] = yield* rateLimit.exhaustedAll(txn.environment_id, [
    { limit: limits.otpFailuresPerEmailAndIp, subject: emailAndIp },
    { limit: limits.otpFailuresPerEmail, subject: existing.email_normalized },
  ])
  if (narrow !== undefined)
    return yield* rateLimit.refuse(limits.otpFailuresPerEmailAndIp, narrow.retryAfterSeconds ?? 1)
  // The all-addresses failure ceiling (./attempts.ts), rechecked under the lock.
  const pastCeiling = (row: repo.ChallengeRow) => isPastFailureCeiling(ceiling, row)
  if (pastCeiling(existing)) return yield* ceiling!
  yield* rateLimit.consumeAll(txn.environment_id, [
    { limit: limits.otpVerifyPerEmailAndIp, subject: emailAndIp },
    ...rateLimit.addressSteps(limits.otpVerifyPerIp, facts.ip),
  ])

  const sql = yield* SqlClient.SqlClient
  const crypto = yield* Crypto
  const events = yield* Events
  const audit = yield* Audit
  const users = yield* Users

  const loginFailed = Effect.fnUntraced(function* (
    reason: "invalid_code" | "expired_code" | "user_blocked",
    row: repo.ChallengeRow,
    user: UserRow | undefined,
  ) {
    const actor = { type: "end_user" as const, ...(user ? { id: user.id } : {}) }
    yield* events.emit({
      type: "login.failed",
      workspaceId: txn.workspace_id,
      environmentId: txn.environment_id,
      actor,
      payload: {
        ...(user ? { userId: user.id } : {}),
        method: "email_otp",
        reason,
        clientId: txn.client_id,
        maskedEmail: maskEmail(row.email),
        ...(facts.ipHash ? { ipPrefixHash: facts.ipHash } : {}),
      },
    })
    yield* audit.append({
      workspaceId: txn.workspace_id,
      environmentId: txn.environment_id,
      actor,
      action: "login.failed",
      subjectType: "auth_transaction",
      subjectId: txn.id,
      result: "failure",
      details: {
        reason,
        method: "email_otp",
        challenge_id: row.id,
        ...auditAddress(user, row.email),
        client_id: txn.client_id,
      },
    })
  })

  const outcome: VerifyOutcome = yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        // A withheld challenge uses the email's code: the email's lock first, as starts take it.
        if (existing.status === "withheld")
          yield* repo.lockEmail(txn.environment_id, existing.email_normalized, "login")
        const row = yield* repo.lockChallenge(txn.environment_id, challengeId)
        if (!row || !repo.isOpen(row.status)) return { kind: "dead" } as const
        if (pastCeiling(row)) return { kind: "ceiling", refusal: ceiling! } as const
        const user = yield* userByEmail(txn.environment_id, row.email_normalized)
        if (row.expires_at.getTime() <= now) {
          yield* loginFailed("expired_code", row, user)
          return { kind: "expired" } as const
        }
        // A withheld challenge has no code of its own: the email's one valid code (already mailed to
        // this address) proves it. Without one, any code is wrong (no hint that it was used or ended).
        const holder =
          row.status === "withheld"
            ? yield* repo.lockActiveOfEmail(txn.environment_id, row.email_normalized, "login")
            : row
        const matches =
          holder !== undefined &&
          holder.expires_at.getTime() > now &&
          codeMatches(crypto, holder.id, holder.generation, code, holder.code_hmac)
        if (matches && holder.id !== row.id) {
          // One code signs in once: the holder's challenge is used up by this one.
          yield* repo.finishChallenge({
            environmentId: txn.environment_id,
            id: holder.id,
            status: "consumed",
            now: new Date(now),
          })
        }
        if (!matches) {
          const counted = yield* countWrongCode({
            environmentId: txn.environment_id,
            challengeId: row.id,
            emailNormalized: row.email_normalized,
            emailAndIp,
            limits,
            now: new Date(now),
          })
          yield* loginFailed("invalid_code", row, user)
          return { kind: "wrong", invalidated: counted.invalidated } as const
        }
        // The code is right: who is this?
        let account = user
        // Link proof of an address the provider did not verify: the code proved it, so the
        // social sign-in may now have its account (created here when there is none).
        if (linkProof && !account) {
          const proven = yield* accountForAddressProof(txn, row.email_normalized)
          if (proven.kind === "wrong_account") return { kind: "dead" } as const
          if (proven.kind === "new_user_blocked") return { kind: "new_user_blocked" } as const
          account = proven.user
        }
        if (!account) {
          if (env.record.newUserCreationBlocked) return { kind: "new_user_blocked" } as const
          account =
            (yield* users.create({
              workspaceId: txn.workspace_id,
              environmentId: txn.environment_id,
              email: row.email,
              emailVerified: true,
              method: "email_otp",
              actor: { type: "end_user" },
            })) ?? (yield* userByEmail(txn.environment_id, row.email_normalized))
        }
        if (!account) return yield* Effect.die(new Error("user vanished during first login"))
        if (account.status !== "active") {
          yield* repo.finishChallenge({
            environmentId: txn.environment_id,
            id: row.id,
            status: "consumed",
            now: new Date(now),
          })
          yield* loginFailed("user_blocked", row, account)
          return { kind: "blocked" } as const
        }
        if (!account.email_verified) yield* markEmailVerified(account, new Date(now))
        yield* repo.finishChallenge({
          environmentId: txn.environment_id,
          id: row.id,
          status: "verified",
          now: new Date(now),
        })
        if (linkProof) {
          const linked = yield* completePendingLink(
            txn,
            { by: "email_otp", userId: account.id, emailNormalized: row.email_normalized },
            new Date(now),
          )
          if (linked === "wrong_account") return { kind: "dead" } as const
          if (linked === "blocked") return { kind: "blocked" } as const
          return { kind: "authenticated" } as const
        }
        const moved = yield* transactions.transition(
          txn.environment_id,
          txn.id,
          ["challenge_issued"],
          "authenticated",
          new Date(now),
          {
            method: "email_otp",
            userId: account.id,
            authenticatedAt: new Date(now),
          },
        )
        if (!moved) {
          return yield* explainLostTransition(txn.id, () =>
            Effect.fail(
              new InvalidTransactionState({ detail: "The transaction moved on before the code was verified" }),
            ),
          )
        }
        yield* audit.append({
          workspaceId: txn.workspace_id,
          environmentId: txn.environment_id,
          actor: { type: "end_user", id: account.id },
          action: "login.authenticated",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: { method: "email_otp", challenge_id: row.id, client_id: txn.client_id },
        })
        yield* rateLimit.remember(txn.environment_id, KNOWN_ADDRESS, emailAndIp)
        return { kind: "authenticated" } as const
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))

  switch (outcome.kind) {
    case "authenticated":
      return { transaction_id: txn.id, status: "authenticated" as const }
    case "wrong":
      return yield* new InvalidCode({
        detail: outcome.invalidated ? "Wrong code; too many attempts, start again" : "Wrong code",
      })
    case "expired":
      return yield* new InvalidCode({ detail: "The code has expired; request a new one" })
    case "dead":
      return yield* new InvalidCode({ detail: "The code is no longer valid; start again" })
    case "blocked":
      return yield* new AccessDenied({ detail: "The user is blocked" })
    case "new_user_blocked":
      return yield* new NewUserCreationBlocked({ detail: "New users cannot be created in this Environment" })
    case "ceiling":
      return yield* outcome.refusal
  }
}, withCallSpan("login.verifyEmailOtp"))
