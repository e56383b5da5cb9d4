import { SqlClient } from "effect/sql"

// SQL of impersonation sessions (sql/0062_impersonation.sql).

export interface ImpersonationRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly platform_user_id: string
  readonly target_user_id: string
  readonly started_at: Date
  readonly expires_at: Date
  readonly ended_at: Date | null
}

const columns = (sql: SqlClient.SqlClient) =>
  sql`id, workspace_id, environment_id, platform_user_id, target_user_id, started_at, expires_at, ended_at`

export const insertImpersonation = (r: {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly platformUserId: string
  readonly targetUserId: string
  readonly reason: string
  readonly durationMinutes: number
  readonly cookieHash: string
  readonly startedAt: Date
  readonly expiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into impersonation_sessions (id, workspace_id, environment_id, platform_user_id,
    target_user_id, reason, duration_minutes, cookie_hash, started_at, expires_at)
  values (${r.id}, ${r.workspaceId}, ${r.environmentId}, ${r.platformUserId}, ${r.targetUserId}, ${r.reason}, ${r.durationMinutes},
    ${r.cookieHash}, ${r.startedAt}, ${r.expiresAt})`,
  )

/**
 * Ends live impersonations (not ended, not expired) matching the filter, in one
 * conditional UPDATE: of concurrent stops exactly one ends each session.
 */
export const endImpersonations = (
  filter: {
    readonly cookieHash?: string | undefined
    readonly platformUserId?: string | undefined
    readonly workspaceId?: string | undefined
  },
  reason: "stopped" | "replaced",
  now: Date,
) =>
  SqlClient.SqlClient.use((sql) => {
    const conditions = [sql`ended_at is null`, sql`expires_at > ${now}`]
    if (filter.cookieHash !== undefined) conditions.push(sql`cookie_hash = ${filter.cookieHash}`)
    if (filter.platformUserId !== undefined) conditions.push(sql`platform_user_id = ${filter.platformUserId}`)
    if (filter.workspaceId !== undefined) conditions.push(sql`workspace_id = ${filter.workspaceId}`)
    return sql<ImpersonationRow>`update impersonation_sessions set ended_at = ${now}, end_reason = ${reason}
    where ${sql.and(conditions)} returning ${columns(sql)}`
  })
