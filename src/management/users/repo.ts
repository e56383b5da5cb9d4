import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { UserRow } from "../../users/repo.js"
import type { PasskeySummaryRow } from "../../users/passkey-summary.js"

// SQL of the Management Users routes that no other capability needs. Every query filters
// by the Environment (tenant isolation) and pages by keyset on id.

const userColumns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, email, email_normalized, email_verified,
  email_suppressed, name, avatar_url, locale, timezone, metadata, status, blocked_reason, security_version, user_handle,
  created_at, updated_at, last_login_at, deleted_at, version`

/** Escapes LIKE wildcards so a search for `a_b%` matches those characters literally. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

export interface UserFilter {
  readonly environmentId: string
  readonly status?: UserRow["status"] | undefined
  /** Already lower-cased. */
  readonly search?: string | undefined
  readonly after: string | undefined
  readonly limit: number
}

/**
 * One page of users (keyset on id). `search` matches an email prefix OR a name substring.
 * An OR of the two LIKEs leaves the planner a sequential scan, so each arm is its own
 * top-(limit+1) subquery the planner can serve from its index: the email prefix from
 * users_env_email_prefix (text_pattern_ops on the lower-cased email, sql/0004), the name
 * substring from users_name_trgm (trigram on lower(name), sql/0006) or, for broad terms, a
 * walk of users_env_page that stops early. The first limit+1 ids of the union are exactly
 * the first limit+1 ids of the OR.
 */
export const listUsersStatement = (sql: SqlClient.SqlClient, f: UserFilter) => {
  const status = f.status === undefined ? sql`` : sql`and status = ${f.status}`
  const after = f.after === undefined ? sql`` : sql`and id > ${f.after}`
  if (f.search === undefined) {
    return sql<UserRow>`select ${userColumns(sql)} from users
      where environment_id = ${f.environmentId} ${status} ${after}
      order by id limit ${f.limit + 1}`
  }
  const prefix = `${likeEscape(f.search)}%`
  const substring = `%${likeEscape(f.search)}%`
  return sql<UserRow>`select ${userColumns(sql)} from users
    where environment_id = ${f.environmentId} and id in (
      (select id from users where environment_id = ${f.environmentId} ${status} ${after}
        and email_normalized like ${prefix} order by id limit ${f.limit + 1})
      union all
      (select id from users where environment_id = ${f.environmentId} ${status} ${after}
        and lower(name) like ${substring} order by id limit ${f.limit + 1}))
    order by id limit ${f.limit + 1}`
}

/**
 * A search runs unprepared: a cached prepared statement would drift to a generic plan, in
 * which the LIKE pattern is an unknown parameter and can use neither index.
 */
export const listUsers = (f: UserFilter) =>
  SqlClient.SqlClient.use((sql) => {
    const statement = listUsersStatement(sql, f)
    return f.search === undefined ? statement : statement.unprepared
  })

export interface IdentityRow {
  readonly id: string
  readonly user_id: string
  readonly provider: string
  readonly connection_id: string | null
  readonly email: string | null
  readonly linked_at: Date
  readonly last_used_at: Date | null
}

export const identitiesOfUser = (
  environmentId: string,
  userId: string,
  page: { after: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<IdentityRow>`select id, user_id, provider, connection_id, email, linked_at, last_used_at
    from identities where environment_id = ${environmentId} and user_id = ${userId}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

/** Deletes (unlinks) one identity of the user; undefined when there is none. */
export const deleteIdentity = (environmentId: string, userId: string, identityId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<IdentityRow>`delete from identities
    where environment_id = ${environmentId} and user_id = ${userId} and id = ${identityId}
    returning id, user_id, provider, connection_id, email, linked_at, last_used_at`,
  ).pipe(Effect.map((rows) => rows[0]))

export const passkeysOfUser = (
  environmentId: string,
  userId: string,
  page: { after: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<PasskeySummaryRow>`select id, user_id, name, aaguid, device_type, backed_up, rp_id,
      created_at, last_used_at
    from passkeys where environment_id = ${environmentId} and user_id = ${userId}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

/** Deletes one passkey of the user; undefined when there is none. */
export const deletePasskey = (environmentId: string, userId: string, passkeyId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<PasskeySummaryRow>`delete from passkeys
    where environment_id = ${environmentId} and user_id = ${userId} and id = ${passkeyId}
    returning id, user_id, name, aaguid, device_type, backed_up, rp_id, created_at, last_used_at`,
  ).pipe(Effect.map((rows) => rows[0]))
