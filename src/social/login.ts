import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { HOSTED_LOGIN_PATH } from "../hosted-login/urls.js"
import type { ConnectionRow } from "../management/connections/repo.js"
import type { Provider } from "../management/connections/schema.js"
import { AuthTransactionExpired, InvalidTransactionState } from "../login/transactions/errors.js"
import * as transactions from "../login/transactions/repo.js"
import { explainLostTransition, loadTransactionForUse, markInteractionStarted } from "../login/transactions/service.js"
import { issueSocialProof } from "../login/transactions/social-proof.js"
import { Audit } from "../platform/audit.js"
import { Crypto } from "../platform/crypto.js"
import { maskEmail } from "../platform/events/schema.js"
import { Events } from "../platform/events/service.js"
import { Ids } from "../platform/ids.js"
import { ipPrefixHash } from "../platform/ip-prefix.js"
import { CurrentRequest } from "../platform/request-context.js"
import { lockUser, normalizeEmail } from "../users/repo.js"
import { Users } from "../users/service.js"
import { type ExchangeFailure, redeemCallback } from "./exchange.js"
import { identityKeyOf } from "./identity-key.js"
import type { SocialProfile } from "./profile.js"
import { prepareRedirect, requireUsableConnection } from "./redirect.js"
import * as repo from "./repo.js"
import { appendQuery, SOCIAL_RETURN_PATH } from "./urls.js"
import { withCallSpan } from "../platform/observability/span.js"

/** Statuses from which a social login can start (as an Email OTP start or passkey options). */
const STARTABLE: ReadonlyArray<transactions.TransactionStatus> = ["created", "interaction_started", "challenge_issued"]

/**
 * GET's `pending_link` (docs/decisions/social-login.md, link_required): what waits for a proof and how it
 * can be given. `reason` `existing_account`: the address belongs to an account, proven by an
 * Email OTP to its address or its passkey; `email_unverified`: the provider did not verify
 * the address and no account has it, so only an Email OTP to that address proves it (there
 * is no passkey of an account that does not exist).
 */
export const pendingLinkView = (
  provider: string,
  email: string,
  verifiedByProvider: boolean,
  userId: string | null,
) => ({
  provider,
  masked_email: maskEmail(email),
  email_verified_by_provider: verifiedByProvider,
  reason: userId ? "existing_account" : "email_unverified",
  proof_methods: userId ? ["email_otp", "passkey"] : ["email_otp"],
})

/**
 * `POST /auth/transactions/{id}/social/{provider}/start` (spec: Social login). Only a usable
 * Connection of the provider may start (else 404 `connection_not_found`, nothing changes);
 * then the first method call moves `created` -> `interaction_started` (commits on its own),
 * and one SQL transaction stores the state and moves the transaction to `challenge_issued`
 * (docs/architecture.md: "once the social redirect is made").
 */
export const startSocialLogin = Effect.fnUntraced(function* (transactionId: string, provider: Provider) {
  const txn = yield* loadTransactionForUse(transactionId)
  if (!STARTABLE.includes(txn.status)) {
    return yield* new InvalidTransactionState({ detail: `Social login cannot start on a ${txn.status} transaction` })
  }
  const connection = yield* requireUsableConnection(txn.environment_id, provider)
  yield* markInteractionStarted(txn)
  const redirect = yield* prepareRedirect({
    kind: "login",
    connection,
    transactionId: txn.id,
    notAfterMs: txn.expires_at.getTime(),
  })
  const sql = yield* SqlClient.SqlClient
  const audit = yield* Audit
  const now = yield* Clock.currentTimeMillis
  yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const moved = yield* transactions.transition(
          txn.environment_id,
          txn.id,
          STARTABLE,
          "challenge_issued",
          new Date(now),
        )
        if (!moved) {
          return yield* explainLostTransition(txn.id, () =>
            Effect.fail(
              new InvalidTransactionState({ detail: "The transaction moved on; social login can no longer start" }),
            ),
          )
        }
        yield* redirect.store
        yield* audit.append({
          workspaceId: txn.workspace_id,
          environmentId: txn.environment_id,
          actor: { type: "end_user" },
          action: "login.social_started",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: { provider: connection.provider_key, client_id: txn.client_id },
        })
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
  return { authorization_url: redirect.url }
}, withCallSpan("social.startLogin"))

