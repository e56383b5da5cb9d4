import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export type ChallengeStatus = "active" | "withheld" | "verified" | "invalidated" | "superseded" | "consumed"

/**
 * Statuses in which a challenge can still be verified or resent: `active` (it holds the
 * email's one valid code) and `withheld` (it verifies against that code; sql/0163).
 */
export const isOpen = (status: ChallengeStatus) => status === "active" || status === "withheld"

export interface ChallengeRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly transaction_id: string
  readonly purpose: "login"
  readonly email: string
  readonly email_normalized: string
  readonly generation: number
  readonly code_hmac: string
  readonly failed_attempts: number
  readonly status: ChallengeStatus
  /** HMAC of the client address that started or last renewed it (./replacement.ts); null before sql/0163. */
  readonly issued_from: string | null
  readonly created_at: Date
  readonly last_sent_at: Date
  readonly expires_at: Date
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, transaction_id, purpose, email,
  email_normalized, generation, code_hmac, failed_attempts, status, issued_from, created_at, last_sent_at, expires_at`

/**
 * Serialises every challenge write for one Environment + email + purpose until the caller's
 * SQL transaction ends, so "one active code" holds under concurrent starts.
 */
export const lockEmail = (environmentId: string, emailNormalized: string, purpose: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`select pg_advisory_xact_lock(hashtextextended(${`email-otp:${environmentId}:${purpose}:${emailNormalized}`}, 0))`,
  )

/**
 * The open challenges (active and withheld) of an email that have not expired: the holder of
 * its one valid code and whoever relies on that code. Read under `lockEmail`.
 */
export const openChallengesOfEmail = (environmentId: string, emailNormalized: string, purpose: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`select ${columns(sql)} from email_challenges
    where environment_id = ${environmentId} and email_normalized = ${emailNormalized} and purpose = ${purpose}
      and status in ('active', 'withheld') and expires_at > ${now}`,
  )

/** The email's one valid code, locked (a withheld challenge's verify uses it up). */
export const lockActiveOfEmail = (environmentId: string, emailNormalized: string, purpose: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`select ${columns(sql)} from email_challenges
    where environment_id = ${environmentId} and email_normalized = ${emailNormalized} and purpose = ${purpose} and status = 'active'
    for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Before a start's new challenge: every open challenge of the transaction ends (one at a time
 * per transaction), and, when the start changes the email's code (`keepEmailCode` false), the
 * email's active one too (one valid code at a time). A withheld start keeps the email's code,
 * even when its own transaction holds it.
 */
export const supersedeForStart = (c: {
  environmentId: string
  emailNormalized: string
  purpose: string
  transactionId: string
  keepEmailCode: boolean
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update email_challenges set status = 'superseded', finished_at = ${c.now}
    where environment_id = ${c.environmentId} and status in ('active', 'withheld')
      and (transaction_id = ${c.transactionId} or (email_normalized = ${c.emailNormalized} and purpose = ${c.purpose} and status = 'active'))
      and not (${c.keepEmailCode}::boolean and email_normalized = ${c.emailNormalized} and purpose = ${c.purpose} and status = 'active')`,
  )

/** Ends the email's active challenge (a withheld challenge becomes the code holder in its place). */
export const supersedeActiveOfEmail = (c: {
  environmentId: string
  emailNormalized: string
  purpose: string
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update email_challenges set status = 'superseded', finished_at = ${c.now}
    where environment_id = ${c.environmentId} and email_normalized = ${c.emailNormalized} and purpose = ${c.purpose} and status = 'active'`,
  )

export const insertChallenge = (c: {
  id: string
  workspaceId: string
  environmentId: string
  transactionId: string
  purpose: "login"
  email: string
  emailNormalized: string
  codeHmac: string
  status: "active" | "withheld"
  issuedFrom: string
  now: Date
  expiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`insert into email_challenges (id, workspace_id, environment_id,
    transaction_id, purpose, email, email_normalized, generation, code_hmac, failed_attempts, status, issued_from, created_at,
    last_sent_at, expires_at)
  values (${c.id}, ${c.workspaceId}, ${c.environmentId}, ${c.transactionId}, ${c.purpose}, ${c.email}, ${c.emailNormalized},
    1, ${c.codeHmac}, 0, ${c.status}, ${c.issuedFrom}, ${c.now}, ${c.now}, ${c.expiresAt})
  returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

export const challengeOfTransaction = (environmentId: string, transactionId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ChallengeRow>`select ${columns(sql)} from email_challenges
    where environment_id = ${environmentId} and transaction_id = ${transactionId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Locks the challenge row: verifies and resends of one challenge run one at a time. */
export const lockChallenge = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ChallengeRow>`select ${columns(sql)} from email_challenges where environment_id = ${environmentId} and id = ${id} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * A new generation: new code, new 5 minutes; earlier codes stop matching (their HMAC covers the
 * generation). `status` `active` with a withheld row makes it the email's code holder.
 */
export const renewChallenge = (c: {
  environmentId: string
  id: string
  generation: number
  codeHmac: string
  status: "active" | "withheld"
  issuedFrom: string
  now: Date
  expiresAt: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`update email_challenges
      set generation = ${c.generation}, code_hmac = ${c.codeHmac}, status = ${c.status}, issued_from = ${c.issuedFrom},
        last_sent_at = ${c.now}, expires_at = ${c.expiresAt}
    where environment_id = ${c.environmentId} and id = ${c.id} and status in ('active', 'withheld') and generation = ${c.generation - 1}
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** A resend that may not change the email's code: only the time of the (withheld) send moves (the 30-second rule). */
export const touchChallenge = (c: { environmentId: string; id: string; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ChallengeRow>`update email_challenges set last_sent_at = ${c.now}
    where environment_id = ${c.environmentId} and id = ${c.id} and status in ('active', 'withheld')
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** One more wrong attempt; at `maxFailures` the challenge is invalidated. Returns the new count. */
export const recordFailure = (c: { environmentId: string; id: string; maxFailures: number; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ failed_attempts: number; status: ChallengeStatus }>`update email_challenges
      set failed_attempts = failed_attempts + 1,
        status = case when failed_attempts + 1 >= ${c.maxFailures} then 'invalidated' else status end,
        finished_at = case when failed_attempts + 1 >= ${c.maxFailures} then ${c.now}::timestamptz else finished_at end
    where environment_id = ${c.environmentId} and id = ${c.id} and status in ('active', 'withheld')
    returning failed_attempts, status`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Ends an open challenge (`verified` on success; `consumed` when the code was right but the
 * login refused, or when a withheld challenge used this one's code).
 */
export const finishChallenge = (c: { environmentId: string; id: string; status: "verified" | "consumed"; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update email_challenges set status = ${c.status}, finished_at = ${c.now}
    where environment_id = ${c.environmentId} and id = ${c.id} and status in ('active', 'withheld')
    returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/** Is this generation still the one to mail (the mail job skips superseded or renewed codes)? */
export const isCurrentGeneration = (environmentId: string, id: string, generation: number) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        current: boolean
      }>`select (status = 'active' and generation = ${generation}) as current from email_challenges
    where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]?.current === true))
