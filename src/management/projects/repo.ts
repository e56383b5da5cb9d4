import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface ProjectRow {
  readonly id: string
  readonly workspace_id: string
  readonly name: string
  readonly slug: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, name, slug, created_at, updated_at, version`

/** A live (not deleted) Project of the Workspace. */
export const projectById = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ProjectRow>`select ${columns(sql)} from projects where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

export const projectForUpdate = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ProjectRow>`select ${columns(sql)} from projects where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Keyset page of live Projects; `onlyId` narrows it for an Environment-pinned key. */
export const projectsPage = (
  workspaceId: string,
  page: { after?: string | undefined; limit: number; onlyId?: string | undefined },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ProjectRow>`select ${columns(sql)} from projects
    where workspace_id = ${workspaceId} and deleted_at is null
      ${page.onlyId === undefined ? sql`` : sql`and id = ${page.onlyId}`}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

export const slugUsedByOther = (workspaceId: string, slug: string, exceptId: string | null) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`select 1 as n from projects
    where workspace_id = ${workspaceId} and slug = ${slug} and deleted_at is null and id is distinct from ${exceptId}`,
  ).pipe(Effect.map((rows) => rows.length > 0))

export const updateProject = (
  workspaceId: string,
  id: string,
  expectedVersion: number,
  change: { name?: string | undefined; slug?: string | undefined; now: Date },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ProjectRow>`update projects set
      name = coalesce(${change.name ?? null}, name), slug = coalesce(${change.slug ?? null}, slug),
      updated_at = ${change.now}, version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and version = ${expectedVersion} and deleted_at is null
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const markProjectDeleted = (workspaceId: string, id: string, expectedVersion: number, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update projects set deleted_at = ${now}, updated_at = ${now}, version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and version = ${expectedVersion} and deleted_at is null
    returning id`,
  ).pipe(Effect.map((rows) => rows.length > 0))

/** The Environments of a deleted Project are deleted with it; returns their ids. */
export const deleteEnvironmentsOfProject = (workspaceId: string, projectId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update environments set status = 'deleted', updated_at = ${now}, version = version + 1
    where workspace_id = ${workspaceId} and project_id = ${projectId} and status <> 'deleted'
    returning id`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.id)))

/** The Project of an Environment (for Environment-pinned keys). */
export const projectIdOfEnvironment = (workspaceId: string, environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        project_id: string
      }>`select project_id from environments where workspace_id = ${workspaceId} and id = ${environmentId}`,
  ).pipe(Effect.map((rows) => rows[0]?.project_id))
