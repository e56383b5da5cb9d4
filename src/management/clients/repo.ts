import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { clientChanged } from "../../platform/live-state-changes.js"
import type { Page } from "../conventions/pagination.js"
import type { MobileApp } from "./schema.js"

/** Every column a write may set (the service merges a PATCH into the current row). */
export interface ClientFields {
  readonly name: string
  readonly token_endpoint_auth_method: "none" | "client_secret_basic" | "client_secret_post"
  readonly redirect_uris: ReadonlyArray<string>
  readonly post_logout_redirect_uris: ReadonlyArray<string>
  readonly allowed_origins: ReadonlyArray<string>
  readonly allowed_scopes: ReadonlyArray<string>
  readonly allowed_resources: ReadonlyArray<string>
  readonly require_pkce: boolean
  readonly status: "active" | "disabled"
  readonly mobile_app: MobileApp | null
}

/** A client row as stored (shared with login, token and CORS code): the settable fields and what the service keeps. */
export interface ClientRow extends ClientFields {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly client_type: "web_bff" | "web_spa" | "react_native"
  /** SHA-256 hex of the current secret; null for public clients. */
  readonly secret_hash: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, client_type, name,
  token_endpoint_auth_method, secret_hash, redirect_uris, post_logout_redirect_uris, allowed_origins, allowed_scopes,
  allowed_resources, require_pkce, status, mobile_app, created_at, updated_at, version`

const textArray = (values: ReadonlyArray<string>) => values as Array<string>
const jsonb = (value: unknown) => (value === null ? null : JSON.stringify(value))

export const insertClient = (
  c: ClientFields & {
    readonly id: string
    readonly workspaceId: string
    readonly environmentId: string
    readonly clientType: ClientRow["client_type"]
    readonly secretHash: string | null
    readonly now: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ClientRow>`insert into clients (id, workspace_id, environment_id, client_type, name,
    token_endpoint_auth_method, secret_hash, redirect_uris, post_logout_redirect_uris, allowed_origins, allowed_scopes,
    allowed_resources, require_pkce, status, mobile_app, created_at, updated_at)
  values (${c.id}, ${c.workspaceId}, ${c.environmentId}, ${c.clientType}, ${c.name}, ${c.token_endpoint_auth_method},
    ${c.secretHash}, ${textArray(c.redirect_uris)}::text[], ${textArray(c.post_logout_redirect_uris)}::text[],
    ${textArray(c.allowed_origins)}::text[], ${textArray(c.allowed_scopes)}::text[], ${textArray(c.allowed_resources)}::text[],
    ${c.require_pkce}, ${c.status}, ${jsonb(c.mobile_app)}::jsonb, ${c.now}, ${c.now})
  returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** A live (not deleted) client of the Workspace. The caller still checks its Environment. */
export const clientInWorkspace = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ClientRow>`select ${columns(sql)} from clients
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Same, locked for the rest of the caller's transaction. */
export const lockClientInWorkspace = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ClientRow>`select ${columns(sql)} from clients
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * A live client of an Environment, for login, token, logout and CORS checks (they resolve
 * the Environment from the host first; a client of another Environment does not exist there).
 */
export const clientInEnvironment = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ClientRow>`select ${columns(sql)} from clients
    where environment_id = ${environmentId} and id = ${id} and deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The update only lands on the version the caller read (a lost race yields no row). */
export const updateClient = (id: string, version: number, c: ClientFields & { readonly now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ClientRow>`update clients set name = ${c.name},
      token_endpoint_auth_method = ${c.token_endpoint_auth_method},
      redirect_uris = ${textArray(c.redirect_uris)}::text[],
      post_logout_redirect_uris = ${textArray(c.post_logout_redirect_uris)}::text[],
      allowed_origins = ${textArray(c.allowed_origins)}::text[],
      allowed_scopes = ${textArray(c.allowed_scopes)}::text[],
      allowed_resources = ${textArray(c.allowed_resources)}::text[],
      require_pkce = ${c.require_pkce}, status = ${c.status}, mobile_app = ${jsonb(c.mobile_app)}::jsonb,
      updated_at = ${c.now}, version = version + 1
    where id = ${id} and version = ${version} and deleted_at is null
    returning ${columns(sql)}`,
  ).pipe(
    Effect.tap(() => Effect.sync(() => clientChanged(id))),
    Effect.map((rows) => rows[0]),
  )

export const replaceSecretHash = (id: string, version: number, secretHash: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ClientRow>`update clients set secret_hash = ${secretHash}, updated_at = ${now},
      version = version + 1
    where id = ${id} and version = ${version} and deleted_at is null
    returning ${columns(sql)}`,
  ).pipe(
    Effect.tap(() => Effect.sync(() => clientChanged(id))),
    Effect.map((rows) => rows[0]),
  )

/** Logical deletion: the row stays (sessions and audit refer to it) but is never listed or served. */
export const deleteClient = (id: string, version: number, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update clients set deleted_at = ${now}, updated_at = ${now},
      version = version + 1
    where id = ${id} and version = ${version} and deleted_at is null returning id`,
  ).pipe(
    Effect.tap(() => Effect.sync(() => clientChanged(id))),
    Effect.map((rows) => rows.length > 0),
  )

export const clientsPage = (environmentId: string, filter: { readonly clientType?: string | undefined }, page: Page) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ClientRow>`select ${columns(sql)} from clients
    where environment_id = ${environmentId} and deleted_at is null
      ${filter.clientType === undefined ? sql`` : sql`and client_type = ${filter.clientType}`}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )
