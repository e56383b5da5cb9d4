import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { AccessDenied, InvalidTransactionState, TransactionNotAuthenticated } from "../login/transactions/errors.js"
import * as transactions from "../login/transactions/repo.js"
import { explainLostTransition, loadTransactionForUse, markInteractionStarted } from "../login/transactions/service.js"
import { Audit } from "../platform/audit.js"
import { Crypto } from "../platform/crypto.js"
import { Events } from "../platform/events/service.js"
import { ipPrefixHash } from "../platform/ip-prefix.js"
import { CurrentRequest } from "../platform/request-context.js"
import { userById } from "../users/repo.js"
import { ReauthenticationRequired, WebAuthnVerificationFailed } from "./errors.js"
import { completePendingLink } from "../login/social-linking.js"
import { requireSocialProof } from "../login/transactions/social-proof.js"
import type {
  AuthenticationCredential,
  AuthenticationOptionsBody,
  TransactionRegistrationOptionsBody,
  TransactionRegistrationVerifyBody,
} from "./schema.js"
import { type CeremonyScope, Passkeys } from "./service.js"
import { withCallSpan } from "../platform/observability/span.js"

// The passkey ceremonies of a login transaction (spec: Passkey (WebAuthn) routes under
// /auth/transactions/{transactionId}/passkeys). Registration never changes the
// transaction's status; authentication options move it to `challenge_issued`, a verified
// assertion to `authenticated` (docs/architecture.md, Login transaction).

/** Spec, Limits: "Fresh session: auth_time within 5 minutes"; the same bound for a transaction's authentication. */
export const FRESH_AUTHENTICATION_MS = 5 * 60_000

/** Statuses from which passkey authentication options may be issued (as an Email OTP start). */
const STARTABLE: ReadonlyArray<transactions.TransactionStatus> = ["created", "interaction_started", "challenge_issued"]

const scopeOf = Effect.fnUntraced(function* (txn: transactions.TransactionRow) {
  const env = yield* CurrentEnvironment
  return {
    env: env.record,
    urls: env.urls,
    context: { kind: "transaction", transactionId: txn.id },
    clientId: txn.client_id,
  } satisfies CeremonyScope
})

/**
 * Spec, Passkey rule 1: registration needs an authenticated and fresh transaction (a
 * just-completed OTP or social re-authentication). A custom-UI social login also needs its
 * completion proof, or an attacker who had a victim's browser authenticate the attacker's
 * transaction could enrol its own passkey on the victim's account. Returns the transaction's user.
 */
const authenticatedUser = Effect.fnUntraced(function* (
  txn: transactions.TransactionRow,
  socialProof: string | undefined,
) {
  if (txn.status !== "authenticated" || txn.user_id === null || txn.authenticated_at === null) {
    return yield* new TransactionNotAuthenticated({
      detail: `The transaction is ${txn.status}; passkey registration needs an authenticated transaction`,
    })
  }
  yield* requireSocialProof(txn, socialProof, "passkey_registration")
  const now = yield* Clock.currentTimeMillis
  if (now - txn.authenticated_at.getTime() > FRESH_AUTHENTICATION_MS) {
    return yield* new ReauthenticationRequired({
      detail: "The transaction was authenticated more than 5 minutes ago; authenticate again",
    })
  }
  const user = yield* userById(txn.environment_id, txn.user_id).pipe(Effect.orDie)
  if (user?.status !== "active") return yield* new AccessDenied({ detail: "The user is blocked" })
  return user
})

