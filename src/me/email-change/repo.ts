import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { liveStateChanged } from "../../platform/live-state-changes.js"
import type { ChallengeStatus } from "../../login/email-otp/repo.js"

// SQL of email change challenges (rows of `email_challenges`, sql/0021 + sql/0070). Attempts,
// finishing and the mail job's generation check use the Email OTP repo as they are.

export type EmailChangeStage = "email_change_old" | "email_change_new"

export interface EmailChangeChallengeRow {
  readonly id: string
  readonly user_id: string
  readonly purpose: EmailChangeStage
  /** Where this stage's code went: the current address, then the new one. */
  readonly email: string
  readonly email_normalized: string
  readonly new_email: string
  readonly generation: number
  readonly code_hmac: string
  readonly failed_attempts: number
  readonly status: ChallengeStatus
  readonly expires_at: Date
}

const columns = (sql: SqlClient.SqlClient) => sql`id, user_id, purpose, email, email_normalized, new_email, generation,
  code_hmac, failed_attempts, status, expires_at`

/** Ends the user's active email change challenge (either stage): one change at a time per user. */
export const supersedeActiveOfUser = (environmentId: string, userId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update email_challenges set status = 'superseded', finished_at = ${now}
    where environment_id = ${environmentId} and user_id = ${userId} and purpose <> 'login' and status = 'active'`,
  )

export const insertEmailChangeChallenge = (c: {
  id: string
  workspaceId: string
  environmentId: string
  userId: string
  purpose: EmailChangeStage
  email: string
  emailNormalized: string
  newEmail: string
  codeHmac: string
  now: Date
  expiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<EmailChangeChallengeRow>`insert into email_challenges (id, workspace_id, environment_id,
    user_id, purpose, email, email_normalized, new_email, generation, code_hmac, failed_attempts, status, created_at, last_sent_at, expires_at)
  values (${c.id}, ${c.workspaceId}, ${c.environmentId}, ${c.userId}, ${c.purpose}, ${c.email}, ${c.emailNormalized}, ${c.newEmail},
    1, ${c.codeHmac}, 0, 'active', ${c.now}, ${c.now}, ${c.expiresAt})
  returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** This user's challenge of this stage, locked: verifies of one challenge count one at a time. */
export const lockEmailChangeChallenge = (environmentId: string, userId: string, id: string, stage: EmailChangeStage) =>
  SqlClient.SqlClient.use(
    (sql) => sql<EmailChangeChallengeRow>`select ${columns(sql)} from email_challenges
    where environment_id = ${environmentId} and id = ${id} and user_id = ${userId} and purpose = ${stage} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * The switch (spec: /me rule 3): the new address, verified, its own suppression state (the
 * old address's hard bounce says nothing about the new one, which may have bounced itself),
 * and the security version + 1 so every access token issued before it is inactive. The
 * caller holds the user row lock.
 */
export const switchEmail = (c: {
  environmentId: string
  userId: string
  email: string
  emailNormalized: string
  emailSuppressed: boolean
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ security_version: number }>`update users
    set email = ${c.email}, email_normalized = ${c.emailNormalized}, email_verified = true, email_suppressed = ${c.emailSuppressed},
      security_version = security_version + 1, updated_at = ${c.now}, version = version + 1
    where environment_id = ${c.environmentId} and id = ${c.userId}
    returning security_version`,
  ).pipe(
    Effect.tap(() => Effect.sync(() => liveStateChanged(c.environmentId, c.userId))),
    Effect.map((rows) => rows[0]!),
  )

/**
 * Housekeeping: email change challenges (either stage, whatever their status) whose code expired
 * before `before`. Login challenges go with their transactions (src/login/housekeeping.ts).
 */
export const deleteEndedChallenges = (before: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        n: number
      }>`with gone as (delete from email_challenges where purpose <> 'login' and expires_at < ${before} returning 1)
    select count(*)::int as n from gone`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))
