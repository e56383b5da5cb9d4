import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { GrantState } from "./check-user.js"

/** An authorization code row locked for its exchange, with the user and session behind it. */
export interface LockedCode extends GrantState {
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

/** Locks the code row (FOR UPDATE OF the code): of concurrent exchanges exactly one sees it unused. */
export const lockCode = (environmentId: string, codeHash: string) => SqlClient.SqlClient.use((sql) => sql<LockedCode>`
  select c.workspace_id, c.transaction_id, c.client_id, c.user_id, c.session_id, c.redirect_uri, c.code_challenge, c.scopes,
    c.resources, c.nonce, c.method, c.acr, c.auth_time, c.expires_at, c.consumed_at, c.refresh_family_id,
    u.status as user_status, u.security_version as user_security_version, u.email, u.email_verified, u.name, u.locale,
    u.updated_at as user_updated_at,
    s.revoked_at as session_revoked_at, s.idle_expires_at as session_idle_expires_at,
    s.absolute_expires_at as session_absolute_expires_at, s.security_version as session_security_version
  from authorization_codes c
    join users u on u.environment_id = c.environment_id and u.id = c.user_id
    join login_sessions s on s.environment_id = c.environment_id and s.id = c.session_id
  where c.environment_id = ${environmentId} and c.code_hash = ${codeHash}
  for update of c`).pipe(Effect.map((rows) => rows[0]))

/** Marks the code used, remembering the family it created (revoked if the code is replayed). */
export const consumeCode = (environmentId: string, codeHash: string, now: Date, familyId: string | null) =>
  SqlClient.SqlClient.use((sql) => sql`update authorization_codes set consumed_at = ${now}, refresh_family_id = ${familyId}
    where environment_id = ${environmentId} and code_hash = ${codeHash} and consumed_at is null`)
