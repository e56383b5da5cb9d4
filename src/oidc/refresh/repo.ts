import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PipelinedReads } from "../../platform/pipelined-reads.js"
import { outboxCtes, type OutboxRow } from "../../platform/events/repo.js"
import { type ClientColumns, clientColumns } from "../token/client-repo.js"

/** Revocation reasons recorded on a family (sql/0030). */
export type FamilyRevokedReason = "revoked" | "refresh_token_reuse" | "code_replayed" | "user_logout"

export interface NewFamilyRow {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly clientId: string
  readonly userId: string
  readonly sessionId: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly authTime: Date
  readonly secretHash: string
  readonly now: Date
  readonly idleExpiresAt: Date
  readonly absoluteExpiresAt: Date
}

/**
 * Creates a family at generation 1 with its first token row and stretches the session's
 * expiry to the family's. The token endpoint writes the same rows inside the code's
 * consumption (src/oidc/token/code-repo.ts); this standalone form serves fixtures of other
 * capabilities (test/management/users).
 */
export const insertFamily = (f: NewFamilyRow) =>
  SqlClient.SqlClient.use(
    (sql) => sql`
  with family as (
    insert into refresh_families (id, workspace_id, environment_id, client_id, user_id, session_id, scopes, resources,
      auth_time, generation, created_at, last_used_at, idle_expires_at, absolute_expires_at)
    values (${f.id}, ${f.workspaceId}, ${f.environmentId}, ${f.clientId}, ${f.userId}, ${f.sessionId},
      ${f.scopes as Array<string>}::text[], ${f.resources as Array<string>}::text[], ${f.authTime}, 1, ${f.now}, ${f.now},
      ${f.idleExpiresAt}, ${f.absoluteExpiresAt})
    returning id
  ), token as (
    insert into refresh_tokens (family_id, generation, environment_id, secret_hash, issued_at)
    select id, 1, ${f.environmentId}, ${f.secretHash}, ${f.now} from family
  )
  update login_sessions set idle_expires_at = greatest(idle_expires_at, ${f.idleExpiresAt}),
    absolute_expires_at = greatest(absolute_expires_at, ${f.absoluteExpiresAt})
  where environment_id = ${f.environmentId} and id = ${f.sessionId}`,
  )

/** A family with everything a refresh decides on (one round trip). */
export interface FamilyState {
  readonly id: string
  readonly workspace_id: string
  readonly client_id: string
  readonly user_id: string
  readonly session_id: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly auth_time: Date
  readonly generation: number
  readonly idle_expires_at: Date
  readonly absolute_expires_at: Date
  readonly grace_generation: number | null
  readonly grace_response_sealed: string | null
  readonly grace_until: Date | null
  readonly revoked_at: Date | null
  /** SHA-256 hex of the presented generation's secret, when that generation exists. */
  readonly presented_hash: string | null
  readonly user_status: "active" | "blocked" | "pending_deletion"
  readonly user_security_version: number
  readonly email: string
  readonly email_verified: boolean
  readonly name: string | null
  readonly locale: string | null
  readonly user_updated_at: Date
  readonly session_revoked_at: Date | null
  readonly session_idle_expires_at: Date
  readonly session_absolute_expires_at: Date
  readonly session_security_version: number
  /** The user already counts as active this billing month (src/usage): no MAU write needed. */
  readonly mau_counted: boolean
}

/**
 * Reads, in one round trip, the presented client (authenticated by the caller) and, when it
 * exists, the family with its user and session and the stored hash of the presented
 * generation. No row: no such client. No lock: the rotation itself is a compare-and-set on
 * `generation` (rotateFamily). Pipelined with other requests' reads (PipelinedReads), so it must
 * stay a statement that never waits for a row lock.
 */
