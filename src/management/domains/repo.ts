import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Page } from "../conventions/pagination.js"

export interface DomainRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly hostname: string
  readonly rp_enabled: boolean
  readonly status: "pending" | "active" | "failed"
  readonly validation_errors: ReadonlyArray<string>
  readonly verification_token: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, hostname, rp_enabled, status,
  validation_errors, verification_token, created_at, updated_at, version`

/** Serialises registrations and activations of one hostname (check, then insert or activate). */
export const lockHostname = (hostname: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`select pg_advisory_xact_lock(hashtextextended(${`domains:${hostname}`}, 0))`,
  ).pipe(Effect.asVoid)

/**
 * Whether a new claim of `hostname` by this Workspace is refused: the hostname is `active`
 * anywhere, or this Workspace already claims it. Other Workspaces' pending or failed claims
 * never block it (no squatting: only the TXT proof grants a hostname).
 */
export const hostnameTaken = (workspaceId: string, hostname: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        id: string
      }>`select id from domains where hostname = ${hostname} and (status = 'active' or workspace_id = ${workspaceId})
    limit 1`,
  ).pipe(Effect.map((rows) => rows.length > 0))

/** Whether another domain (any Workspace) holds `hostname` as `active`. */
export const hostnameActiveElsewhere = (hostname: string, domainId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        id: string
      }>`select id from domains where hostname = ${hostname} and status = 'active' and id <> ${domainId}`,
  ).pipe(Effect.map((rows) => rows.length > 0))

export const insertDomain = (d: {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly hostname: string
  readonly rpEnabled: boolean
  readonly verificationToken: string
  readonly now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DomainRow>`insert into domains (id, workspace_id, environment_id, hostname,
    rp_enabled, status, validation_errors, verification_token, created_at, updated_at)
  values (${d.id}, ${d.workspaceId}, ${d.environmentId}, ${d.hostname}, ${d.rpEnabled}, 'pending', '[]'::jsonb,
    ${d.verificationToken}, ${d.now}, ${d.now})
  returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** A domain of the Workspace; the caller still checks its Environment. */
export const domainInWorkspace = (workspaceId: string, id: string, options: { readonly lock: boolean }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DomainRow>`select ${columns(sql)} from domains
    where workspace_id = ${workspaceId} and id = ${id} ${options.lock ? sql`for update` : sql``}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const domainsPage = (environmentId: string, filter: { readonly status?: string | undefined }, page: Page) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DomainRow>`select ${columns(sql)} from domains
    where environment_id = ${environmentId}
      ${filter.status === undefined ? sql`` : sql`and status = ${filter.status}`}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

export const setRpEnabled = (id: string, version: number, rpEnabled: boolean, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DomainRow>`update domains set rp_enabled = ${rpEnabled}, updated_at = ${now},
      version = version + 1
    where id = ${id} and version = ${version} returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const setValidationResult = (
  id: string,
  version: number,
  result: {
    readonly status: "active" | "failed"
    readonly errors: ReadonlyArray<string>
    readonly now: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DomainRow>`update domains set status = ${result.status},
      validation_errors = ${JSON.stringify(result.errors)}::jsonb, updated_at = ${result.now}, version = version + 1
    where id = ${id} and version = ${version} returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Domains are removed outright (nothing refers to them; the audit trail keeps the record) so the hostname is free again. */
export const deleteDomain = (id: string, version: number) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`delete from domains where id = ${id} and version = ${version} returning id`,
  ).pipe(Effect.map((rows) => rows.length > 0))

// --- The Environment side: THE Interaction Domain and the RP IDs -------------------------

export interface EnvironmentRpRow {
  readonly id: string
  readonly active_rp_id: string | null
  readonly legacy_rp_id: string | null
  readonly legacy_rp_disabled_at: Date | null
}

/**
 * Locks the Environment row for the rest of the transaction: every domain change that can
 * move the Interaction Domain or the RP ID takes this lock first (then the domain's), so two
 * activations in one Environment are serialised and the RP ID moves exactly once per change.
 */
export const lockEnvironmentRp = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<EnvironmentRpRow>`select id, active_rp_id, legacy_rp_id, legacy_rp_disabled_at from environments
    where id = ${environmentId} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * The custom domain serving as Interaction Domain: the newest `active` + `rp_enabled` one.
 * The same choice as the Environment record of src/tenancy/repo.ts (keep them in step).
 */
export const interactionCustomHost = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        hostname: string
      }>`select hostname from domains where environment_id = ${environmentId} and status = 'active'
    and rp_enabled order by updated_at desc, id limit 1`,
  ).pipe(Effect.map((rows) => rows[0]?.hostname))

export const setEnvironmentRp = (
  environmentId: string,
  rp: {
    readonly activeRpId: string
    readonly legacyRpId: string | null
    readonly legacyRpDisabledAt: Date | null
    readonly now: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update environments set active_rp_id = ${rp.activeRpId},
    legacy_rp_id = ${rp.legacyRpId}, legacy_rp_disabled_at = ${rp.legacyRpDisabledAt}, updated_at = ${rp.now},
    version = version + 1
  where id = ${environmentId}`,
  ).pipe(Effect.asVoid)

/** Whether `hostname` is an active custom domain of the Environment (requests for it are served). */
export const activeDomainHost = (environmentId: string, hostname: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ id: string }>`select id from domains where environment_id = ${environmentId} and hostname = ${hostname}
    and status = 'active'`,
  ).pipe(Effect.map((rows) => rows.length > 0))
