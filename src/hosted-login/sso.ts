import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { OriginNotAllowed } from "../http/errors.js"
import type { IssuedLogin } from "../login/transactions/service.js"
import { completeTransaction, explainLostTransition, loadTransactionForUse } from "../login/transactions/service.js"
import { InvalidTransactionState } from "../login/transactions/errors.js"
import * as transactions from "../login/transactions/repo.js"
import { Config } from "../platform/config.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { maskEmail } from "../platform/events/schema.js"
import { Ids } from "../platform/ids.js"
import { withCallSpan } from "../platform/observability/span.js"
import * as repo from "../sessions/hosted-login-repo.js"
import { CurrentEnvironment } from "../tenancy/current-environment.js"

/**
 * Single sign-on at Hosted Login (docs/decisions/hosted-login-sso.md). A real sign-in on Hosted
 * Login leaves a Hosted Login session for this browser and Environment; a later authorization
 * from the same browser offers "Continue as <masked email>", which completes the transaction
 * for that user with the real sign-in's method and auth_time. Never silent: one click.
 */

/** As a login session (spec, Limits: 7 days idle / 30 days absolute). */
export const HOSTED_LOGIN_SESSION_IDLE_MS = 7 * 24 * 3600_000
export const HOSTED_LOGIN_SESSION_ABSOLUTE_MS = 30 * 24 * 3600_000

/** With https the `__Host-` prefix pins the cookie to the Interaction Domain's exact host, path `/`, Secure. */
export const hostedLoginSessionCookieName = (scheme: "http" | "https") =>
  scheme === "https" ? "__Host-authservice_sso" : "authservice_sso"

/** The statuses a person may still choose how to sign in from. */
const CHOOSING: ReadonlyArray<transactions.TransactionStatus> = ["created", "interaction_started", "challenge_issued"]

/** SHA-256 of the Hosted Login session secret the request's cookie carries, if any. */
const requestSecretHash = Effect.gen(function* () {
  const config = yield* Config
  const request = yield* HttpServerRequest.HttpServerRequest
  const secret = request.cookies[hostedLoginSessionCookieName(config.publicScheme)]
  return secret === undefined || secret === "" ? undefined : sha256Hex(secret)
})

/** This browser's live Hosted Login session in the current Environment, if any. */
const liveSession = (lock: boolean) =>
  Effect.gen(function* () {
    const env = yield* CurrentEnvironment
    const hash = yield* requestSecretHash
    if (hash === undefined) return undefined
    const now = yield* Clock.currentTimeMillis
    return yield* repo.liveHostedLoginSession(env.record.id, hash, new Date(now), lock).pipe(Effect.orDie)
  })

/** What the sign-in page offers for a transaction: "Continue as" the masked email, or nothing. */
export const continueAsOffer = (txn: transactions.TransactionRow) =>
  Effect.gen(function* () {
    if (!CHOOSING.includes(txn.status)) return undefined
    const session = yield* liveSession(false)
    return session === undefined ? undefined : maskEmail(session.email)
  })

/**
 * The two POST routes are called by the page's own script: a request that says it comes from
 * another origin than the host it was sent to is refused (the cookies are SameSite=Lax, and this
 * closes the same-site case: another Environment's Interaction Domain is the same site). The
 * host itself was matched to this Environment by the host dispatch (its Interaction Domain, or
 * the default host that keeps serving beside a Custom Domain).
 */
export const requireSameOrigin = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* Config
  const origin = request.headers["origin"]
  if (origin !== undefined && origin !== `${config.publicScheme}://${request.headers["host"] ?? ""}`)
    return yield* new OriginNotAllowed()
})

const setCookie = (response: HttpServerResponse.HttpServerResponse, scheme: "http" | "https", secret: string) =>
  HttpServerResponse.setCookieUnsafe(response, hostedLoginSessionCookieName(scheme), secret, {
    httpOnly: true,
    sameSite: "lax",
    secure: scheme === "https",
    path: "/",
    maxAge: `${HOSTED_LOGIN_SESSION_ABSOLUTE_MS / 1000} seconds`,
  })

