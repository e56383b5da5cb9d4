import { Effect } from "effect"
import { SqlClient } from "effect/sql"

// SQL of `webauthn_challenges` (sql/0050_webauthn_challenges.sql).

export type Ceremony = "registration" | "authentication"

export interface ChallengeRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly ceremony: Ceremony
  readonly context_key: string
  readonly transaction_id: string | null
  readonly session_id: string | null
  readonly client_id: string | null
  readonly user_id: string | null
  readonly rp_id: string
  readonly challenge_hash: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly consumed_at: Date | null
}

const columns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, ceremony, context_key, transaction_id,
  session_id, client_id, user_id, rp_id, challenge_hash, created_at, expires_at, consumed_at`

export interface NewChallenge {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly ceremony: Ceremony
  readonly contextKey: string
  readonly transactionId: string | null
  readonly sessionId: string | null
  readonly clientId: string | null
  readonly userId: string | null
  readonly rpId: string
  readonly challengeHash: string
  readonly now: Date
  readonly expiresAt: Date
}

/**
 * Stores the open challenge of a context and ceremony, replacing (in place, in one statement)
 * any earlier one that was never answered: only the latest options can be verified.
 */
export const putChallenge = (c: NewChallenge) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ChallengeRow>`insert into webauthn_challenges (id, workspace_id, environment_id, ceremony, context_key, transaction_id,
      session_id, client_id, user_id, rp_id, challenge_hash, created_at, expires_at)
    values (${c.id}, ${c.workspaceId}, ${c.environmentId}, ${c.ceremony}, ${c.contextKey}, ${c.transactionId},
      ${c.sessionId}, ${c.clientId}, ${c.userId}, ${c.rpId}, ${c.challengeHash}, ${c.now}, ${c.expiresAt})
    on conflict (environment_id, context_key, ceremony) where consumed_at is null do update set
      id = excluded.id, transaction_id = excluded.transaction_id, session_id = excluded.session_id,
      client_id = excluded.client_id, user_id = excluded.user_id, rp_id = excluded.rp_id,
      challenge_hash = excluded.challenge_hash, created_at = excluded.created_at, expires_at = excluded.expires_at
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/**
 * Consumes the open challenge of a context and ceremony: one conditional UPDATE, so of two
 * concurrent verifies exactly one gets the row. Returns it even when it has expired (the
 * caller refuses it); undefined when there is no open challenge.
 */
export const consumeChallenge = (environmentId: string, contextKey: string, ceremony: Ceremony, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`update webauthn_challenges set consumed_at = ${now}
    where environment_id = ${environmentId} and context_key = ${contextKey} and ceremony = ${ceremony}
      and consumed_at is null
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Housekeeping: challenges expired or consumed before `before` have no further use. */
export const deleteStaleChallenges = (before: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`delete from webauthn_challenges
    where expires_at <= ${before} or consumed_at <= ${before} returning id`,
  )
