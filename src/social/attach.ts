import { Effect } from "effect"
import type { ConnectionRow } from "../management/connections/repo.js"
import { Audit } from "../platform/audit.js"
import { Events } from "../platform/events/service.js"
import { Ids } from "../platform/ids.js"
import type { IdentityKey } from "./identity-key.js"
import * as repo from "./repo.js"

// Linking a verified provider identity to a user who proved the account (a link_required proof,
// or a confirmed /me link). Shared so both apply the same rules, inside the caller's SQL
// transaction with the user row locked.

export type AttachOutcome =
  | { readonly kind: "linked"; readonly identityId: string; readonly replaced: ReadonlyArray<string> }
  | { readonly kind: "already_linked"; readonly identityId: string }
  | { readonly kind: "other_user" }
  | { readonly kind: "provider_taken" }

export interface AttachInput {
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
  /** The usable connection that issued the key (it is current for it). */
  readonly connection: ConnectionRow
  readonly key: IdentityKey
  readonly email: string | null
  readonly now: Date
  /** /me linking keeps one identity per provider per user (docs/decisions/social-login.md). */
  readonly onePerProvider: boolean
}

/**
 * The key's identity already belongs to another user: `other_user` (never moved). It is the
 * user's own: touched, nothing else changes. Else (with `onePerProvider`, unless the user has
 * a current identity of that provider: `provider_taken`) it is inserted (`identity.linked`),
 * and the user's stale identities of that provider (an issuer or subject claim the connection
 * no longer uses: they cannot sign in) are replaced by it (`identity.unlinked` each, audited
 * with reason `replaced_stale`). A concurrent insert of the same key wins: `other_user`.
 */
export const attachIdentity = Effect.fnUntraced(function* (input: AttachInput) {
  const ids = yield* Ids
  const events = yield* Events
  const audit = yield* Audit
  const base = { workspaceId: input.workspaceId, environmentId: input.environmentId } as const
  const actor = { type: "end_user" as const, id: input.userId }
  const existing = yield* repo.identityByKey(input.environmentId, input.key).pipe(Effect.orDie)
  if (existing && existing.user_id !== input.userId) return { kind: "other_user" } as AttachOutcome
  if (existing) {
    yield* repo
      .touchIdentity(input.environmentId, existing.id, input.email, input.key.issuer, input.now)
      .pipe(Effect.orDie)
    return { kind: "already_linked", identityId: existing.id } as AttachOutcome
  }
  if (
    input.onePerProvider &&
    (yield* repo
      .userHasCurrentProviderIdentity(input.environmentId, input.userId, input.connection.id)
      .pipe(Effect.orDie))
  ) {
    return { kind: "provider_taken" } as AttachOutcome
  }
  const identityId = yield* ids.make("idn")
  const inserted = yield* repo
    .insertIdentity({
      id: identityId,
      ...base,
      userId: input.userId,
      connectionId: input.connection.id,
      key: input.key,
      email: input.email,
      now: input.now,
    })
    .pipe(Effect.orDie)
  if (!inserted) return { kind: "other_user" } as AttachOutcome
  const stale = yield* repo
    .deleteStaleIdentities(input.environmentId, input.userId, input.connection.id)
    .pipe(Effect.orDie)
  for (const old of stale) {
    yield* events.emit({
      type: "identity.unlinked",
      ...base,
      actor,
      payload: { userId: input.userId, identityId: old.id, provider: old.provider },
    })
    yield* audit.append({
      ...base,
      actor,
      action: "identity.unlinked",
      subjectType: "identity",
      subjectId: old.id,
      details: { user_id: input.userId, provider: old.provider, reason: "replaced_stale", replaced_by: identityId },
    })
  }
  yield* events.emit({
    type: "identity.linked",
    ...base,
    actor,
    payload: { userId: input.userId, identityId, provider: input.key.provider },
  })
  return { kind: "linked", identityId, replaced: stale.map((s) => s.id) } as AttachOutcome
})
