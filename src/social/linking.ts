import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidTransactionState } from "../login/transactions/errors.js"
import * as transactions from "../login/transactions/repo.js"
import { Audit } from "../platform/audit.js"
import { Events } from "../platform/events/service.js"
import { Ids } from "../platform/ids.js"
import { lockUser, type UserRow, userById } from "../users/repo.js"
import * as repo from "./repo.js"

// The way out of `link_required` (docs/architecture.md: "link_required exits to authenticated after the
// user proves the existing account (Email OTP to that account's address or its passkey),
// or to failed on cancel"). The Email OTP and passkey ceremonies call these on the same
// transaction; the identity is linked only after the proof, never by email alone.

/** The account a `link_required` transaction waits for (Email OTP may only go to its address). */
export const pendingLinkUser = (txn: transactions.TransactionRow): Effect.Effect<UserRow | undefined, never, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const pending = yield* repo.pendingLinkOf(txn.environment_id, txn.id).pipe(Effect.orDie)
    if (!pending) return undefined
    return yield* userById(txn.environment_id, pending.user_id).pipe(Effect.orDie)
  })

export type LinkProofOutcome = "linked" | "wrong_account" | "blocked"

/**
 * Inside the caller's SQL transaction, after a successful proof by `provenUserId`: only the
 * pending link's own user may finish it. The identity is inserted (`identity.linked`), the
 * transaction moves `link_required` -> `authenticated` with method `social` (the login was
 * a social one; the proof only unlocked the link) and the pending link is cleared.
 */
export const completePendingLink = (txn: transactions.TransactionRow, provenUserId: string, now: Date) =>
  Effect.gen(function* () {
    const pending = yield* repo.pendingLinkOf(txn.environment_id, txn.id).pipe(Effect.orDie)
    if (!pending || pending.user_id !== provenUserId) return "wrong_account" as LinkProofOutcome
    const user = yield* lockUser(txn.environment_id, pending.user_id).pipe(Effect.orDie)
    if (!user || user.status !== "active") return "blocked" as LinkProofOutcome
    const ids = yield* Ids
    const events = yield* Events
    const audit = yield* Audit
    const base = { workspaceId: txn.workspace_id, environmentId: txn.environment_id } as const
    const actor = { type: "end_user" as const, id: user.id }
    const existing = yield* repo.identityBySubject(txn.environment_id, pending.provider, pending.provider_subject).pipe(Effect.orDie)
    if (existing && existing.user_id !== user.id) {
      return yield* new InvalidTransactionState({ detail: "This provider account was linked to another user meanwhile; start again" })
    }
    let identityId = existing?.id
    if (!identityId) {
      identityId = yield* ids.make("idn")
      const inserted = yield* repo.insertIdentity({
        id: identityId, ...base, userId: user.id, connectionId: pending.connection_id, provider: pending.provider,
        subject: pending.provider_subject, email: pending.email, now,
      }).pipe(Effect.orDie)
      if (!inserted) return yield* new InvalidTransactionState({ detail: "This provider account was linked meanwhile; start again" })
      yield* events.emit({ type: "identity.linked", ...base, actor, payload: { userId: user.id, identityId, provider: pending.provider } })
    }
    const moved = yield* transactions.transition(txn.environment_id, txn.id, ["link_required"], "authenticated", now, {
      method: "social", userId: user.id, authenticatedAt: now,
    }).pipe(Effect.orDie)
    if (!moved) return yield* new InvalidTransactionState({ detail: "The transaction moved on before the account was proven" })
    yield* repo.setPendingLinkView(txn.environment_id, txn.id, null, now).pipe(Effect.orDie)
    yield* audit.append({
      ...base, actor, action: "login.authenticated", subjectType: "auth_transaction", subjectId: txn.id,
      details: { method: "social", provider: pending.provider, identity_id: identityId, linked_after_proof: true, client_id: txn.client_id },
    })
    return "linked" as LinkProofOutcome
  })
