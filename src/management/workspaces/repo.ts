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

export const workspaceById = (id: string) => SqlClient.SqlClient.use((sql) =>
  sql<WorkspaceRow>`select id, name, slug, status, created_at, updated_at, version from workspaces where id = ${id}`)
  .pipe(Effect.map((rows) => rows[0]))
