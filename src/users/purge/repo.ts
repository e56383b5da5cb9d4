import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { liveStateChanged } from "../../platform/live-state-changes.js"

/** A user due for purging (status pending_deletion since `deleted_at`). */
export interface DueUser {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly email: string
  readonly email_normalized: string
  readonly deleted_at: Date
}

/**
 * Locks up to `limit` users pending deletion since before `cutoff` (optionally of one
 * Environment), except `skip` (users whose purge failed earlier in this run). SKIP LOCKED: two
 * purges (two workers, or the CLI beside a worker) take disjoint users; a user whose row
 * another transaction holds is taken next time.
 */
export const lockDueUsers = (
  cutoff: Date,
  environmentId: string | undefined,
  skip: ReadonlyArray<string>,
  limit: number,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DueUser>`select id, workspace_id, environment_id, email, email_normalized, deleted_at from users
    where status = 'pending_deletion' and deleted_at <= ${cutoff}
      ${environmentId === undefined ? sql`` : sql`and environment_id = ${environmentId}`}
      ${skip.length === 0 ? sql`` : sql`and id <> all(${skip as Array<string>}::text[])`}
    order by deleted_at, id limit ${limit} for update skip locked`,
  )

/** Counts what a purge would take (the CLI's --dry-run). */
export const countDueUsers = (cutoff: Date, environmentId: string | undefined) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from users
    where status = 'pending_deletion' and deleted_at <= ${cutoff}
      ${environmentId === undefined ? sql`` : sql`and environment_id = ${environmentId}`}
    order by deleted_at, id`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.id)))

/**
 * Redacts the personal parts of the user's audit records: records about the user (subject,
 * actor, or `details.user_id`) and the Email OTP records of challenges still stored for the
 * address (sent before the address was registered: no user id on them; written before such
 * records stopped carrying the masked address, decisions "Audit records and personal data").
 * Only the keys the append-only trigger allows (sql/0160) are removed. Runs before the
 * challenges are deleted.
 */
export const redactAuditRecords = (user: DueUser) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`select set_config('authservice.audit_redaction', 'on', true)`
      const rows = yield* sql<{ n: number }>`with redacted as (
      update audit_events
        set details = (details - array['masked_email', 'masked_old_email', 'masked_new_email', 'note', 'reason'])
          || '{"personal_data_redacted": true}'::jsonb
      where environment_id = ${user.environment_id}
        and (details ?| array['masked_email', 'masked_old_email', 'masked_new_email', 'note']
          or (action like 'impersonation.%' and details ? 'reason'))
        and (subject_id = ${user.id} or actor_id = ${user.id} or details->>'user_id' = ${user.id}
          or details->>'challenge_id' in (select id from email_challenges
            where environment_id = ${user.environment_id} and email_normalized = ${user.email_normalized}))
      returning 1)
    select count(*)::int as n from redacted`
      yield* sql`select set_config('authservice.audit_redaction', 'off', true)`
      return rows[0]?.n ?? 0
    }),
  )

/**
 * Deletes everything that belongs to the user, children before parents, then the user row
 * itself: refresh families (their token rows cascade), codes, WebAuthn challenges, Email OTP
 * challenges (the user's email changes, which name other addresses; the user's transactions';
 * any sent to the address), login transactions,
 * sessions, identities, passkeys, export jobs of the user (their artifacts are personal data),
 * impersonation sessions of the user, mail delivery records and a bounce suppression of the
 * address (keyed by its HMAC, src/bounces). MAU rows keep the bare user id (usage is never
 * un-counted, decisions "MAU"); audit records are redacted, not deleted.
 */
export const deleteUserData = (user: DueUser, recipientHashes: ReadonlyArray<string>) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      const env = user.environment_id
      const hashes = recipientHashes as Array<string>
      // the address's pseudonymous traces (under any of its hashes): mail delivery records (their bounces cascade) and a suppression
      yield* sql`delete from mail_deliveries where environment_id = ${env} and recipient_hash = any(${hashes}::text[])`
      yield* sql`delete from email_suppressions where environment_id = ${env} and recipient_hash = any(${hashes}::text[])`
      yield* sql`delete from refresh_families where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from authorization_codes where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from webauthn_challenges where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from email_challenges where environment_id = ${env}
    and (user_id = ${user.id} or email_normalized = ${user.email_normalized}
      or transaction_id in (select id from auth_transactions where environment_id = ${env} and user_id = ${user.id}))`
      yield* sql`delete from auth_transactions where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from login_sessions where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from identities where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from passkeys where environment_id = ${env} and user_id = ${user.id}`
      yield* sql`delete from user_export_jobs where environment_id = ${env} and target_user_id = ${user.id}`
      yield* sql`delete from impersonation_sessions where environment_id = ${env} and target_user_id = ${user.id}`
      yield* sql`delete from users where environment_id = ${env} and id = ${user.id} and status = 'pending_deletion'`
      liveStateChanged(env, user.id)
    }),
  )

export const environmentExists = (environmentId: string) =>
  SqlClient.SqlClient.use((sql) => sql<{ id: string }>`select id from environments where id = ${environmentId}`).pipe(
    Effect.map((rows) => rows.length === 1),
  )