/**
 * What a login callback did to its transaction; a custom-UI transaction that authenticated or
 * needs a link proof also has the completion proof for the browser.
 */
type LoginOutcome =
  | { readonly kind: "authenticated"; readonly userId: string; readonly proof?: string | undefined }
  | { readonly kind: "link_required"; readonly proof?: string | undefined }
  | { readonly kind: "failed"; readonly reason: string }

/**
 * Where the browser goes after the callback (spec: Social login rule 4). `native_return`:
 * the client's registered redirect URI with `tx`, the original `state`, `social`
 * (`completed`, or `link_required` / `failed`, docs/decisions/social-login.md) and, unless it failed, the
 * one-time `social_proof` that `complete` needs. Redirect mode: the Interaction Domain: the
 * Hosted Login page for its own transactions (it continues there), else the social return
 * page with `tx`, `social` and `social_proof`, which sends the browser on to the registered
 * redirect URI (./page.ts), where the custom UI reads the transaction and completes it.
 */
export const loginReturnUrl = (txn: transactions.TransactionRow, outcome: LoginOutcome, interactionOrigin: string) => {
  const social = outcome.kind === "authenticated" ? "completed" : outcome.kind
  const proof = outcome.kind !== "failed" && outcome.proof !== undefined ? { social_proof: outcome.proof } : {}
  if (txn.response_mode === "native_return")
    return appendQuery(txn.redirect_uri, { tx: txn.id, state: txn.state, social, ...proof })
  if (txn.source === "authorize") return `${interactionOrigin}${HOSTED_LOGIN_PATH}`
  return appendQuery(`${interactionOrigin}${SOCIAL_RETURN_PATH}`, { tx: txn.id, social, ...proof })
}

/**
 * The login transaction named by a used state, ready for the provider's answer: it exists,
 * is within its 10 minutes (else 410, and it becomes `expired`) and still `challenge_issued`
 * (else 409 `invalid_transaction_state`).
 */
export const callbackTransaction = Effect.fnUntraced(function* (stateRow: repo.SocialStateRow) {
  const txn = yield* transactions
    .transactionById(stateRow.environment_id, stateRow.transaction_id ?? "")
    .pipe(Effect.orDie)
  if (!txn) return yield* new InvalidTransactionState({ detail: "The login transaction no longer exists" })
  const now = yield* Clock.currentTimeMillis
  if (txn.status === "expired" || txn.expires_at.getTime() <= now) {
    yield* transactions.expireIfDue(txn.environment_id, txn.id, new Date(now)).pipe(Effect.orDie)
    return yield* new AuthTransactionExpired({})
  }
  if (txn.status !== "challenge_issued") {
    return yield* new InvalidTransactionState({
      detail: `The transaction is ${txn.status}; the social login cannot finish`,
    })
  }
  return txn
})

/**
 * Uses the provider's answer for a login transaction (the state was already verified and
 * used): the transaction ends `authenticated`, `link_required` or `failed` in one SQL
 * transaction with its events. Returns where the browser goes next.
 */
export const finishSocialLogin = (
  txn: transactions.TransactionRow,
  stateRow: repo.SocialStateRow,
  connection: ConnectionRow,
  state: string,
  params: URLSearchParams,
) =>
  Effect.gen(function* () {
    const env = yield* CurrentEnvironment
    const redeemed = yield* redeemCallback(connection, stateRow, state, params)
    const outcome = yield* recordLogin(
      txn,
      connection,
      redeemed.ok ? { profile: redeemed.profile } : { failure: redeemed.failure },
    )
    return loginReturnUrl(txn, outcome, env.urls.interactionOrigin)
  }).pipe(withCallSpan("social.finishLogin"))

