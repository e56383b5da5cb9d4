import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PipelinedReads } from "../../platform/pipelined-reads.js"
import type { NewFamily } from "../refresh/service.js"
import type { GrantState } from "./check-user.js"
import { type ClientColumns, clientColumns } from "./client-repo.js"

/** An authorization code row with the user and session behind it. */
export interface CodeState extends GrantState {
  readonly workspace_id: string
  readonly transaction_id: string
  readonly client_id: string
  readonly user_id: string
  readonly session_id: string
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly nonce: string | null
  readonly method: "email_otp" | "passkey" | "social"
  readonly acr: string
  readonly auth_time: Date
  readonly expires_at: Date
  readonly consumed_at: Date | null
  readonly refresh_family_id: string | null
  readonly email: string
  readonly email_verified: boolean
  readonly name: string | null
  readonly locale: string | null
  readonly user_updated_at: Date
}

/**
 * Reads, in one round trip, the presented client (authenticated by the caller) and, when it
 * exists, the code with its user and session. No row: no such client. No lock: consumption
 * is a compare-and-set (consumeCodeAndIssue). Pipelined with other requests' reads
 * (PipelinedReads), so it must stay a statement that never waits for a row lock.
 */
export const readClientAndCode = (environmentId: string, clientId: string, codeHash: string) =>
  PipelinedReads.use(
    (sql) => sql<ClientColumns & (CodeState | { readonly session_id: null })>`
  select ${clientColumns(sql)}, c.workspace_id, c.transaction_id, c.client_id, c.user_id, c.session_id, c.redirect_uri,
    c.code_challenge, c.scopes, c.resources, c.nonce, c.method, c.acr, c.auth_time, c.expires_at, c.consumed_at, c.refresh_family_id,
    u.status as user_status, u.security_version as user_security_version, u.email, u.email_verified, u.name, u.locale,
    u.updated_at as user_updated_at,
    s.revoked_at as session_revoked_at, s.idle_expires_at as session_idle_expires_at,
    s.absolute_expires_at as session_absolute_expires_at, s.security_version as session_security_version
  from clients cl
    left join authorization_codes c on c.environment_id = cl.environment_id and c.code_hash = ${codeHash}
    left join users u on u.environment_id = c.environment_id and u.id = c.user_id
    left join login_sessions s on s.environment_id = c.environment_id and s.id = c.session_id
  where cl.environment_id = ${environmentId} and cl.id = ${clientId} and cl.deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

export interface Consumption {
  readonly environmentId: string
  readonly codeHash: string
  readonly now: Date
  readonly workspaceId: string
  readonly clientId: string
  readonly userId: string
  readonly sessionId: string
  readonly transactionId: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly authTime: Date
  /** Present when `offline_access` is granted: the family created with the code's consumption. */
  readonly family: NewFamily | undefined
}

/**
 * Consumes the code and records what its exchange creates, in ONE statement. The code
 * UPDATE is a compare-and-set (`consumed_at is null`): of concurrent exchanges exactly one
 * matches, and every other part depends on it. It creates the refresh family (generation
 * 1) and its token row, stretches the session to the family's expiry, and moves the login
 * transaction `code_issued` -> `consumed` (sql/0020, docs/architecture.md, Decisions). Returns whether
 * this call consumed the code.
 */
export const consumeCodeAndIssue = (c: Consumption) =>
  SqlClient.SqlClient.use((sql) => {
    const f = c.family
    const familyParts =
      f === undefined
        ? sql``
        : sql`, family as (
    insert into refresh_families (id, workspace_id, environment_id, client_id, user_id, session_id, scopes, resources,
      auth_time, generation, created_at, last_used_at, idle_expires_at, absolute_expires_at)
    select ${f.familyId}, ${c.workspaceId}, ${c.environmentId}, ${c.clientId}, ${c.userId}, ${c.sessionId},
      ${c.scopes as Array<string>}::text[], ${c.resources as Array<string>}::text[], ${c.authTime}, 1, ${c.now}, ${c.now},
      ${f.idleExpiresAt}, ${f.absoluteExpiresAt}
    from code
    returning id
  ), token as (
    insert into refresh_tokens (family_id, generation, environment_id, secret_hash, issued_at)
    select id, 1, ${c.environmentId}, ${f.secretHash}, ${c.now} from family
  ), session as (
    update login_sessions set idle_expires_at = greatest(idle_expires_at, ${f.idleExpiresAt}),
      absolute_expires_at = greatest(absolute_expires_at, ${f.absoluteExpiresAt})
    where environment_id = ${c.environmentId} and id = ${c.sessionId} and exists (select 1 from family)
  )`
    return sql<{ consumed: number }>`
    with code as (
      update authorization_codes set consumed_at = ${c.now}, refresh_family_id = ${f?.familyId ?? null}
      where environment_id = ${c.environmentId} and code_hash = ${c.codeHash} and consumed_at is null
      returning code_hash
    )${familyParts}, transaction as (
      update auth_transactions set status = 'consumed', consumed_at = ${c.now}, updated_at = ${c.now}
      where environment_id = ${c.environmentId} and id = ${c.transactionId} and status = 'code_issued'
        and exists (select 1 from code)
    )
    select count(*)::int as consumed from code`
  }).pipe(Effect.map((rows) => (rows[0]?.consumed ?? 0) > 0))