export const transactionRegistrationOptions = Effect.fnUntraced(function* (
  transactionId: string,
  body: TransactionRegistrationOptionsBody,
) {
  const txn = yield* loadTransactionForUse(transactionId)
  const user = yield* authenticatedUser(txn, body.social_proof)
  const passkeys = yield* Passkeys
  const sql = yield* SqlClient.SqlClient
  return yield* sql
    .withTransaction(
      passkeys.creationOptions(yield* scopeOf(txn), user, body.rp_id === undefined ? {} : { rp_id: body.rp_id }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("passkeys.transactionRegistrationOptions"))

export const transactionRegistrationVerify = Effect.fnUntraced(function* (
  transactionId: string,
  body: TransactionRegistrationVerifyBody,
) {
  const txn = yield* loadTransactionForUse(transactionId)
  const user = yield* authenticatedUser(txn, body.social_proof)
  const passkeys = yield* Passkeys
  const passkey = yield* passkeys.verifyRegistration(yield* scopeOf(txn), user, {
    credential: body.credential,
    ...(body.name === undefined ? {} : { name: body.name }),
  })
  // Registration leaves the transaction as it was (docs/architecture.md): its status is read back, not changed.
  const now = yield* transactions.transactionById(txn.environment_id, txn.id).pipe(Effect.orDie)
  return { passkey, transaction: now ?? txn }
}, withCallSpan("passkeys.transactionRegistrationVerify"))

/**
 * Request options. The first method call moves `created` -> `interaction_started` (commits
 * on its own, as for Email OTP), then one SQL transaction issues the challenge and moves the
 * transaction to `challenge_issued` (docs/architecture.md).
 */
export const transactionAuthenticationOptions = Effect.fnUntraced(function* (
  transactionId: string,
  body: AuthenticationOptionsBody,
) {
  const txn = yield* loadTransactionForUse(transactionId)
  // `link_required`: the existing account's passkey proves it (src/login/social-linking.ts); the status stays.
  const linkProof = txn.status === "link_required"
  if (!STARTABLE.includes(txn.status) && !linkProof) {
    return yield* new InvalidTransactionState({
      detail: `Passkey authentication cannot start on a ${txn.status} transaction`,
    })
  }
  yield* markInteractionStarted(txn)
  const passkeys = yield* Passkeys
  const sql = yield* SqlClient.SqlClient
  const scope = yield* scopeOf(txn)
  const now = yield* Clock.currentTimeMillis
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const moved = linkProof
          ? yield* transactions
              .transition(txn.environment_id, txn.id, ["link_required"], "link_required", new Date(now))
              .pipe(Effect.orDie)
          : yield* transactions
              .transition(txn.environment_id, txn.id, STARTABLE, "challenge_issued", new Date(now))
              .pipe(Effect.orDie)
        if (!moved) {
          return yield* explainLostTransition(txn.id, () =>
            Effect.fail(
              new InvalidTransactionState({
                detail: "The transaction moved on; passkey authentication can no longer start",
              }),
            ),
          )
        }
        return yield* passkeys.requestOptions(scope, body)
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("passkeys.transactionAuthenticationOptions"))

type VerifyOutcome =
  | { readonly kind: "authenticated" }
  | { readonly kind: "blocked" }
  | { readonly kind: "wrong_account" }

/**
 * Verify: the challenge is consumed first (a failure burns it and records login.failed);
 * a verified assertion moves `challenge_issued` -> `authenticated` with method `passkey`
 * in the same SQL transaction as the credential's counter update. A blocked user's valid
 * assertion is recorded as login.failed (user_blocked) and refused with 403 access_denied.
 */
export const transactionAuthenticationVerify = Effect.fnUntraced(function* (
  transactionId: string,
  credential: AuthenticationCredential,
) {
  const txn = yield* loadTransactionForUse(transactionId)
  const passkeys = yield* Passkeys
  const events = yield* Events
  const audit = yield* Audit
  const crypto = yield* Crypto
  const request = yield* CurrentRequest
  const ipHash = ipPrefixHash(crypto, txn.workspace_id, request?.ip)
  const outcome: VerifyOutcome = yield* passkeys.verifyAuthentication(
    yield* scopeOf(txn),
    credential,
    ({ user, passkey }) =>
      Effect.gen(function* () {
        const now = new Date(yield* Clock.currentTimeMillis)
        const actor = { type: "end_user" as const, id: user.id }
        if (user.status !== "active") {
          yield* events.emit({
            type: "login.failed",
            workspaceId: txn.workspace_id,
            environmentId: txn.environment_id,
            actor,
            payload: {
              userId: user.id,
              method: "passkey",
              reason: "user_blocked",
              clientId: txn.client_id,
              ...(ipHash ? { ipPrefixHash: ipHash } : {}),
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
            details: { reason: "user_blocked", method: "passkey", passkey_id: passkey.id, client_id: txn.client_id },
          })
          return { kind: "blocked" } as const
        }
        if (txn.status === "link_required") {
          const linked = yield* completePendingLink(txn, { by: "passkey", userId: user.id }, now)
          return linked === "linked"
            ? ({ kind: "authenticated" } as const)
            : linked === "blocked"
              ? ({ kind: "blocked" } as const)
              : ({ kind: "wrong_account" } as const)
        }
        const moved = yield* transactions.transition(
          txn.environment_id,
          txn.id,
          ["challenge_issued"],
          "authenticated",
          now,
          {
            method: "passkey",
            userId: user.id,
            authenticatedAt: now,
          },
        )
        if (!moved) {
          return yield* explainLostTransition(txn.id, () =>
            Effect.fail(
              new InvalidTransactionState({ detail: "The transaction moved on before the passkey was verified" }),
            ),
          )
        }
        yield* audit.append({
          workspaceId: txn.workspace_id,
          environmentId: txn.environment_id,
          actor,
          action: "login.authenticated",
          subjectType: "auth_transaction",
          subjectId: txn.id,
          details: { method: "passkey", passkey_id: passkey.id, client_id: txn.client_id },
        })
        return { kind: "authenticated" } as const
      }),
  )
  if (outcome.kind === "blocked") return yield* new AccessDenied({ detail: "The user is blocked" })
  if (outcome.kind === "wrong_account") {
    return yield* new WebAuthnVerificationFailed({
      detail: "This passkey belongs to another account than the one being linked",
    })
  }
  return { transaction_id: txn.id, status: "authenticated" as const }
}, withCallSpan("passkeys.transactionAuthenticationVerify"))
