import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Events } from "../platform/events/service.js"
import { withCallSpan } from "../platform/observability/span.js"
import { deleteEndedHostedLoginSessions } from "./hosted-login-repo.js"

const BATCH = 500

/**
 * Ends sessions past their idle or absolute expiry with `session.revoked` reason
 * `session_expired`. Refreshes stretch a session's expiries to its refresh family's, so a
 * session found here has no live family either. One batch per run, skipping rows another
 * worker holds; the event is emitted in the same transaction as the change. Idle expiry is
 * found by its hour first (`idle_expires_hour`, sql/0165: the index a refresh does not touch).
 */
export const sweepExpiredSessions = Effect.fnUntraced(
  function* (now: Date) {
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const ended = yield* sql<{ id: string; user_id: string; workspace_id: string; environment_id: string }>`
      update login_sessions set revoked_at = ${now}, revoked_reason = 'session_expired'
      where id in (
        select id from login_sessions
        where revoked_at is null
          and ((idle_expires_hour <= ${Math.floor(now.getTime() / 3_600_000)} and idle_expires_at <= ${now}) or absolute_expires_at <= ${now})
        limit ${BATCH} for update skip locked)
      returning id, user_id, workspace_id, environment_id`
        for (const session of ended) {
          yield* events.emit({
            type: "session.revoked",
            workspaceId: session.workspace_id,
            environmentId: session.environment_id,
            actor: { type: "system" },
            payload: { userId: session.user_id, sessionId: session.id, reason: "session_expired" },
          })
        }
        // Hosted Login sessions past their absolute expiry can never be used again: deleted in batches.
        yield* deleteEndedHostedLoginSessions(now)
        return ended.length
      }),
    )
  },
  Effect.orDie,
  withCallSpan("sessions.sweepExpired"),
)
