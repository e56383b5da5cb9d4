import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Hosted Login sessions (sql/0183; docs/decisions/hosted-login-sso.md): SQL only. The cookie's
 * secret is never stored, only its SHA-256.
 */
export interface HostedLoginSessionRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly user_id: string
  readonly method: "email_otp" | "passkey" | "social"
  readonly auth_time: Date
  readonly security_version: number
  readonly absolute_expires_at: Date
}

/** A live Hosted Login session and what is shown of its user. */
export interface LiveHostedLoginSession extends HostedLoginSessionRow {
  readonly email: string
}

export const insertHostedLoginSession = (s: {
  id: string
  workspaceId: string
  environmentId: string
  userId: string
  secretHash: string
  method: string
  authTime: Date
  securityVersion: number
  now: Date
  idleExpiresAt: Date
  absoluteExpiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into hosted_login_sessions (id, workspace_id, environment_id, user_id,
    secret_hash, method, auth_time, security_version, created_at, last_used_at, idle_expires_at, absolute_expires_at)
  values (${s.id}, ${s.workspaceId}, ${s.environmentId}, ${s.userId}, ${s.secretHash}, ${s.method}, ${s.authTime},
    ${s.securityVersion}, ${s.now}, ${s.now}, ${s.idleExpiresAt}, ${s.absoluteExpiresAt})`,
  ).pipe(Effect.asVoid)

/**
 * The Hosted Login session of a cookie's secret hash, when it is live now: not revoked, within
 * its idle and absolute expiry, its user active and at the security version of the sign-in.
 * `lock` takes the row for the caller's SQL transaction.
 */
export const liveHostedLoginSession = (environmentId: string, secretHash: string, now: Date, lock: boolean) =>
  SqlClient.SqlClient.use(
    (sql) => sql<LiveHostedLoginSession>`select h.id, h.workspace_id, h.environment_id, h.user_id,
      h.method, h.auth_time, h.security_version, h.absolute_expires_at, u.email
    from hosted_login_sessions h
    join users u on u.environment_id = h.environment_id and u.id = h.user_id
    where h.environment_id = ${environmentId} and h.secret_hash = ${secretHash} and h.revoked_at is null
      and h.idle_expires_at > ${now} and h.absolute_expires_at > ${now}
      and u.status = 'active' and u.security_version = h.security_version
    ${lock ? sql`for update of h` : sql``}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** A use renews the idle expiry (never past the absolute one). */
export const touchHostedLoginSession = (environmentId: string, id: string, now: Date, idleExpiresAt: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update hosted_login_sessions
    set last_used_at = ${now}, idle_expires_at = least(${idleExpiresAt}, absolute_expires_at)
    where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.asVoid)

/** Ends the Hosted Login session of a cookie's secret hash (another account signed in on this browser). */
export const revokeHostedLoginSessionBySecret = (
  environmentId: string,
  secretHash: string,
  reason: string,
  now: Date,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update hosted_login_sessions set revoked_at = ${now}, revoked_reason = ${reason}
    where environment_id = ${environmentId} and secret_hash = ${secretHash} and revoked_at is null`,
  ).pipe(Effect.asVoid)

/** Records which Hosted Login session a login session came from (its revocation then ends both). */
export const linkLoginSession = (environmentId: string, sessionId: string, hostedLoginSessionId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update login_sessions set hosted_login_session_id = ${hostedLoginSessionId}
    where environment_id = ${environmentId} and id = ${sessionId}`,
  ).pipe(Effect.asVoid)

/** Housekeeping: Hosted Login sessions past their absolute expiry are of no use any more. */
export const deleteEndedHostedLoginSessions = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`delete from hosted_login_sessions
    where id in (select id from hosted_login_sessions where absolute_expires_at <= ${now} limit 500 for update skip locked)
    returning id`,
  ).pipe(Effect.map((rows) => rows.length))
