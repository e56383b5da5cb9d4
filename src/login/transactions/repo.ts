import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"

export type TransactionStatus =
  | "created"
  | "interaction_started"
  | "challenge_issued"
  | "authenticated"
  | "code_issued"
  | "consumed"
  | "link_required"
  | "failed"
  | "expired"

/**
 * The statuses a transaction can still move on from by a user's action; "(any active)" of
 * the spec's table (cancel, 10-minute expiry). `code_issued` is past the user's part: the
 * code's own 60-second lifetime governs it.
 */
export const ACTIVE_STATUSES: ReadonlyArray<TransactionStatus> = [
  "created",
  "interaction_started",
  "challenge_issued",
  "authenticated",
  "link_required",
]

export interface TransactionRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly client_id: string
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly state: string
  readonly nonce: string | null
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly response_mode: "redirect" | "native_return"
  readonly status: TransactionStatus
  readonly method: "email_otp" | "passkey" | "social" | null
  readonly user_id: string | null
  readonly authenticated_at: Date | null
  readonly pending_link: unknown
  readonly source: "api" | "authorize"
  readonly browser_binding_hash: string | null
  readonly handoff_token_hash: string | null
  /** SHA-256 of the custom-UI social login's completion proof (./social-proof.ts); null once used or when none was issued. */
  readonly social_proof_hash: string | null
  readonly created_at: Date
  readonly expires_at: Date
}

const columns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, client_id, redirect_uri, code_challenge,
  state, nonce, scopes, resources, response_mode, status, method, user_id, authenticated_at, pending_link, source,
  browser_binding_hash, handoff_token_hash, social_proof_hash, created_at, expires_at`

const textArray = (values: ReadonlyArray<string>) => values as Array<string>
const statusList = (statuses: ReadonlyArray<TransactionStatus>) => statuses as Array<string>

export interface NewTransaction {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly state: string
  readonly nonce: string | null
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly responseMode: "redirect" | "native_return"
  readonly source: "api" | "authorize"
  readonly handoffTokenHash: string | null
  readonly handoffExpiresAt: Date | null
  readonly now: Date
  readonly expiresAt: Date
}

/** `ctes` (e.g. its audit record, `Audit.cte`) go in the statement's `with`: one statement, one round trip. */
export const insertTransaction = (t: NewTransaction, ctes?: Statement.Fragment) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<TransactionRow>`${ctes === undefined ? sql`` : sql`with ${ctes} `}insert into auth_transactions (id, workspace_id, environment_id, client_id, redirect_uri, code_challenge,
      state, nonce, scopes, resources, response_mode, status, source, handoff_token_hash, handoff_expires_at,
      created_at, updated_at, expires_at)
    values (${t.id}, ${t.workspaceId}, ${t.environmentId}, ${t.clientId}, ${t.redirectUri}, ${t.codeChallenge}, ${t.state},
      ${t.nonce}, ${textArray(t.scopes)}::text[], ${textArray(t.resources)}::text[], ${t.responseMode}, 'created', ${t.source},
      ${t.handoffTokenHash}, ${t.handoffExpiresAt}, ${t.now}, ${t.now}, ${t.expiresAt})
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

export const transactionById = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<TransactionRow>`select ${columns(sql)} from auth_transactions where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Locks the row for the rest of the caller's SQL transaction. */
export const lockTransaction = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<TransactionRow>`select ${columns(sql)} from auth_transactions where environment_id = ${environmentId} and id = ${id} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

export interface TransitionExtras {
  readonly method?: "email_otp" | "passkey" | "social"
  readonly userId?: string
  readonly authenticatedAt?: Date
  readonly failedReason?: string
}

/**
 * THE way a status changes: one conditional UPDATE that only lands when the row is in one
 * of `from` and still within its lifetime, so of two concurrent requests exactly one wins.
 * Returns the updated row, or undefined when the condition did not hold.
 */
export const transition = (
  environmentId: string,
  id: string,
  from: ReadonlyArray<TransactionStatus>,
  to: TransactionStatus,
  now: Date,
  extras: TransitionExtras = {},
) =>
  SqlClient.SqlClient.use((sql) => {
    const sets = [sql`status = ${to}`, sql`updated_at = ${now}`]
    if (extras.method !== undefined) sets.push(sql`method = ${extras.method}`)
    if (extras.userId !== undefined) sets.push(sql`user_id = ${extras.userId}`)
    if (extras.authenticatedAt !== undefined) sets.push(sql`authenticated_at = ${extras.authenticatedAt}`)
    // The completion proof is used once: the code it unlocked is the only one.
    if (to === "code_issued") sets.push(sql`code_issued_at = ${now}`, sql`social_proof_hash = null`)
    if (to === "failed") sets.push(sql`failed_at = ${now}`, sql`failed_reason = ${extras.failedReason ?? "cancelled"}`)
    return sql<TransactionRow>`update auth_transactions set ${sql.join(", ", false)(sets)}
    where environment_id = ${environmentId} and id = ${id} and status = any(${statusList(from)}::text[])
      and expires_at > ${now}
    returning ${columns(sql)}`
  }).pipe(Effect.map((rows) => rows[0]))

/** Keeps the SHA-256 of a social login's completion proof (issued by the callback, in its SQL transaction). */
export const setSocialProofHash = (environmentId: string, id: string, proofHash: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update auth_transactions set social_proof_hash = ${proofHash} where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.asVoid)

/** An active transaction past its 10 minutes becomes `expired` (one conditional UPDATE). */
export const expireIfDue = (environmentId: string, id: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update auth_transactions set status = 'expired', updated_at = ${now}
    where environment_id = ${environmentId} and id = ${id} and status = any(${statusList(ACTIVE_STATUSES)}::text[])
      and expires_at <= ${now}`,
  )

/** Housekeeping: every active transaction past its lifetime becomes `expired`. */
export const expireDue = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`update auth_transactions set status = 'expired', updated_at = ${now}
    where status = any(${statusList(ACTIVE_STATUSES)}::text[]) and expires_at <= ${now}
    returning id`,
  )

/**
 * `code_issued` -> `consumed` when the authorization code is exchanged (docs/architecture.md: Login
 * transaction). The token endpoint calls it in its own SQL transaction; the code's
 * lifetime, not the transaction's, governs the exchange, so no expiry condition here.
 */
export const markConsumed = (environmentId: string, id: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`update auth_transactions set status = 'consumed', consumed_at = ${now}, updated_at = ${now}
    where environment_id = ${environmentId} and id = ${id} and status = 'code_issued'
    returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/**
 * Hosted Login hand-off (docs/decisions/login-and-tokens.md): the one-time token from the authorize redirect
 * is exchanged once, within its lifetime, for the browser's binding secret.
 */
export const claimHandoff = (environmentId: string, handoffTokenHash: string, bindingHash: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update auth_transactions
      set handoff_used_at = ${now}, browser_binding_hash = ${bindingHash}, updated_at = ${now}
    where environment_id = ${environmentId} and handoff_token_hash = ${handoffTokenHash}
      and handoff_used_at is null and handoff_expires_at > ${now}
      and status = any(${statusList(ACTIVE_STATUSES)}::text[]) and expires_at > ${now}
    returning id`,
  ).pipe(Effect.map((rows) => rows[0]?.id))

/** The transaction a Hosted Login cookie is bound to. */
export const transactionByBinding = (environmentId: string, bindingHash: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<TransactionRow>`select ${columns(sql)} from auth_transactions
    where environment_id = ${environmentId} and browser_binding_hash = ${bindingHash}`,
  ).pipe(Effect.map((rows) => rows[0]))
