import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface ApiKeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string | null
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
  readonly created_at: Date
}

// The secret hash is never selected here: nothing in the Management API returns it.
const columns = (sql: SqlClient.SqlClient) =>
  sql`id, workspace_id, environment_id, name, scopes, expires_at, revoked_at, created_at`

export const apiKeyById = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ApiKeyRow>`select ${columns(sql)} from api_keys where workspace_id = ${workspaceId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Keyset page of a Workspace's keys, optionally only those pinned to one Environment. */
export const apiKeysPage = (
  workspaceId: string,
  filter: { environmentId?: string | undefined; after?: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ApiKeyRow>`select ${columns(sql)} from api_keys
    where workspace_id = ${workspaceId}
      ${filter.environmentId === undefined ? sql`` : sql`and environment_id = ${filter.environmentId}`}
      ${filter.after === undefined ? sql`` : sql`and id > ${filter.after}`}
    order by id limit ${filter.limit + 1}`,
  )

/** Conditional: only a key not yet revoked is revoked (a concurrent revoke changes nothing twice). */
export const revokeApiKey = (workspaceId: string, id: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ApiKeyRow>`update api_keys set revoked_at = ${now}, updated_at = ${now}
    where workspace_id = ${workspaceId} and id = ${id} and revoked_at is null
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))
