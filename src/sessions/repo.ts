import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { liveStateChanged } from "../platform/live-state-changes.js"

export interface SessionRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly user_id: string
  readonly client_id: string | null
  readonly device_name: string | null
  readonly method: "email_otp" | "passkey" | "social"
  readonly acr: string
  readonly auth_time: Date
  readonly security_version: number
  readonly created_at: Date
  readonly last_active_at: Date
  readonly idle_expires_at: Date
  readonly absolute_expires_at: Date
  readonly revoked_at: Date | null
  readonly revoked_reason: string | null
}

const columns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, user_id, client_id, device_name, method, acr,
  auth_time, security_version, created_at, last_active_at, idle_expires_at, absolute_expires_at, revoked_at, revoked_reason`

export const sessionById = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SessionRow>`select ${columns(sql)} from login_sessions where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const insertSession = (s: {
  id: string
  workspaceId: string
  environmentId: string
  userId: string
  clientId: string | null
  deviceName: string | null
  method: string
  acr: string
  authTime: Date
  securityVersion: number
  ipPrefixHash: string | null
  now: Date
  idleExpiresAt: Date
  absoluteExpiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into login_sessions (id, workspace_id, environment_id, user_id, client_id,
    device_name, method, acr, auth_time, security_version, ip_prefix_hash, created_at, last_active_at, idle_expires_at, absolute_expires_at)
  values (${s.id}, ${s.workspaceId}, ${s.environmentId}, ${s.userId}, ${s.clientId}, ${s.deviceName}, ${s.method}, ${s.acr},
    ${s.authTime}, ${s.securityVersion}, ${s.ipPrefixHash}, ${s.now}, ${s.now}, ${s.idleExpiresAt}, ${s.absoluteExpiresAt})`,
  )

type SessionFilter = { environmentId: string; userId: string; sessionId?: string | undefined }

/**
 * The Hosted Login sessions that end with the login sessions `ended` revoked, in the same
 * statement (docs/decisions/hosted-login-sso.md): the one behind each revoked session, and,
 * when every session of the user is revoked, every one of the user's.
 */
const endHostedLoginSessions = (sql: SqlClient.SqlClient, filter: SessionFilter, reason: string, now: Date) => sql`,
  hosted as (update hosted_login_sessions set revoked_at = ${now}, revoked_reason = ${reason}
    where environment_id = ${filter.environmentId} and user_id = ${filter.userId} and revoked_at is null
      ${filter.sessionId === undefined ? sql`` : sql`and id in (select hosted_login_session_id from ended)`})`

/** Revokes live sessions matching the filter; returns the ones it revoked (for `session.revoked` events). */
export const revokeSessions = (filter: SessionFilter, reason: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string; user_id: string; workspace_id: string }>`with ended as (update login_sessions
    set revoked_at = ${now}, revoked_reason = ${reason}
    where environment_id = ${filter.environmentId} and user_id = ${filter.userId} and revoked_at is null
      ${filter.sessionId === undefined ? sql`` : sql`and id = ${filter.sessionId}`}
    returning id, user_id, workspace_id, hosted_login_session_id)${endHostedLoginSessions(sql, filter, reason, now)}
    select id, user_id, workspace_id from ended`,
  ).pipe(Effect.tap(() => Effect.sync(() => liveStateChanged(filter.environmentId, filter.userId))))

/** A session is live until revoked or past its idle or absolute expiry. */
const live = (sql: SqlClient.SqlClient, now: Date) =>
  sql`revoked_at is null and idle_expires_at > ${now} and absolute_expires_at > ${now}`

/** One page (keyset on id) of a user's live sessions. */
export const liveSessionsOfUser = (
  environmentId: string,
  userId: string,
  now: Date,
  page: { after: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<SessionRow>`select ${columns(sql)} from login_sessions
    where environment_id = ${environmentId} and user_id = ${userId} and ${live(sql, now)}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

/** A session of this user (live or not), locked for the caller's transaction. */
export const lockSessionOfUser = (environmentId: string, userId: string, sessionId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<SessionRow>`select ${columns(sql)} from login_sessions
    where environment_id = ${environmentId} and user_id = ${userId} and id = ${sessionId} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Revokes the user's LIVE sessions (or one of them); sessions already revoked or expired are
 * left alone, so no `session.revoked` is reported for a session that had already ended.
 */
export const revokeLiveSessions = (filter: SessionFilter, reason: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string; user_id: string; workspace_id: string }>`with ended as (update login_sessions
    set revoked_at = ${now}, revoked_reason = ${reason}
    where environment_id = ${filter.environmentId} and user_id = ${filter.userId} and ${live(sql, now)}
      ${filter.sessionId === undefined ? sql`` : sql`and id = ${filter.sessionId}`}
    returning id, user_id, workspace_id, hosted_login_session_id)${endHostedLoginSessions(sql, filter, reason, now)}
    select id, user_id, workspace_id from ended`,
  ).pipe(Effect.tap(() => Effect.sync(() => liveStateChanged(filter.environmentId, filter.userId))))

/** Ids of the user's live sessions (or of one), without locking: the families are locked first. */
export const liveSessionIds = (
  filter: { environmentId: string; userId: string; sessionId?: string | undefined },
  now: Date,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from login_sessions
    where environment_id = ${filter.environmentId} and user_id = ${filter.userId} and ${live(sql, now)}
      ${filter.sessionId === undefined ? sql`` : sql`and id = ${filter.sessionId}`}
    order by id`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.id)))
