import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { liveStateChanged } from "../platform/live-state-changes.js"

/** A user row as stored (shared by the Management API, login and /me). */
export interface UserRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly email: string
  readonly email_normalized: string
  readonly email_verified: boolean
  readonly email_suppressed: boolean
  readonly name: string | null
  readonly avatar_url: string | null
  readonly locale: string | null
  readonly timezone: string | null
  readonly metadata: Record<string, unknown>
  readonly status: "active" | "blocked" | "pending_deletion"
  readonly blocked_reason: string | null
  readonly security_version: number
  readonly user_handle: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly last_login_at: Date | null
  /** When the user moved to `pending_deletion` (null otherwise). */
  readonly deleted_at: Date | null
  readonly version: number
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase()

const columns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, email, email_normalized, email_verified,
  email_suppressed, name, avatar_url, locale, timezone, metadata, status, blocked_reason, security_version, user_handle,
  created_at, updated_at, last_login_at, deleted_at, version`

export const userById = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<UserRow>`select ${columns(sql)} from users where environment_id = ${environmentId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const userByEmail = (environmentId: string, email: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<UserRow>`select ${columns(sql)} from users where environment_id = ${environmentId} and email_normalized = ${normalizeEmail(email)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Locks the user row for the rest of the caller's transaction (status and security version checks). */
export const lockUser = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<UserRow>`select ${columns(sql)} from users where environment_id = ${environmentId} and id = ${id} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** What a new user is given: where it lives, its address and profile (spec: User create fields). */
export interface UserFields {
  readonly workspaceId: string
  readonly environmentId: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name?: string | null | undefined
  readonly avatarUrl?: string | null | undefined
  readonly locale?: string | null | undefined
  readonly timezone?: string | null | undefined
  readonly metadata?: Record<string, unknown> | undefined
}

/** The row to insert: the given fields, and what the service makes for it. */
export interface NewUser extends UserFields {
  readonly id: string
  readonly userHandle: string
  readonly now: Date
}

/** Inserts a user; returns undefined when the email is already registered in the Environment. */
export const insertUser = (u: NewUser) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<UserRow>`insert into users (id, workspace_id, environment_id, email, email_normalized, email_verified, name, avatar_url,
      locale, timezone, metadata, user_handle, created_at, updated_at)
    values (${u.id}, ${u.workspaceId}, ${u.environmentId}, ${u.email.trim()}, ${normalizeEmail(u.email)}, ${u.emailVerified},
      ${u.name ?? null}, ${u.avatarUrl ?? null}, ${u.locale ?? null}, ${u.timezone ?? null}, ${JSON.stringify(u.metadata ?? {})}::jsonb,
      ${u.userHandle}, ${u.now}, ${u.now})
    on conflict (environment_id, email_normalized) do nothing
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * insertUser for many rows in one statement (user import): rows are inserted in
 * normalized-email order, so concurrent imports of overlapping files take the unique index's
 * locks in one order. Returns the inserted rows; an email already registered is left out.
 */
export const insertUsers = (users: ReadonlyArray<NewUser>) =>
  users.length === 0
    ? Effect.succeed([] as ReadonlyArray<UserRow>)
    : SqlClient.SqlClient.use(
        (sql) => sql<UserRow>`insert into users (id, workspace_id, environment_id, email, email_normalized,
      email_verified, name, avatar_url, locale, timezone, metadata, user_handle, created_at, updated_at)
    select v.id, v.workspace_id, v.environment_id, v.email, v.email_normalized, v.email_verified, v.name, v.avatar_url, v.locale,
      v.timezone, v.metadata, v.user_handle, v.now, v.now
    from jsonb_to_recordset(${JSON.stringify(
      users.map((u) => ({
        id: u.id,
        workspace_id: u.workspaceId,
        environment_id: u.environmentId,
        email: u.email.trim(),
        email_normalized: normalizeEmail(u.email),
        email_verified: u.emailVerified,
        name: u.name ?? null,
        avatar_url: u.avatarUrl ?? null,
        locale: u.locale ?? null,
        timezone: u.timezone ?? null,
        metadata: u.metadata ?? {},
        user_handle: u.userHandle,
        now: u.now,
      })),
    )}::jsonb) as v(id text, workspace_id text, environment_id text, email text, email_normalized text, email_verified boolean,
      name text, avatar_url text, locale text, timezone text, metadata jsonb, user_handle text, now timestamptz)
    order by v.email_normalized
    on conflict (environment_id, email_normalized) do nothing
    returning ${columns(sql)}`,
      )

/** The profile fields an update may set (wire names = column names). */
export interface UserFieldChanges {
  readonly email_verified?: boolean
  readonly name?: string | null
  readonly avatar_url?: string | null
  readonly locale?: string | null
  readonly timezone?: string | null
  readonly metadata?: Record<string, unknown>
}

/**
 * Applies profile changes if the row still has `expectedVersion` (the ETag's version is
 * checked in the UPDATE itself); bumps `version`. undefined when the version moved.
 */
export const updateUserFields = (
  environmentId: string,
  id: string,
  expectedVersion: number,
  changes: UserFieldChanges,
  now: Date,
) =>
  SqlClient.SqlClient.use((sql) => {
    const sets = [sql`updated_at = ${now}`, sql`version = version + 1`]
    if (changes.email_verified !== undefined) sets.push(sql`email_verified = ${changes.email_verified}`)
    if (changes.name !== undefined) sets.push(sql`name = ${changes.name}`)
    if (changes.avatar_url !== undefined) sets.push(sql`avatar_url = ${changes.avatar_url}`)
    if (changes.locale !== undefined) sets.push(sql`locale = ${changes.locale}`)
    if (changes.timezone !== undefined) sets.push(sql`timezone = ${changes.timezone}`)
    if (changes.metadata !== undefined) sets.push(sql`metadata = ${JSON.stringify(changes.metadata)}::jsonb`)
    return sql<UserRow>`update users set ${sql.join(", ", false)(sets)}
      where environment_id = ${environmentId} and id = ${id} and version = ${expectedVersion}
      returning ${columns(sql)}`
  }).pipe(
    Effect.tap(() => Effect.sync(() => liveStateChanged(environmentId, id))),
    Effect.map((rows) => rows[0]),
  )

/**
 * Moves a user to another status (block, unblock, logical deletion) if the row still has
 * `expectedVersion`. `bumpSecurityVersion` increments `security_version`: every access
 * token carrying the older `sv` becomes inactive at UserInfo and introspection.
 */
export const setUserStatus = (
  environmentId: string,
  id: string,
  expectedVersion: number,
  change: {
    readonly status: UserRow["status"]
    readonly blockedReason: string | null
    readonly bumpSecurityVersion: boolean
    readonly deletedAt?: Date | undefined
  },
  now: Date,
) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<UserRow>`update users set status = ${change.status}, blocked_reason = ${change.blockedReason},
      security_version = security_version + ${change.bumpSecurityVersion ? 1 : 0},
      ${change.deletedAt === undefined ? sql`` : sql`deleted_at = ${change.deletedAt},`}
      updated_at = ${now}, version = version + 1
    where environment_id = ${environmentId} and id = ${id} and version = ${expectedVersion}
    returning ${columns(sql)}`,
  ).pipe(
    Effect.tap(() => Effect.sync(() => liveStateChanged(environmentId, id))),
    Effect.map((rows) => rows[0]),
  )
