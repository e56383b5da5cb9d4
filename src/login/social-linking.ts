import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { InvalidTransactionState } from "./transactions/errors.js"
import * as transactions from "./transactions/repo.js"
import { Audit } from "../platform/audit.js"
import { lockUser, normalizeEmail, type UserRow, userByEmail, userById } from "../users/repo.js"
import { Users } from "../users/service.js"
import { usableConnectionById } from "../management/connections/repo.js"
import { attachIdentity } from "../social/attach.js"
import { isCurrentFor } from "../social/identity-key.js"
import * as repo from "../social/repo.js"

// The way out of `link_required` (docs/architecture.md: "link_required exits to authenticated after the
// user proves the existing account (Email OTP to that account's address or its passkey),
// or to failed on cancel"). The Email OTP and passkey ceremonies call these on the same
// transaction; the identity is linked only after the proof, never by email alone. A pending
// link without a user (`user_id` null) waits for the proof of an address the provider did
// not verify: only an Email OTP to that address unlocks it (docs/decisions/login-and-tokens.md).

/**
 * Where the Email OTP of a `link_required` transaction may go (normalized): the existing
 * account's current address, or the unverified provider address itself. Undefined when
 * nothing is pending.
 */
export const pendingLinkProofAddress = (
  txn: transactions.TransactionRow,
): Effect.Effect<string | undefined, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const pending = yield* repo.pendingLinkOf(txn.environment_id, txn.id).pipe(Effect.orDie)
    if (!pending) return undefined
    if (pending.user_id === null) return pending.email === null ? undefined : normalizeEmail(pending.email)
    const owner = yield* userById(txn.environment_id, pending.user_id).pipe(Effect.orDie)
    return owner?.email_normalized
  })

/** What proved the account: its passkey, or an Email OTP code sent to `emailNormalized`. */
export type LinkProof =
  | { readonly by: "passkey"; readonly userId: string }
  | { readonly by: "email_otp"; readonly userId: string; readonly emailNormalized: string }

/** A pending link that waits for the proof of this (unverified provider) address. */
const awaitsAddress = (pending: repo.PendingLinkRow, emailNormalized: string) =>
  pending.user_id === null && pending.email !== null && normalizeEmail(pending.email) === emailNormalized

/** Whether this proof unlocks this pending link (only its account; an address only by a code sent to it). */
const proofFits = (pending: repo.PendingLinkRow, proof: LinkProof) =>
  pending.user_id !== null
    ? pending.user_id === proof.userId
    : proof.by === "email_otp" && awaitsAddress(pending, proof.emailNormalized)

export type AddressProofAccount =
  | { readonly kind: "account"; readonly user: UserRow }
  | { readonly kind: "wrong_account" }
  | { readonly kind: "new_user_blocked" }

/**
 * Inside the caller's SQL transaction, after an Email OTP code sent to `emailNormalized` was
 * verified on a `link_required` transaction whose pending link waits for that address (the
 * provider did not verify it): the account of that address, created now from the provider's
 * profile when there is none (`user.created` method `social`, `email_verified` true: the code
 * proved the address), unless the Environment blocks new users.
 */
export const accountForAddressProof = Effect.fnUntraced(function* (
  txn: transactions.TransactionRow,
  emailNormalized: string,
) {
  const pending = yield* repo.pendingLinkOf(txn.environment_id, txn.id).pipe(Effect.orDie)
  if (!pending || pending.email === null || !awaitsAddress(pending, emailNormalized)) {
    return { kind: "wrong_account" } as AddressProofAccount
  }
  const existing = yield* userByEmail(txn.environment_id, emailNormalized).pipe(Effect.orDie)
  if (existing) return { kind: "account", user: existing } as AddressProofAccount
  const env = yield* CurrentEnvironment
  if (env.record.newUserCreationBlocked) return { kind: "new_user_blocked" } as AddressProofAccount
  const created = yield* (yield* Users).create({
    workspaceId: txn.workspace_id,
    environmentId: txn.environment_id,
    email: pending.email,
    emailVerified: true,
    name: pending.name,
    avatarUrl: pending.avatar_url,
    locale: pending.locale,
    method: "social",
    actor: { type: "end_user" },
  })
  // Registered a moment ago by someone else: the code proved this address, so it is theirs too.
  const user = created ?? (yield* userByEmail(txn.environment_id, emailNormalized).pipe(Effect.orDie))
  if (!user) return yield* Effect.die(new Error("user vanished during an address proof"))
  return { kind: "account", user } as AddressProofAccount
})

export type LinkProofOutcome = "linked" | "wrong_account" | "blocked"

/**
 * Inside the caller's SQL transaction, after a successful proof: only the pending link's own
 * account (or, for an unverified provider address, a code sent to that address) may finish
 * it. The identity is inserted (`identity.linked`), the transaction moves `link_required` ->
 * `authenticated` with method `social` (the login was a social one; the proof only unlocked
 * the link) and the pending link is cleared.
 */
export const completePendingLink = Effect.fnUntraced(function* (
  txn: transactions.TransactionRow,
  proof: LinkProof,
  now: Date,
) {
  const pending = yield* repo.pendingLinkOf(txn.environment_id, txn.id).pipe(Effect.orDie)
  if (!pending || !proofFits(pending, proof)) return "wrong_account" as LinkProofOutcome
  const user = yield* lockUser(txn.environment_id, proof.userId).pipe(Effect.orDie)
  if (user?.status !== "active") return "blocked" as LinkProofOutcome
  const audit = yield* Audit
  const base = { workspaceId: txn.workspace_id, environmentId: txn.environment_id } as const
  const actor = { type: "end_user" as const, id: user.id }
  // The connection must still issue what the callback verified (an issuer re-pointed or a
  // subject claim remapped since then would make the identity stale at once).
  const connection = yield* usableConnectionById(txn.environment_id, pending.connection_id)
  const namespace = { issuer: pending.provider_issuer, subjectClaim: pending.subject_claim }
  if (!connection || connection.provider_key !== pending.provider || !isCurrentFor(connection, namespace)) {
    return yield* new InvalidTransactionState({
      detail: "The provider's connection changed since this sign-in; start again",
    })
  }
  const attached = yield* attachIdentity({
    ...base,
    userId: user.id,
    connection,
    email: pending.email,
    now,
    onePerProvider: false,
    key: {
      provider: pending.provider,
      ...namespace,
      subject: pending.provider_subject,
      adoptsLegacy: connection.provider === "microsoft",
    },
  })
  if (attached.kind === "other_user" || attached.kind === "provider_taken") {
    return yield* new InvalidTransactionState({
      detail: "This provider account was linked to another user meanwhile; start again",
    })
  }
  const identityId = attached.identityId
  const moved = yield* transactions
    .transition(txn.environment_id, txn.id, ["link_required"], "authenticated", now, {
      method: "social",
      userId: user.id,
      authenticatedAt: now,
    })
    .pipe(Effect.orDie)
  if (!moved)
    return yield* new InvalidTransactionState({ detail: "The transaction moved on before the account was proven" })
  yield* repo.setPendingLinkView(txn.environment_id, txn.id, null, now).pipe(Effect.orDie)
  yield* audit.append({
    ...base,
    actor,
    action: "login.authenticated",
    subjectType: "auth_transaction",
    subjectId: txn.id,
    details: {
      method: "social",
      provider: pending.provider,
      identity_id: identityId,
      linked_after_proof: true,
      proof: pending.user_id === null ? "email_address" : "existing_account",
      client_id: txn.client_id,
      ...(attached.kind === "linked" && attached.replaced.length > 0
        ? { replaced_stale_identities: attached.replaced }
        : {}),
    },
  })
  return "linked" as LinkProofOutcome
})
