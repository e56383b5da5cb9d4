import { Effect } from "effect"
import type { Statement } from "effect/sql"
import { SqlClient } from "effect/sql"

/** What the OIDC endpoints need of a client (sql/0004 `clients`). */
export interface OAuthClientRow {
  readonly id: string
  readonly workspace_id: string
  readonly client_type: "web_bff" | "web_spa" | "react_native"
  readonly token_endpoint_auth_method: "none" | "client_secret_basic" | "client_secret_post"
  readonly secret_hash: string | null
  readonly status: "active" | "disabled"
  readonly post_logout_redirect_uris: ReadonlyArray<string>
  /** CORS only (spec: Client): a browser's Origin must be one of these for this client's requests. */
  readonly allowed_origins: ReadonlyArray<string>
}

/** The client columns under `client_*` names, for queries that read the client with a grant (one round trip). */
export interface ClientColumns {
  readonly client_row_id: string
  readonly client_workspace_id: string
  readonly client_type: OAuthClientRow["client_type"]
  readonly client_auth_method: OAuthClientRow["token_endpoint_auth_method"]
  readonly client_secret_hash: string | null
  readonly client_status: OAuthClientRow["status"]
  readonly client_post_logout_redirect_uris: ReadonlyArray<string>
  readonly client_allowed_origins: ReadonlyArray<string>
}

/** The `ClientColumns` of the clients row aliased `cl`. */
export const clientColumns = (sql: SqlClient.SqlClient): Statement.Fragment =>
  sql.literal(`cl.id as client_row_id,
  cl.workspace_id as client_workspace_id, cl.client_type, cl.token_endpoint_auth_method as client_auth_method,
  cl.secret_hash as client_secret_hash, cl.status as client_status, cl.post_logout_redirect_uris as client_post_logout_redirect_uris,
  cl.allowed_origins as client_allowed_origins`)

export const clientOf = (row: ClientColumns): OAuthClientRow => ({
  id: row.client_row_id,
  workspace_id: row.client_workspace_id,
  client_type: row.client_type,
  token_endpoint_auth_method: row.client_auth_method,
  secret_hash: row.client_secret_hash,
  status: row.client_status,
  post_logout_redirect_uris: row.client_post_logout_redirect_uris,
  allowed_origins: row.client_allowed_origins,
})

/** A client of this Environment that has not been deleted. */
export const clientById = (environmentId: string, clientId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<OAuthClientRow>`select id, workspace_id, client_type, token_endpoint_auth_method, secret_hash, status, post_logout_redirect_uris,
      allowed_origins
    from clients where environment_id = ${environmentId} and id = ${clientId} and deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))
