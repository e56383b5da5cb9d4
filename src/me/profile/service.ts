import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRequest } from "../../http/errors.js"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { canonicalProfile, sameValue } from "../../management/users/service.js"
import { Audit } from "../../platform/audit.js"
import { Events } from "../../platform/events/service.js"
import { type UserFieldChanges, type UserRow, updateUserFields } from "../../users/repo.js"
import { Users } from "../../users/service.js"
import { CurrentMe } from "../auth.js"
import { actorOf, lockMe } from "../lock.js"
import { requireFresh } from "../fresh.js"
import { unavailableOnSqlError } from "../unavailable.js"
import type { UpdateProfileBody } from "./schema.js"
import { withCallSpan } from "../../platform/observability/span.js"

// GET / PATCH / DELETE /me (spec: Self-service /me; States and transitions: DELETE /me moves
// the user to pending_deletion).

/** GET /me: the row withMe read while checking the token (the same request, one read). */
export const getProfile = Effect.map(CurrentMe, (me) => me.user)

/**
 * PATCH /me. Locale and time zone are stored canonical, as the Management API stores them.
 * Only values that differ count: a PATCH changing nothing writes and emits nothing;
 * otherwise `user.updated` lists the changed wire fields (actor: the end user).
 */
export const updateProfile = Effect.fnUntraced(function* (body: UpdateProfileBody) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  if (Object.keys(body).length === 0) {
    return yield* new InvalidRequest({ detail: "Send at least one of name, avatar_url, locale, timezone" })
  }
  return yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        const user = yield* lockMe(me)
        const changes: Record<string, unknown> = {}
        for (const [field, value] of Object.entries(canonicalProfile(body))) {
          if (value !== undefined && !sameValue(value, user[field as keyof UserRow])) changes[field] = value
        }
        const changedFields = Object.keys(changes)
        if (changedFields.length === 0) return user
        const now = new Date(yield* Clock.currentTimeMillis)
        const updated = yield* updateUserFields(env.record.id, user.id, user.version, changes as UserFieldChanges, now)
        // The row is locked: its version cannot have moved.
        if (!updated) return yield* Effect.die(new Error(`user ${user.id} changed under its row lock`))
        yield* (yield* Events).emit({
          type: "user.updated",
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor: actorOf(me),
          payload: { userId: user.id, changedFields: changedFields as [string, ...Array<string>] },
        })
        yield* (yield* Audit).append({
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor: actorOf(me),
          action: "user.updated",
          subjectType: "user",
          subjectId: user.id,
          details: { changed_fields: changedFields, via: "me" },
        })
        return updated
      }),
    ),
  )
}, withCallSpan("me.updateProfile"))

/**
 * DELETE /me (spec: /me rule 1, fresh session): `Users.requestDeletion` with reason
 * `user_request` moves the user to `pending_deletion`, raises the security version (every
 * access token dies), revokes every live session and its refresh families (`session.revoked`
 * reason `user_logout`: the user ended them) and emits `user.deleted`.
 */
export const deleteMe = Effect.gen(function* () {
  const me = yield* CurrentMe
  yield* requireFresh(me, "delete the account")
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  const users = yield* Users
  return yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        const user = yield* lockMe(me)
        // A concurrent DELETE /me of another session won the lock: it did everything already.
        if (user.status === "pending_deletion") return user
        const updated = yield* users.requestDeletion({
          user,
          reason: "user_request",
          sessionReason: "user_logout",
          actor: actorOf(me),
        })
        yield* (yield* Audit).append({
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor: actorOf(me),
          action: "user.deleted",
          subjectType: "user",
          subjectId: user.id,
          details: { reason: "user_request", via: "me" },
        })
        return updated
      }),
    ),
  )
}).pipe(withCallSpan("me.delete"))