/**
 * Completes a transaction a real sign-in authenticated, and in the same SQL transaction starts
 * this browser's Hosted Login session from it (the session created is its first login session).
 * A Hosted Login session this browser held before (another account, or an earlier sign-in)
 * ends as `replaced`. Returns the completion and a response transformer that sets the cookie.
 */
export const completeWithHostedLoginSession = (transactionId: string) =>
  Effect.gen(function* () {
    const env = yield* CurrentEnvironment
    const config = yield* Config
    const crypto = yield* Crypto
    const ids = yield* Ids
    const previous = yield* requestSecretHash
    const secret = yield* crypto.randomToken(32)
    const id = yield* ids.make("hls")
    const now = new Date(yield* Clock.currentTimeMillis)
    const start = (issued: IssuedLogin) =>
      Effect.gen(function* () {
        const { row } = issued
        if (previous !== undefined)
          yield* repo.revokeHostedLoginSessionBySecret(env.record.id, previous, "replaced", now)
        yield* repo.insertHostedLoginSession({
          id,
          workspaceId: row.workspace_id,
          environmentId: row.environment_id,
          userId: row.user_id!,
          secretHash: sha256Hex(secret),
          method: row.method!,
          authTime: row.authenticated_at!,
          securityVersion: issued.securityVersion,
          now,
          idleExpiresAt: new Date(now.getTime() + HOSTED_LOGIN_SESSION_IDLE_MS),
          absoluteExpiresAt: new Date(now.getTime() + HOSTED_LOGIN_SESSION_ABSOLUTE_MS),
        })
        yield* repo.linkLoginSession(row.environment_id, issued.sessionId, id)
      }).pipe(Effect.orDie)
    const completed = yield* completeTransaction(transactionId, undefined, start)
    return {
      completed,
      withCookie: (response: HttpServerResponse.HttpServerResponse) => setCookie(response, config.publicScheme, secret),
    }
  }).pipe(withCallSpan("hostedLogin.completeWithSession"))

/**
 * "Continue as": in one SQL transaction, this browser's live Hosted Login session authenticates
 * the transaction (its user, method and auth_time: the real sign-in's, so `auth_time` does not
 * move) and the transaction completes as any other; the new login session is linked to the
 * Hosted Login session, whose idle expiry is renewed. Refused with 409 `invalid_transaction_state`
 * when the browser has no live Hosted Login session (ended, revoked, user blocked) or the
 * transaction is past choosing how to sign in.
 */
export const continueAs = (transactionId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const row = yield* loadTransactionForUse(transactionId)
        const session = yield* liveSession(true)
        if (session === undefined) {
          return yield* new InvalidTransactionState({
            detail: "This browser has no live Hosted Login session; sign in again",
          })
        }
        if (!CHOOSING.includes(row.status)) {
          return yield* new InvalidTransactionState({
            detail: `The transaction is ${row.status}; it can no longer continue as a signed-in user`,
          })
        }
        const now = new Date(yield* Clock.currentTimeMillis)
        const authenticated = yield* transactions
          .transition(row.environment_id, row.id, CHOOSING, "authenticated", now, {
            userId: session.user_id,
            method: session.method,
            authenticatedAt: session.auth_time,
          })
          .pipe(Effect.orDie)
        if (!authenticated) {
          return yield* explainLostTransition(row.id, () =>
            Effect.fail(
              new InvalidTransactionState({ detail: "The transaction can no longer continue as a signed-in user" }),
            ),
          )
        }
        return yield* completeTransaction(row.id, undefined, (issued) =>
          Effect.gen(function* () {
            yield* repo.linkLoginSession(row.environment_id, issued.sessionId, session.id)
            yield* repo.touchHostedLoginSession(
              row.environment_id,
              session.id,
              now,
              new Date(now.getTime() + HOSTED_LOGIN_SESSION_IDLE_MS),
            )
          }).pipe(Effect.orDie),
        )
      }),
    )
  }).pipe(withCallSpan("hostedLogin.continueAs"))
