import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { EnvironmentRecord } from "./schema.js"

interface EnvironmentRow {
  readonly id: string
  readonly workspace_id: string
  readonly project_id: string
  readonly type: "test" | "production"
  readonly name: string
  readonly status: "active" | "suspended" | "deleted"
  readonly impersonation_enabled: boolean
  readonly new_user_creation_blocked: boolean
  readonly active_rp_id: string | null
  readonly legacy_rp_id: string | null
  readonly legacy_rp_disabled_at: Date | null
  readonly custom_domain: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

const toRecord = (r: EnvironmentRow): EnvironmentRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  projectId: r.project_id,
  type: r.type,
  name: r.name,
  status: r.status,
  impersonationEnabled: r.impersonation_enabled,
  newUserCreationBlocked: r.new_user_creation_blocked,
  activeRpId: r.active_rp_id,
  legacyRpId: r.legacy_rp_id,
  legacyRpDisabledAt: r.legacy_rp_disabled_at,
  customDomain: r.custom_domain,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  version: r.version,
})

// The active rp_enabled custom domain (newest first) is THE Interaction Domain (docs/architecture.md, Decisions).
const environmentSelect = (sql: SqlClient.SqlClient) => sql`select e.id, e.workspace_id, e.project_id, e.type, e.name,
    e.status, e.impersonation_enabled, e.new_user_creation_blocked, e.active_rp_id, e.legacy_rp_id,
    e.legacy_rp_disabled_at, e.created_at, e.updated_at, e.version,
    (select d.hostname from domains d where d.environment_id = e.id and d.status = 'active' and d.rp_enabled
      order by d.updated_at desc, d.id limit 1) as custom_domain
  from environments e`

export const environmentById = (id: string) =>
  SqlClient.SqlClient.use((sql) => sql<EnvironmentRow>`${environmentSelect(sql)} where e.id = ${id}`).pipe(
    Effect.map((rows) => rows[0] && toRecord(rows[0])),
  )

/** Several Environments in one query, in the order of `ids` (list pages). */
export const environmentsByIds = (ids: ReadonlyArray<string>) =>
  ids.length === 0
    ? Effect.succeed([] as Array<EnvironmentRecord>)
    : SqlClient.SqlClient.use(
        (sql) => sql<EnvironmentRow>`${environmentSelect(sql)} where e.id in ${sql.in(ids as Array<string>)}`,
      ).pipe(
        Effect.map((rows) => {
          const byId = new Map(rows.map((r) => [r.id, toRecord(r)]))
          return ids.flatMap((id) => byId.get(id) ?? [])
        }),
      )

export const environmentIdByCustomHost = (hostname: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        environment_id: string
      }>`select environment_id from domains where hostname = ${hostname} and status = 'active'`,
  ).pipe(Effect.map((rows) => rows[0]?.environment_id))

export const insertWorkspace = (w: { id: string; name: string; slug: string; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into workspaces (id, name, slug, status, created_at, updated_at)
    values (${w.id}, ${w.name}, ${w.slug}, 'active', ${w.now}, ${w.now})`,
  )

export const slugTaken = (slug: string) =>
  SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select 1 as n from workspaces where slug = ${slug}`).pipe(
    Effect.map((rows) => rows.length > 0),
  )

export const insertProject = (p: { id: string; workspaceId: string; name: string; slug: string; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into projects (id, workspace_id, name, slug, created_at, updated_at)
    values (${p.id}, ${p.workspaceId}, ${p.name}, ${p.slug}, ${p.now}, ${p.now})`,
  )

export const insertEnvironment = (e: {
  id: string
  workspaceId: string
  projectId: string
  type: string
  name: string
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into environments (id, workspace_id, project_id, type, name, status, created_at, updated_at)
    values (${e.id}, ${e.workspaceId}, ${e.projectId}, ${e.type}, ${e.name}, 'active', ${e.now}, ${e.now})`,
  )

export const insertApiKey = (k: {
  id: string
  workspaceId: string
  environmentId: string | null
  name: string
  scopes: ReadonlyArray<string>
  secretHash: string
  expiresAt: Date | null
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (
      sql,
    ) => sql`insert into api_keys (id, workspace_id, environment_id, name, scopes, secret_hash, expires_at, created_at, updated_at)
  values (${k.id}, ${k.workspaceId}, ${k.environmentId}, ${k.name}, ${k.scopes as Array<string>}::text[], ${k.secretHash}, ${k.expiresAt}, ${k.now}, ${k.now})`,
  )
