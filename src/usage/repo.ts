import { Effect } from "effect"
import { SqlClient } from "effect/sql"

// SQL of MAU counting (sql/0061_usage.sql). Every query is keyed by Workspace or Environment.

/** Records the user as active in the month; false when it already was (idempotent). */
export const insertMonthlyUser = (u: {
  readonly workspaceId: string
  readonly environmentId: string
  readonly billingMonth: string
  readonly userId: string
  readonly at: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{
      user_id: string
    }>`insert into mau_users (workspace_id, environment_id, billing_month, user_id, first_active_at)
    values (${u.workspaceId}, ${u.environmentId}, ${u.billingMonth}, ${u.userId}, ${u.at})
    on conflict (environment_id, billing_month, user_id) do nothing
    returning user_id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/**
 * Adds one to the Workspace's month and returns the new total. The upsert locks the
 * counter row until the caller's transaction ends, so concurrent increments queue.
 */
export const incrementWorkspaceMau = (workspaceId: string, billingMonth: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ active_users: number }>`insert into mau_counters (workspace_id, billing_month, active_users)
    values (${workspaceId}, ${billingMonth}, 1)
    on conflict (workspace_id, billing_month) do update set active_users = mau_counters.active_users + 1
    returning active_users`,
  ).pipe(Effect.map((rows) => rows[0]!.active_users))

/** Claims a threshold of the month; false when it was already reached (exactly once). */
export const claimThreshold = (t: {
  readonly workspaceId: string
  readonly billingMonth: string
  readonly percent: number
  readonly currentMau: number
  readonly freeTierLimit: number
  readonly at: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ threshold_percent: number }>`insert into mau_thresholds
      (workspace_id, billing_month, threshold_percent, current_mau, free_tier_limit, reached_at)
    values (${t.workspaceId}, ${t.billingMonth}, ${t.percent}, ${t.currentMau}, ${t.freeTierLimit}, ${t.at})
    on conflict (workspace_id, billing_month, threshold_percent) do nothing
    returning threshold_percent`,
  ).pipe(Effect.map((rows) => rows.length === 1))

export const workspaceMau = (workspaceId: string, billingMonth: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ active_users: number }>`select active_users from mau_counters
    where workspace_id = ${workspaceId} and billing_month = ${billingMonth}`,
  ).pipe(Effect.map((rows) => rows[0]?.active_users ?? 0))

export const environmentMau = (environmentId: string, billingMonth: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`select count(*)::int as n from mau_users
    where environment_id = ${environmentId} and billing_month = ${billingMonth}`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

export interface ThresholdRow {
  readonly threshold_percent: number
  readonly current_mau: number
  readonly reached_at: Date
}

export const thresholdsOf = (workspaceId: string, billingMonth: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ThresholdRow>`select threshold_percent, current_mau, reached_at from mau_thresholds
    where workspace_id = ${workspaceId} and billing_month = ${billingMonth} order by threshold_percent`,
  )
