import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { clientInEnvironment } from "../management/clients/repo.js"

/** What login needs of a client registration (src/management/clients owns the full row, `ClientRow`). */
export interface LoginClient {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly name: string
  readonly client_type: "web_bff" | "web_spa" | "react_native"
  readonly status: "active" | "disabled"
  readonly redirect_uris: ReadonlyArray<string>
  readonly allowed_origins: ReadonlyArray<string>
  readonly allowed_scopes: ReadonlyArray<string>
  readonly allowed_resources: ReadonlyArray<string>
}

/**
 * A registered, not deleted client of THIS Environment (the Environment comes from the
 * host): a client of another Environment does not exist here. Its status is the caller's
 * check. The row comes from the clients capability's repository.
 */
export const loginClient = (
  environmentId: string,
  clientId: string,
): Effect.Effect<LoginClient | undefined, never, SqlClient.SqlClient> =>
  clientInEnvironment(environmentId, clientId).pipe(Effect.orDie)

/** Is `origin` registered by any active client of the Environment (CORS preflight)? */
export const originRegisteredInEnvironment = (environmentId: string, origin: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ found: boolean }>`select exists (select 1 from clients
      where environment_id = ${environmentId} and status = 'active' and deleted_at is null
        and ${origin} = any(allowed_origins)) as found`,
  ).pipe(
    Effect.map((rows) => rows[0]?.found === true),
    Effect.orDie,
  )