export const readClientAndFamily = (
  environmentId: string,
  clientId: string,
  familyId: string,
  presentedGeneration: number,
  billingMonth: string,
) =>
  PipelinedReads.use(
    (sql) => sql<ClientColumns & (FamilyState | { readonly id: null })>`
    select ${clientColumns(sql)}, f.id, f.workspace_id, f.client_id, f.user_id, f.session_id, f.scopes, f.resources, f.auth_time,
      f.generation, f.idle_expires_at, f.absolute_expires_at, f.grace_generation, f.grace_response_sealed, f.grace_until,
      f.revoked_at, t.secret_hash as presented_hash,
      u.status as user_status, u.security_version as user_security_version, u.email, u.email_verified, u.name, u.locale,
      u.updated_at as user_updated_at,
      s.revoked_at as session_revoked_at, s.idle_expires_at as session_idle_expires_at,
      s.absolute_expires_at as session_absolute_expires_at, s.security_version as session_security_version,
      exists (select 1 from mau_users m where m.environment_id = f.environment_id and m.billing_month = ${billingMonth}
        and m.user_id = f.user_id) as mau_counted
    from clients cl
      left join refresh_families f on f.environment_id = cl.environment_id and f.id = ${familyId}
      left join users u on u.environment_id = f.environment_id and u.id = f.user_id
      left join login_sessions s on s.environment_id = f.environment_id and s.id = f.session_id
      left join refresh_tokens t on t.family_id = f.id and t.generation = ${presentedGeneration}
    where cl.environment_id = ${environmentId} and cl.id = ${clientId} and cl.deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

export interface Rotation {
  readonly environmentId: string
  readonly familyId: string
  readonly sessionId: string
  readonly retiredGeneration: number
  readonly nextGeneration: number
  readonly nextSecretHash: string
  readonly graceResponseSealed: string
  readonly graceUntil: Date
  readonly now: Date
  readonly idleExpiresAt: Date
  readonly absoluteExpiresAt: Date
  /** The session's idle expiry when its row is renewed: the family's, rounded up to the minute. */
  readonly sessionIdleExpiresAt: Date
  /** The event reporting the rotation (login.succeeded), written only when it rotates. */
  readonly event: OutboxRow
}

/**
 * Rotates in one statement, as a compare-and-set: only while the family is live and still
 * at the retired generation (the UPDATE takes the row lock; a concurrent rotation that got
 * there first makes this one match no row, and its caller re-reads to find the winner's
 * response). It moves to the next generation, keeps the winner's sealed response for the
 * grace window (overwriting, i.e. purging, the previous one), adds the new token row,
 * renews the session's activity to the family's expiry and appends the rotation's event to
 * the outbox (with its webhook fan-out job when subscribed). The session row is written only
 * when its expiry would otherwise fall short of the family's: it is renewed to the next
 * minute, so a family refreshed often writes it about once a minute, not at every rotation
 * (docs/decisions/login-and-tokens.md, "Tokens: session activity"). One statement is atomic on its
 * own: no explicit transaction, one round trip (docs/decisions/performance.md). Returns whether it rotated.
 */
export const rotateFamily = (r: Rotation) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ rotated: number }>`
  with family as (
    update refresh_families set generation = ${r.nextGeneration}, last_used_at = ${r.now}, idle_expires_at = ${r.idleExpiresAt},
      grace_generation = ${r.retiredGeneration}, grace_response_sealed = ${r.graceResponseSealed}, grace_until = ${r.graceUntil}
    where environment_id = ${r.environmentId} and id = ${r.familyId} and generation = ${r.retiredGeneration} and revoked_at is null
    returning id
  ), token as (
    insert into refresh_tokens (family_id, generation, environment_id, secret_hash, issued_at)
    select id, ${r.nextGeneration}, ${r.environmentId}, ${r.nextSecretHash}, ${r.now} from family
  ), session as (
    update login_sessions set last_active_at = ${r.now},
      idle_expires_at = greatest(idle_expires_at, ${r.sessionIdleExpiresAt}),
      absolute_expires_at = greatest(absolute_expires_at, ${r.absoluteExpiresAt})
    where environment_id = ${r.environmentId} and id = ${r.sessionId} and exists (select 1 from family)
      and (idle_expires_at < ${r.idleExpiresAt} or absolute_expires_at < ${r.absoluteExpiresAt})
  ), ${outboxCtes(sql, r.event, "family")}
  select (select count(*) from family)::int as rotated, (select count(*) from fanout)::int as jobs`,
  ).pipe(Effect.map((rows) => (rows[0]?.rotated ?? 0) > 0))

export interface RevokedFamily {
  readonly id: string
  readonly workspace_id: string
  readonly user_id: string
  readonly session_id: string
  readonly client_id: string
}

/** Revokes one live family; the grace response is purged with it. */
export const revokeFamily = (environmentId: string, familyId: string, reason: FamilyRevokedReason, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<RevokedFamily>`update refresh_families
    set revoked_at = ${now}, revoked_reason = ${reason}, grace_generation = null, grace_response_sealed = null, grace_until = null
    where environment_id = ${environmentId} and id = ${familyId} and revoked_at is null
    returning id, workspace_id, user_id, session_id, client_id`,
  )

/** Revokes every live family of a login session (logout, reuse, code replay). */
export const revokeFamiliesOfSession = (
  environmentId: string,
  sessionId: string,
  reason: FamilyRevokedReason,
  now: Date,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<RevokedFamily>`update refresh_families
    set revoked_at = ${now}, revoked_reason = ${reason}, grace_generation = null, grace_response_sealed = null, grace_until = null
    where environment_id = ${environmentId} and session_id = ${sessionId} and revoked_at is null
    returning id, workspace_id, user_id, session_id, client_id`,
  )

/** The stored hash of one generation's secret (revocation proves possession with it). */
export const generationHash = (environmentId: string, familyId: string, generation: number) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ secret_hash: string }>`select t.secret_hash from refresh_tokens t
    where t.environment_id = ${environmentId} and t.family_id = ${familyId} and t.generation = ${generation}`,
  ).pipe(Effect.map((rows) => rows[0]?.secret_hash))

/**
 * When a family is revoked, its session's expiry falls back to the session's own limits
 * (7 days idle since last activity / 30 days since creation), which a live family had stretched.
 */
export const restoreSessionLimits = (environmentId: string, sessionId: string, idleMs: number, absoluteMs: number) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update login_sessions
    set idle_expires_at = least(idle_expires_at, last_active_at + make_interval(secs => ${idleMs / 1000})),
      absolute_expires_at = least(absolute_expires_at, created_at + make_interval(secs => ${absoluteMs / 1000}))
    where environment_id = ${environmentId} and id = ${sessionId}`,
  )

/**
 * Housekeeping: purge sealed grace responses whose 5-second window has passed. Found by the
 * minute their window ends (`grace_until_minute`, sql/0165: the index a rotation does not
 * touch), then by the exact time.
 */
export const purgeExpiredGrace = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update refresh_families
  set grace_generation = null, grace_response_sealed = null, grace_until = null
  where grace_until_minute <= ${Math.floor(now.getTime() / 60_000)} and grace_until < ${now}
  returning id`,
  )
