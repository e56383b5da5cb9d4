import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { PublicSigningJwk } from "./jwk.js"

export interface SigningKeyRow {
  readonly kid: string
  readonly environment_id: string
  readonly private_key_sealed: string
  readonly public_jwk: PublicSigningJwk
  readonly status: "next" | "active" | "retired"
  readonly published_until: Date | null
  readonly kept_until: Date | null
}

export const insertKey = (row: {
  kid: string
  environmentId: string
  sealed: string
  jwk: PublicSigningJwk
  now: Date
  status?: "next" | "active"
}) =>
  SqlClient.SqlClient.use(
    (
      sql,
    ) => sql`insert into signing_keys (kid, environment_id, private_key_sealed, public_jwk, status, created_at, published_at)
  values (${row.kid}, ${row.environmentId}, ${row.sealed}, ${JSON.stringify(row.jwk)}::jsonb, ${row.status ?? "active"}, ${row.now}, ${row.now})`,
  )

/** The staged key of an Environment (published, not yet signing) and when it was published. */
export const nextKey = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        kid: string
        published_at: Date
      }>`select kid, coalesce(published_at, created_at) as published_at from signing_keys
    where environment_id = ${environmentId} and status = 'next'`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Serialises key changes of one Environment (stage, promote, rotate). */
export const lockEnvironmentKeys = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`select id from environments where id = ${environmentId} for update`,
  ).pipe(Effect.map((rows) => rows.length > 0))

export const promoteNext = (environmentId: string, kid: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update signing_keys set status = 'active' where environment_id = ${environmentId} and kid = ${kid} and status = 'next'`,
  )

export const activeKey = (environmentId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SigningKeyRow>`select kid, environment_id, private_key_sealed, public_jwk, status, published_until, kept_until
    from signing_keys where environment_id = ${environmentId} and status = 'active'`,
  ).pipe(Effect.map((rows) => rows[0]))

export const keyByKid = (environmentId: string, kid: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SigningKeyRow>`select kid, environment_id, private_key_sealed, public_jwk, status, published_until, kept_until
    from signing_keys where environment_id = ${environmentId} and kid = ${kid}`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Keys a verifier may see: the staged next one (published before it signs), the active one,
 * and retired ones whose tokens may still be live.
 */
export const publishedKeys = (environmentId: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ public_jwk: PublicSigningJwk }>`select public_jwk from signing_keys
    where environment_id = ${environmentId} and (status in ('next', 'active') or published_until > ${now})
    order by created_at desc`,
  )

export const retireActive = (environmentId: string, now: Date, publishedUntil: Date, keptUntil: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update signing_keys
    set status = 'retired', retired_at = ${now}, published_until = ${publishedUntil}, kept_until = ${keptUntil}
    where environment_id = ${environmentId} and status = 'active'`,
  )

export const deleteExpiredKeys = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ kid: string }>`delete from signing_keys where status = 'retired' and kept_until < ${now} returning kid`,
  )
