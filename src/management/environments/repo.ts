import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** What a write needs to read under the row lock. */
export interface LockedEnvironment {
  readonly id: string
  readonly status: "active" | "suspended" | "deleted"
  readonly version: number
  readonly theme: unknown
  readonly theme_version: number
  readonly legacy_rp_id: string | null
  readonly legacy_rp_disabled_at: Date | null
}

/** Locks a live Environment of the Workspace for the rest of the transaction. */
export const lockEnvironment = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<LockedEnvironment>`select id, status, version, theme, theme_version, legacy_rp_id, legacy_rp_disabled_at
    from environments where workspace_id = ${workspaceId} and id = ${id} and status <> 'deleted' for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Keyset page of the live Environments of a Project (ids only; records are read through Tenancy's repo). */
export const environmentIdsPage = (
  workspaceId: string,
  projectId: string,
  filter: {
    type?: string | undefined
    onlyId?: string | undefined
    after?: string | undefined
    limit: number
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from environments
    where workspace_id = ${workspaceId} and project_id = ${projectId} and status <> 'deleted'
      ${filter.type === undefined ? sql`` : sql`and type = ${filter.type}`}
      ${filter.onlyId === undefined ? sql`` : sql`and id = ${filter.onlyId}`}
      ${filter.after === undefined ? sql`` : sql`and id > ${filter.after}`}
    order by id limit ${filter.limit + 1}`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.id)))

/** Conditional on the version read under the lock: a concurrent change is never overwritten. */
export const updateEnvironment = (
  workspaceId: string,
  id: string,
  expectedVersion: number,
  change: {
    name?: string | undefined
    status?: "active" | "suspended" | "deleted" | undefined
    now: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update environments set
      name = coalesce(${change.name ?? null}, name), status = coalesce(${change.status ?? null}, status),
      updated_at = ${change.now}, version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and version = ${expectedVersion} and status <> 'deleted'
    returning id`,
  ).pipe(Effect.map((rows) => rows.length > 0))

// Settings, theme and RP migration are sub-resources: changing them leaves the
// Environment's own representation, `updated_at` and ETag as they were.
export const updateSettings = (
  workspaceId: string,
  id: string,
  change: {
    impersonation_enabled?: boolean | undefined
    new_user_creation_blocked?: boolean | undefined
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ impersonation_enabled: boolean; new_user_creation_blocked: boolean }>`update environments set
      impersonation_enabled = coalesce(${change.impersonation_enabled ?? null}, impersonation_enabled),
      new_user_creation_blocked = coalesce(${change.new_user_creation_blocked ?? null}, new_user_creation_blocked)
    where workspace_id = ${workspaceId} and id = ${id} and status <> 'deleted'
    returning impersonation_enabled, new_user_creation_blocked`,
  ).pipe(Effect.map((rows) => rows[0]))

export const themeOf = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ theme: unknown; theme_version: number }>`select theme, theme_version from environments
    where workspace_id = ${workspaceId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const replaceTheme = (workspaceId: string, id: string, expectedThemeVersion: number, theme: unknown) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ theme_version: number }>`update environments set
      theme = ${JSON.stringify(theme)}::jsonb, theme_version = theme_version + 1
    where workspace_id = ${workspaceId} and id = ${id} and theme_version = ${expectedThemeVersion} and status <> 'deleted'
    returning theme_version`,
  ).pipe(Effect.map((rows) => rows[0]?.theme_version))

/** Irreversible: only the legacy RP ID that is still accepted, and only once. */
export const disableLegacyRp = (workspaceId: string, id: string, legacyRpId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update environments set legacy_rp_disabled_at = ${now}
    where workspace_id = ${workspaceId} and id = ${id} and legacy_rp_id = ${legacyRpId} and legacy_rp_disabled_at is null
      and status <> 'deleted'
    returning id`,
  ).pipe(Effect.map((rows) => rows.length > 0))