const recordLogin = (
  txn: transactions.TransactionRow,
  connection: ConnectionRow,
  result: { readonly profile: SocialProfile } | { readonly failure: ExchangeFailure },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    const audit = yield* Audit
    const ids = yield* Ids
    const users = yield* Users
    const crypto = yield* Crypto
    const env = yield* CurrentEnvironment
    const request = yield* CurrentRequest
    const ipHash = ipPrefixHash(crypto, txn.workspace_id, request?.ip)
    const provider = connection.provider_key
    const base = { workspaceId: txn.workspace_id, environmentId: txn.environment_id } as const

    const decide = Effect.gen(function* () {
      const now = new Date(yield* Clock.currentTimeMillis)
      const moveTo = (to: transactions.TransactionStatus, extras: transactions.TransitionExtras = {}) =>
        Effect.gen(function* () {
          const moved = yield* transactions.transition(
            txn.environment_id,
            txn.id,
            ["challenge_issued"],
            to,
            now,
            extras,
          )
          if (!moved) {
            return yield* explainLostTransition(txn.id, () =>
              Effect.fail(
                new InvalidTransactionState({ detail: "The transaction moved on before the social login finished" }),
              ),
            )
          }
        })
      /** `login.failed` with the spec's reasons; the transaction ends `failed` (it cannot be resumed). */
      const fail = Effect.fnUntraced(function* (
        reason: "social_provider_error" | "user_blocked" | "new_user_creation_blocked",
        detail: Record<string, unknown>,
        userId?: string,
      ) {
        yield* moveTo("failed", { failedReason: reason })
        const actor = { type: "end_user" as const, ...(userId ? { id: userId } : {}) }
        // new_user_creation_blocked is no `login.failed` reason of the spec: audit only.
        if (reason !== "new_user_creation_blocked") {
          yield* events.emit({
            type: "login.failed",
            ...base,
            actor,
            payload: {
              ...(userId ? { userId } : {}),
              method: "social",
              reason,
              clientId: txn.client_id,
              ...(ipHash ? { ipPrefixHash: ipHash } : {}),
            },
          })
        }
        yield* audit.append({
          ...base,
          actor,
          action: "login.failed",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          result: "failure",
          details: { reason, method: "social", provider, client_id: txn.client_id, ...detail },
        })
        return { kind: "failed", reason } as LoginOutcome
      })
      const authenticated = Effect.fnUntraced(function* (userId: string, detail: Record<string, unknown>) {
        yield* moveTo("authenticated", { method: "social", userId, authenticatedAt: now })
        yield* audit.append({
          ...base,
          actor: { type: "end_user", id: userId },
          action: "login.authenticated",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: { method: "social", provider, client_id: txn.client_id, ...detail },
        })
        return { kind: "authenticated", userId } as LoginOutcome
      })

      if ("failure" in result) {
        return yield* fail("social_provider_error", {
          failure: result.failure.kind,
          ...(result.failure.kind === "provider_error" ? { provider_error: result.failure.error } : {}),
        })
      }
      const profile = result.profile
      const key = identityKeyOf(connection, profile)
      const named = (emailNormalized: string | null) =>
        repo.accountsNamedBy(txn.environment_id, key, emailNormalized).pipe(Effect.orDie)
      /**
       * An identity of this issuer, subject claim and subject signs in its user (they decide, never
       * the email). An identity of another issuer or claim (the connection was re-pointed or
       * remapped) is not it: the address path below asks for the account's proof.
       */
      const signIn = Effect.fnUntraced(function* (identity: NonNullable<repo.AccountsNamed["identity"]>) {
        const user = yield* lockUser(txn.environment_id, identity.user_id).pipe(Effect.orDie)
        if (user?.status !== "active")
          return yield* fail("user_blocked", { identity_id: identity.id }, identity.user_id)
        yield* repo
          .touchIdentity(txn.environment_id, identity.id, profile.email ?? null, profile.issuer, now)
          .pipe(Effect.orDie)
        return yield* authenticated(user.id, { identity_id: identity.id })
      })
      const emailNormalized = profile.email === undefined ? null : normalizeEmail(profile.email)
      // 1. A known identity signs in.
      const known = yield* named(emailNormalized)
      if (known.identity) return yield* signIn(known.identity)
      // 2. No address: nothing to create an account for (users have an email).
      if (profile.email === undefined) return yield* fail("social_provider_error", { failure: "no_email" })
      // 3. The address belongs to an existing user: never link by email alone (spec: Social
      //    login rule 5); the user must prove that account first. 4. (below) An address the
      //    provider did not verify: no account is created on its word, or an attacker holding a
      //    provider account with someone else's unverified address would own that person's
      //    future account; the address is proven first (Email OTP on this transaction).
      const pendingLink = Effect.fnUntraced(function* (
        awaiting: { readonly userId: string } | { readonly addressUnverified: true },
        email: string,
      ) {
        const userId = "userId" in awaiting ? awaiting.userId : null
        yield* moveTo("link_required")
        yield* repo
          .insertPendingLink({
            transaction_id: txn.id,
            workspace_id: txn.workspace_id,
            environment_id: txn.environment_id,
            user_id: userId,
            connection_id: connection.id,
            provider,
            provider_subject: profile.subject,
            provider_issuer: profile.issuer,
            subject_claim: profile.subjectClaim,
            email,
            name: profile.name ?? null,
            avatar_url: profile.avatarUrl ?? null,
            locale: profile.locale ?? null,
            now,
          })
          .pipe(Effect.orDie)
        yield* repo
          .setPendingLinkView(
            txn.environment_id,
            txn.id,
            pendingLinkView(provider, email, profile.emailVerified, userId),
            now,
          )
          .pipe(Effect.orDie)
        yield* audit.append({
          ...base,
          actor: { type: "end_user" },
          action: "login.link_required",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: {
            provider,
            ...(userId ? { user_id: userId } : {}),
            reason: userId ? "existing_account" : "email_unverified",
            masked_email: maskEmail(email),
            client_id: txn.client_id,
          },
        })
        return { kind: "link_required" } as LoginOutcome
      })
      if (known.emailUserId) return yield* pendingLink({ userId: known.emailUserId }, profile.email)
      if (env.record.newUserCreationBlocked) return yield* fail("new_user_creation_blocked", {})
      if (!profile.emailVerified) return yield* pendingLink({ addressUnverified: true }, profile.email)
      // 5. A new address the provider verified: a new user with this identity.
      const created = yield* users.create({
        ...base,
        email: profile.email,
        emailVerified: true,
        name: profile.name,
        avatarUrl: profile.avatarUrl,
        locale: profile.locale,
        method: "social",
        actor: { type: "end_user" },
      })
      if (!created) {
        // The INSERT waited for a concurrent registration of this address and found it
        // committed: by a concurrent first login of this same provider account (its identity is
        // visible now, in this new snapshot: sign in through it), or by someone else (rule 3).
        const raced = yield* named(emailNormalized)
        if (raced.identity) return yield* signIn(raced.identity)
        if (!raced.emailUserId) return yield* Effect.die(new Error("user vanished during social login"))
        return yield* pendingLink({ userId: raced.emailUserId }, profile.email)
      }
      const identityId = yield* ids.make("idn")
      const inserted = yield* repo
        .insertIdentity({
          id: identityId,
          ...base,
          userId: created.id,
          connectionId: connection.id,
          key,
          email: profile.email,
          now,
        })
        .pipe(Effect.orDie)
      // A concurrent first login of the same subject won; roll this one back.
      if (!inserted)
        return yield* new InvalidTransactionState({ detail: "The identity was linked concurrently; start again" })
      yield* events.emit({
        type: "identity.linked",
        ...base,
        actor: { type: "end_user", id: created.id },
        payload: { userId: created.id, identityId, provider },
      })
      return yield* authenticated(created.id, { identity_id: identityId, new_user: true })
    })
    // The browser that came back gets the completion proof of a custom-UI transaction, with the
    // outcome, in the same SQL transaction (src/login/transactions/social-proof.ts).
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const outcome = yield* decide
          if (outcome.kind === "failed") return outcome
          return { ...outcome, proof: yield* issueSocialProof(txn) } as LoginOutcome
        }),
      )
      .pipe(Effect.catchTag("SqlError", Effect.die))
  })
