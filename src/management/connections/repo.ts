import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Page } from "../conventions/pagination.js"
import type { ProfileMapping, Provider } from "./schema.js"

/** A connection row as stored (shared with social login). */
export interface ConnectionRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly provider: Provider
  readonly mode: "managed" | "byo"
  readonly provider_key: string
  readonly provider_client_id: string | null
  /** AES-256-GCM under MASTER_KEY (see `openProviderClientSecret`); never returned. */
  readonly provider_client_secret_sealed: string | null
  readonly issuer: string | null
  readonly scopes: ReadonlyArray<string>
  readonly profile_mapping: ProfileMapping
  readonly status: "active" | "disabled"
  readonly owner_confirmed: boolean
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

export interface ConnectionFields {
  readonly provider_client_id: string
  readonly provider_client_secret_sealed: string
  readonly issuer: string | null
  readonly scopes: ReadonlyArray<string>
  readonly profile_mapping: ProfileMapping
  readonly status: ConnectionRow["status"]
  readonly owner_confirmed: boolean
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, provider, mode, provider_key,
  provider_client_id, provider_client_secret_sealed, issuer, scopes, profile_mapping, status, owner_confirmed,
  created_at, updated_at, version`

/** Serialises creations of one provider in one Environment (uniqueness check, then insert). */
export const lockProviderSlot = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`select pg_advisory_xact_lock(hashtextextended(${`connections:${environmentId}`}, 0))`,
  ).pipe(Effect.asVoid)

export const liveConnectionClash = (environmentId: string, provider: string, providerKey: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ provider: string; provider_key: string }>`select provider, provider_key from connections
    where environment_id = ${environmentId} and deleted_at is null
      and (provider = ${provider} or provider_key = ${providerKey}) limit 1`,
  ).pipe(Effect.map((rows) => rows[0]))

export const insertConnection = (
  c: ConnectionFields & {
    readonly id: string
    readonly workspaceId: string
    readonly environmentId: string
    readonly provider: Provider
    readonly mode: ConnectionRow["mode"]
    readonly providerKey: string
    readonly now: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ConnectionRow>`insert into connections (id, workspace_id, environment_id, provider,
    mode, provider_key, provider_client_id, provider_client_secret_sealed, issuer, scopes, profile_mapping, status,
    owner_confirmed, created_at, updated_at)
  values (${c.id}, ${c.workspaceId}, ${c.environmentId}, ${c.provider}, ${c.mode}, ${c.providerKey}, ${c.provider_client_id},
    ${c.provider_client_secret_sealed}, ${c.issuer}, ${c.scopes as Array<string>}::text[], ${JSON.stringify(c.profile_mapping)}::jsonb,
    ${c.status}, ${c.owner_confirmed}, ${c.now}, ${c.now})
  returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** A live connection of the Workspace; the caller still checks its Environment. */
export const connectionInWorkspace = (workspaceId: string, id: string, options: { readonly lock: boolean }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ConnectionRow>`select ${columns(sql)} from connections
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    ${options.lock ? sql`for update` : sql``}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The update only lands on the version the caller read. */
export const updateConnection = (id: string, version: number, c: ConnectionFields & { readonly now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ConnectionRow>`update connections set provider_client_id = ${c.provider_client_id},
      provider_client_secret_sealed = ${c.provider_client_secret_sealed}, issuer = ${c.issuer},
      scopes = ${c.scopes as Array<string>}::text[], profile_mapping = ${JSON.stringify(c.profile_mapping)}::jsonb,
      status = ${c.status}, owner_confirmed = ${c.owner_confirmed}, updated_at = ${c.now}, version = version + 1
    where id = ${id} and version = ${version} and deleted_at is null
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Logical deletion: identities keep their reference; the connection is never listed or usable again. */
export const deleteConnection = (id: string, version: number, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update connections set deleted_at = ${now}, updated_at = ${now},
      version = version + 1
    where id = ${id} and version = ${version} and deleted_at is null returning id`,
  ).pipe(Effect.map((rows) => rows.length > 0))

export const connectionsPage = (
  environmentId: string,
  filter: { readonly provider?: string | undefined },
  page: Page,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ConnectionRow>`select ${columns(sql)} from connections
    where environment_id = ${environmentId} and deleted_at is null
      ${filter.provider === undefined ? sql`` : sql`and provider = ${filter.provider}`}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

/**
 * Usable for login: live, `active`, and — for `generic_oidc` — confirmed by the Workspace
 * Owner or a `connections:write` caller (spec: Connection).
 */
const usable = (sql: SqlClient.SqlClient) =>
  sql`deleted_at is null and status = 'active' and (provider <> 'generic_oidc' or owner_confirmed)`

/**
 * The social providers an Environment's users can log in with right now, for `available_methods`
 * (spec: GET /config, "the active social providers"). Sorted by provider name.
 */
export const activeSocialProviders = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        provider: Provider
      }>`select provider from connections where environment_id = ${environmentId} and ${usable(sql)}
    order by provider`,
  ).pipe(
    Effect.map((rows) => rows.map((r) => r.provider)),
    Effect.orDie,
  )

/**
 * A subquery: the Environment's usable connections (with the `provider_key` an identity names
 * and what decides whether they still issue it: provider, issuer, mapping), for the last-factor
 * count (src/me/methods.ts).
 */
export const usableConnectionRows = (sql: SqlClient.SqlClient, environmentId: string) =>
  sql`select provider_key, provider, issuer, profile_mapping from connections where environment_id = ${environmentId} and ${usable(sql)}`

/** The connection `id` if it is still usable (a social login or link continuing after its callback). */
export const usableConnectionById = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ConnectionRow>`select ${columns(sql)} from connections
    where environment_id = ${environmentId} and id = ${id} and ${usable(sql)}`,
  ).pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie,
  )

/** The usable connection of `provider` in an Environment (social start and callback), if any. */
export const usableConnection = (environmentId: string, provider: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ConnectionRow>`select ${columns(sql)} from connections
    where environment_id = ${environmentId} and provider = ${provider} and ${usable(sql)}`,
  ).pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie,
  )
