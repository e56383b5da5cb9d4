import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface ApiKeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string | null
  readonly scopes: ReadonlyArray<string>
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
}

export const apiKeyByHash = (secretHash: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ApiKeyRow>`select id, workspace_id, environment_id, scopes, expires_at, revoked_at
    from api_keys where secret_hash = ${secretHash}`,
  ).pipe(Effect.map((rows) => rows[0]))
