import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface WorkspaceRow {
  readonly id: string
  readonly name: string
  readonly slug: string
  readonly status: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

export interface MemberRow {
  readonly platform_user_id: string
  readonly role: string
  readonly created_at: Date
  readonly updated_at: Date
}

const columns = (sql: SqlClient.SqlClient) => sql`id, name, slug, status, created_at, updated_at, version`

export const workspaceById = (id: string) =>
  SqlClient.SqlClient.use((sql) => sql<WorkspaceRow>`select ${columns(sql)} from workspaces where id = ${id}`).pipe(
    Effect.map((rows) => rows[0]),
  )

/** Locks the row for the rest of the transaction (updates check If-Match against it). */
export const workspaceForUpdate = (id: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WorkspaceRow>`select ${columns(sql)} from workspaces where id = ${id} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** One page of Workspaces among `ids` (API key: its own; keyset by id). */
export const workspacesByIds = (
  ids: ReadonlyArray<string>,
  filter: { status?: string | undefined; after?: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WorkspaceRow>`select ${columns(sql)} from workspaces
    where id = any(${ids as Array<string>}::text[])
      ${filter.status === undefined ? sql`` : sql`and status = ${filter.status}`}
      ${filter.after === undefined ? sql`` : sql`and id > ${filter.after}`}
    order by id limit ${filter.limit + 1}`,
  )

/** One page of the Workspaces a platform user is a member of (keyset by id). */
export const workspacesOfMember = (
  platformUserId: string,
  filter: { status?: string | undefined; after?: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WorkspaceRow>`select w.id, w.name, w.slug, w.status, w.created_at, w.updated_at, w.version
    from workspaces w join workspace_members m on m.workspace_id = w.id
    where m.platform_user_id = ${platformUserId}
      ${filter.status === undefined ? sql`` : sql`and w.status = ${filter.status}`}
      ${filter.after === undefined ? sql`` : sql`and w.id > ${filter.after}`}
    order by w.id limit ${filter.limit + 1}`,
  )

export const slugUsedByOther = (slug: string, exceptId: string | null) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ n: number }>`select 1 as n from workspaces where slug = ${slug} and id is distinct from ${exceptId}`,
  ).pipe(Effect.map((rows) => rows.length > 0))

export const insertOwner = (workspaceId: string, platformUserId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`insert into workspace_members (workspace_id, platform_user_id, role, created_at, updated_at)
    values (${workspaceId}, ${platformUserId}, 'owner', ${now}, ${now})`,
  )

/** Conditional on the version read under the row lock: a concurrent change can never be overwritten. */
export const updateWorkspace = (
  id: string,
  expectedVersion: number,
  change: { name?: string | undefined; slug?: string | undefined; now: Date },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WorkspaceRow>`update workspaces set
      name = coalesce(${change.name ?? null}, name), slug = coalesce(${change.slug ?? null}, slug),
      updated_at = ${change.now}, version = version + 1
    where id = ${id} and version = ${expectedVersion}
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const membersPage = (workspaceId: string, page: { after?: string | undefined; limit: number }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<MemberRow>`select platform_user_id, role, created_at, updated_at
    from workspace_members where workspace_id = ${workspaceId}
      ${page.after === undefined ? sql`` : sql`and platform_user_id > ${page.after}`}
    order by platform_user_id limit ${page.limit + 1}`,
  )
