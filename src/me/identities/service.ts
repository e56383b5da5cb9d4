import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import type { Page } from "../../management/conventions/pagination.js"
import * as identities from "../../management/users/repo.js"
import { Audit } from "../../platform/audit.js"
import { Events } from "../../platform/events/service.js"
import { CurrentMe } from "../auth.js"
import { IdentityNotFound, LastFactorDeletionRequiresConfirmation } from "../errors.js"
import { actorOf, lockMe } from "../lock.js"
import { authenticationMethodCount } from "../methods.js"
import { unavailableOnSqlError } from "../unavailable.js"
import { withCallSpan } from "../../platform/observability/span.js"

// The user's linked social identities (spec: Self-service /me, identity routes; rule 4).
// Identities are created by social login and linking; here they are listed and unlinked.

export const listMyIdentities = Effect.fnUntraced(function* (page: Page) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  return yield* unavailableOnSqlError(identities.identitiesOfUser(env.record.id, me.userId, page))
})

/**
 * DELETE /me/identities/{identityId}. With the user row locked the method count (docs/architecture.md,
 * Last factor) is exact under concurrent deletions: an unlink that would leave no way to sign
 * in is 400 `last_factor_deletion_requires_confirmation` and the deletion is rolled back. An unknown
 * id, or another user's, is 400 `identity_not_found` (spec, Errors).
 */
export const unlinkMyIdentity = Effect.fnUntraced(function* (identityId: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  const audit = yield* Audit
  return yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        yield* lockMe(me)
        const identity = yield* identities.deleteIdentity(env.record.id, me.userId, identityId)
        if (!identity) return yield* new IdentityNotFound({ detail: "No such linked identity" })
        // Counted after the deletion (rolled back on refusal): what would remain. An identity whose
        // Connection is not usable never counted, so unlinking it leaves as many methods as before.
        if ((yield* authenticationMethodCount(env.record.id, me.userId)) === 0) {
          return yield* new LastFactorDeletionRequiresConfirmation({
            detail:
              "This linked account is your last way to sign in; add another method (a passkey or a verified email) first",
          })
        }
        yield* events.emit({
          type: "identity.unlinked",
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor: actorOf(me),
          payload: { userId: me.userId, identityId: identity.id, provider: identity.provider },
        })
        yield* audit.append({
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor: actorOf(me),
          action: "identity.unlinked",
          subjectType: "identity",
          subjectId: identity.id,
          details: { user_id: me.userId, provider: identity.provider, via: "me" },
        })
        return identity
      }),
    ),
  )
}, withCallSpan("me.unlinkIdentity"))
