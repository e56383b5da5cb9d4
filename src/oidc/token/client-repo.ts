import { Effect } from "effect"
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
}

/** A client of this Environment that has not been deleted. */
export const clientById = (environmentId: string, clientId: string) => SqlClient.SqlClient.use((sql) =>
  sql<OAuthClientRow>`select id, workspace_id, client_type, token_endpoint_auth_method, secret_hash, status, post_logout_redirect_uris
    from clients where environment_id = ${environmentId} and id = ${clientId} and deleted_at is null`)
  .pipe(Effect.map((rows) => rows[0]))
