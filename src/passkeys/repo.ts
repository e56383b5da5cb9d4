import { Effect } from "effect"
import { SqlClient } from "effect/sql"

// SQL of the `passkeys` table (sql/0004_identity.sql). Every query filters by Environment.

export interface PasskeyRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly user_id: string
  readonly credential_id: string
  readonly public_key: Uint8Array
  /** bigint in SQL; read as text so a large counter never loses precision */
  readonly sign_count: string
  readonly transports: ReadonlyArray<string>
  readonly aaguid: string | null
  readonly backed_up: boolean
  readonly device_type: string | null
  readonly rp_id: string
  readonly user_handle: string
  readonly name: string | null
  readonly created_at: Date
  readonly last_used_at: Date | null
}

const columns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, user_id, credential_id, public_key,
  sign_count::text as sign_count, transports, aaguid, backed_up, device_type, rp_id, user_handle, name, created_at, last_used_at`

export const passkeyByCredentialId = (environmentId: string, credentialId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeyRow>`select ${columns(sql)} from passkeys where environment_id = ${environmentId} and credential_id = ${credentialId}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Locks the credential's row for the rest of the caller's transaction (counter update). */
export const lockPasskey = (environmentId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeyRow>`select ${columns(sql)} from passkeys where environment_id = ${environmentId} and id = ${id} for update`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Every passkey of a user (a user has a handful), oldest first. */
export const passkeysOfUser = (environmentId: string, userId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeyRow>`select ${columns(sql)} from passkeys where environment_id = ${environmentId} and user_id = ${userId}
    order by created_at, id`,
  )

/** One page (keyset on id) of a user's passkeys. */
export const passkeysOfUserPage = (
  environmentId: string,
  userId: string,
  page: { after: string | undefined; limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<PasskeyRow>`select ${columns(sql)} from passkeys
    where environment_id = ${environmentId} and user_id = ${userId}
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

export interface NewPasskey {
  readonly id: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
  readonly credentialId: string
  readonly publicKey: Uint8Array
  readonly signCount: number
  readonly transports: ReadonlyArray<string>
  readonly aaguid: string
  readonly backedUp: boolean
  readonly deviceType: "single_device" | "multi_device"
  readonly rpId: string
  readonly userHandle: string
  readonly name: string | null
  readonly now: Date
}

/** Inserts a passkey; undefined when the credential id is already registered in the Environment. */
export const insertPasskey = (p: NewPasskey) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeyRow>`insert into passkeys (id, workspace_id, environment_id, user_id, credential_id, public_key, sign_count,
      transports, aaguid, backed_up, device_type, rp_id, user_handle, name, created_at)
    values (${p.id}, ${p.workspaceId}, ${p.environmentId}, ${p.userId}, ${p.credentialId}, ${p.publicKey}, ${p.signCount},
      ${p.transports as Array<string>}::text[], ${p.aaguid}, ${p.backedUp}, ${p.deviceType}, ${p.rpId}, ${p.userHandle},
      ${p.name}, ${p.now})
    on conflict (environment_id, credential_id) do nothing
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Records a successful assertion: the counter the authenticator reported, its backup state, the time. */
export const recordUse = (
  environmentId: string,
  id: string,
  use: { signCount: number; backedUp: boolean; now: Date },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update passkeys set sign_count = ${use.signCount}, backed_up = ${use.backedUp},
      last_used_at = ${use.now}
    where environment_id = ${environmentId} and id = ${id}`,
  )

/** Deletes one passkey of the user; undefined when there is none. */
export const deletePasskeyOfUser = (environmentId: string, userId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeyRow>`delete from passkeys where environment_id = ${environmentId} and user_id = ${userId} and id = ${id}
    returning ${columns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** What a react_native client registered about its app (Android origins, native RP IDs). */
export interface CeremonyClientRow {
  readonly id: string
  readonly client_type: "web_bff" | "web_spa" | "react_native"
  readonly mobile_app: {
    readonly android_sha256_fingerprints?: ReadonlyArray<string>
    readonly universal_link_host?: string | null
  } | null
}

export const ceremonyClient = (environmentId: string, clientId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<CeremonyClientRow>`select id, client_type, mobile_app from clients
    where environment_id = ${environmentId} and id = ${clientId} and deleted_at is null`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Host names of the Environment's active Custom Domains enabled as RP (spec, Passkey rule 5). */
export const rpEnabledCustomDomains = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ hostname: string }>`select hostname from domains
    where environment_id = ${environmentId} and status = 'active' and rp_enabled order by hostname`,
  ).pipe(Effect.map((rows) => rows.map((r) => r.hostname)))
