import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import type { Page } from "../../management/conventions/pagination.js"
import { UserSessionNotFound } from "../../management/users/errors.js"
import { Audit } from "../../platform/audit.js"
import * as sessions from "../../sessions/repo.js"
import { Users } from "../../users/service.js"
import { CurrentMe, type Me } from "../auth.js"
import { actorOf } from "../lock.js"
import { unavailableOnSqlError } from "../unavailable.js"
import { withCallSpan } from "../../platform/observability/span.js"

// The user's login sessions (spec: Self-service /me, session routes; rule 5). Revocation is
// `Users.revokeSessions`: the sessions AND the refresh families behind them end, with one
// `session.revoked` (reason `user_logout`) per session that was live.

export const listMySessions = Effect.fnUntraced(function* (page: Page) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const now = new Date(yield* Clock.currentTimeMillis)
  return yield* unavailableOnSqlError(sessions.liveSessionsOfUser(env.record.id, me.userId, now, page))
})

const revoke = Effect.fnUntraced(function* (me: Me, sessionId: string | undefined) {
  const env = yield* CurrentEnvironment
  const revoked = yield* (yield* Users).revokeSessions({
    workspaceId: env.record.workspaceId,
    environmentId: env.record.id,
    userId: me.userId,
    sessionId,
    reason: "user_logout",
    actor: actorOf(me),
  })
  for (const id of revoked) {
    yield* (yield* Audit).append({
      workspaceId: env.record.workspaceId,
      environmentId: env.record.id,
      actor: actorOf(me),
      action: "session.revoked",
      subjectType: "session",
      subjectId: id,
      details: { user_id: me.userId, reason: "user_logout", via: "me" },
    })
  }
  return revoked
})

/**
 * DELETE /me/sessions/{sessionId}: unknown or another user's is 404 `session_not_found`; a
 * session of the user that already ended answers the same success and emits nothing.
 * Revoking the current session makes the token used here inactive (rule 5).
 */
export const revokeMySession = Effect.fnUntraced(function* (sessionId: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  return yield* unavailableOnSqlError(
    sql.withTransaction(
      Effect.gen(function* () {
        const session = yield* sessions.lockSessionOfUser(env.record.id, me.userId, sessionId)
        if (!session) return yield* new UserSessionNotFound({ detail: "No such session" })
        yield* revoke(me, sessionId)
        return session
      }),
    ),
  )
}, withCallSpan("me.revokeSession"))

/** DELETE /me/sessions: every live session of the user, the current one included. */
export const revokeAllMySessions = Effect.gen(function* () {
  const me = yield* CurrentMe
  const sql = yield* SqlClient.SqlClient
  return yield* unavailableOnSqlError(sql.withTransaction(revoke(me, undefined)))
}).pipe(withCallSpan("me.revokeAllSessions"))
