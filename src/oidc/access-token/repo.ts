import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The live state an access token depends on: its user and the session behind `sid`. */
export interface LiveState {
  readonly user_id: string
  readonly workspace_id: string
  readonly status: "active" | "blocked" | "pending_deletion"
  readonly security_version: number
  readonly email: string
  readonly email_verified: boolean
  readonly name: string | null
  readonly locale: string | null
  readonly updated_at: Date
  /** null when no session `sid` of this user exists */
  readonly session_id: string | null
  readonly session_revoked_at: Date | null
  readonly session_idle_expires_at: Date | null
  readonly session_absolute_expires_at: Date | null
}

export const liveState = (environmentId: string, userId: string, sessionId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<LiveState>`select u.id as user_id, u.workspace_id, u.status, u.security_version, u.email, u.email_verified, u.name, u.locale,
      u.updated_at, s.id as session_id, s.revoked_at as session_revoked_at, s.idle_expires_at as session_idle_expires_at,
      s.absolute_expires_at as session_absolute_expires_at
    from users u
      left join login_sessions s on s.environment_id = u.environment_id and s.user_id = u.id and s.id = ${sessionId}
    where u.environment_id = ${environmentId} and u.id = ${userId}`,
  ).pipe(Effect.map((rows) => rows[0]))
