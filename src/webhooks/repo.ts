import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { addJobs, jobKeySql, TASKS } from "../platform/jobs.js"

// SQL only. Every query of webhooks / webhook_deliveries filters by Workspace or Environment,
// except the worker's reads by a delivery id it was handed by its own job.

export type WebhookStatus = "active" | "disabled"
export type DeliveryStatus = "pending" | "delivered" | "failed" | "exhausted"

export interface WebhookRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly url: string
  readonly event_types: ReadonlyArray<string>
  readonly status: WebhookStatus
  readonly secret_sealed: string | null
  readonly secret_rotated_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly version: number
}

const webhookColumns = (sql: SqlClient.SqlClient) => sql`id, workspace_id, environment_id, url, event_types, status,
  secret_sealed, secret_rotated_at, created_at, updated_at, version`

export const insertWebhook = (w: {
  id: string; workspaceId: string; environmentId: string; url: string; eventTypes: ReadonlyArray<string>; secretSealed: string; now: Date
}) => SqlClient.SqlClient.use((sql) => sql<WebhookRow>`insert into webhooks (id, workspace_id, environment_id, url, event_types,
    status, secret_sealed, created_at, updated_at)
  values (${w.id}, ${w.workspaceId}, ${w.environmentId}, ${w.url}, ${w.eventTypes as Array<string>}::text[], 'active',
    ${w.secretSealed}, ${w.now}, ${w.now})
  returning ${webhookColumns(sql)}`).pipe(Effect.map((rows) => rows[0]!))

/** A live (not deleted) webhook of the Workspace; `lock` holds its row until the transaction ends. */
export const webhookById = (workspaceId: string, id: string, options: { lock?: boolean } = {}) =>
  SqlClient.SqlClient.use((sql) => sql<WebhookRow>`select ${webhookColumns(sql)} from webhooks
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    ${options.lock ? sql`for update` : sql``}`).pipe(Effect.map((rows) => rows[0]))

export const listWebhooks = (environmentId: string, page: { limit: number; after: string | undefined }) =>
  SqlClient.SqlClient.use((sql) => sql<WebhookRow>`select ${webhookColumns(sql)} from webhooks
    where environment_id = ${environmentId} and deleted_at is null
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`)

export const updateWebhook = (u: {
  workspaceId: string; id: string; url: string; eventTypes: ReadonlyArray<string>; status: WebhookStatus; now: Date
}) => SqlClient.SqlClient.use((sql) => sql<WebhookRow>`update webhooks
    set url = ${u.url}, event_types = ${u.eventTypes as Array<string>}::text[], status = ${u.status}, updated_at = ${u.now},
      version = version + 1
    where workspace_id = ${u.workspaceId} and id = ${u.id} and deleted_at is null
    returning ${webhookColumns(sql)}`).pipe(Effect.map((rows) => rows[0]))

export const deleteWebhook = (workspaceId: string, id: string, now: Date) =>
  SqlClient.SqlClient.use((sql) => sql<{ id: string }>`update webhooks
    set deleted_at = ${now}, updated_at = ${now}, secret_sealed = null, status = 'disabled', version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning id`).pipe(Effect.map((rows) => rows.length === 1))

export const replaceSecret = (workspaceId: string, id: string, secretSealed: string, now: Date) =>
  SqlClient.SqlClient.use((sql) => sql<WebhookRow>`update webhooks
    set secret_sealed = ${secretSealed}, secret_rotated_at = ${now}, updated_at = ${now}, version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning ${webhookColumns(sql)}`).pipe(Effect.map((rows) => rows[0]))

// ---------------------------------------------------------------- deliveries

export interface DeliveryRow {
  readonly id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly status: DeliveryStatus
  readonly response_status_code: number | null
  readonly duration_ms: number | null
  readonly occurred_at: Date
}

const deliveryColumns = (sql: SqlClient.SqlClient) => sql`id, webhook_id, event_id, event_type, attempt, status,
  response_status_code, duration_ms, occurred_at`

export interface DeliveryFilter {
  readonly status?: DeliveryStatus | undefined
  readonly occurredAfter?: Date | undefined
  readonly occurredBefore?: Date | undefined
}

/** Newest first; the keyset is (occurred_at, id), so pages stay stable under new attempts. */
export const listDeliveries = (
  environmentId: string, webhookId: string, filter: DeliveryFilter,
  page: { limit: number; after: { occurredAt: Date; id: string } | undefined },
) => SqlClient.SqlClient.use((sql) => sql<DeliveryRow>`select ${deliveryColumns(sql)} from webhook_deliveries
    where environment_id = ${environmentId} and webhook_id = ${webhookId}
      ${filter.status === undefined ? sql`` : sql`and status = ${filter.status}`}
      ${filter.occurredAfter === undefined ? sql`` : sql`and occurred_at > ${filter.occurredAfter}`}
      ${filter.occurredBefore === undefined ? sql`` : sql`and occurred_at < ${filter.occurredBefore}`}
      ${page.after === undefined ? sql`` : sql`and (occurred_at, id) < (${page.after.occurredAt}, ${page.after.id})`}
    order by occurred_at desc, id desc limit ${page.limit + 1}`)

/** An outbox event with one of its active subscriptions: what its first attempt needs. */
export interface EventSubscriptionRow {
  readonly event_id: string
  readonly workspace_id: string
  readonly type: string
  readonly envelope: unknown
  readonly webhook_id: string
  readonly environment_id: string
  readonly url: string
  readonly secret_sealed: string | null
}

/**
 * The active subscriptions of an outbox event, in one query: same Environment (or, for a
 * Workspace-level event without an Environment, every Environment of its Workspace) and
 * subscribed to its type. `pendingFirstAttempts`: whether first attempts of the event were
 * already recorded and are still pending (a re-run of its fan-out), whatever the state of
 * their subscriptions now. Undefined: the event is gone.
 */
export const subscriptionsOfEvent = (eventId: string) => SqlClient.SqlClient.use((sql) =>
  sql<EventSubscriptionRow & { readonly webhook_id: string | null; readonly pending_first_attempts: boolean }>`select e.id as event_id,
      e.workspace_id, e.type, e.envelope, w.id as webhook_id, w.environment_id, w.url, w.secret_sealed,
      exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending' and d.attempt = 1)
        as pending_first_attempts
    from event_outbox e
      left join webhooks w on w.workspace_id = e.workspace_id
        and (e.environment_id is null or w.environment_id = e.environment_id)
        and w.status = 'active' and w.deleted_at is null and e.type = any(w.event_types)
    where e.id = ${eventId}
    order by w.id`).pipe(Effect.map((rows) => rows.length === 0 ? undefined : {
    subscriptions: rows.filter((r): r is typeof r & { webhook_id: string } => r.webhook_id !== null) as ReadonlyArray<EventSubscriptionRow>,
    pendingFirstAttempts: rows[0]!.pending_first_attempts,
  }))

export type NewDelivery = {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly status: "pending"
  readonly occurred_at: Date
  readonly scheduled_at: Date
}

/** Inserts attempt records; an attempt that already exists is skipped. Returns the ids inserted. */
export const insertDeliveries = (rows: ReadonlyArray<NewDelivery>) => rows.length === 0
  ? Effect.succeed([] as ReadonlyArray<string>)
  : SqlClient.SqlClient.use((sql) => sql<{ id: string }>`insert into webhook_deliveries ${sql.insert(rows as unknown as readonly [Record<string, unknown>, ...Array<Record<string, unknown>>])}
      on conflict (webhook_id, event_id, attempt) do nothing returning id`).pipe(Effect.map((r) => r.map((x) => x.id)))

/** Everything one attempt needs: the record, its webhook and the stored envelope. */
export interface AttemptRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
  readonly status: DeliveryStatus
  readonly url: string
  readonly webhook_status: WebhookStatus
  readonly webhook_deleted: boolean
  readonly secret_sealed: string | null
  readonly envelope: unknown
}

const attemptSelect = (sql: SqlClient.SqlClient) => sql`select d.id, d.workspace_id, d.environment_id, d.webhook_id, d.event_id,
      d.event_type, d.attempt, d.status, w.url, w.status as webhook_status, (w.deleted_at is not null) as webhook_deleted,
      w.secret_sealed, e.envelope
    from webhook_deliveries d
      join webhooks w on w.id = d.webhook_id and w.environment_id = d.environment_id
      join event_outbox e on e.id = d.event_id`

export const attemptById = (deliveryId: string) => SqlClient.SqlClient.use((sql) =>
  sql<AttemptRow>`${attemptSelect(sql)} where d.id = ${deliveryId}`).pipe(Effect.map((rows) => rows[0]))

/**
 * The first attempts of an event that are still pending: what its fan-out job sends. On a
 * re-run of that job (its worker died) these are the sends it had not settled.
 */
export const pendingFirstAttempts = (eventId: string) => SqlClient.SqlClient.use((sql) =>
  sql<AttemptRow>`${attemptSelect(sql)} where d.event_id = ${eventId} and d.attempt = 1 and d.status = 'pending' order by d.id`)

/** Moves a pending attempt that was not sent (its receiver's slots were full) to a later time. */
export const deferAttempt = (id: string, runAt: Date) => SqlClient.SqlClient.use((sql) => sql<{ id: string }>`update webhook_deliveries
    set occurred_at = ${runAt}, scheduled_at = ${runAt}
    where id = ${id} and status = 'pending' returning id`).pipe(Effect.map((rows) => rows.length === 1))

/**
 * Settles a pending attempt (it stays `pending` while in flight) and records when it was
 * sent. Conditional on `pending`, so of two runs of the same attempt (a worker presumed
 * dead that was not) exactly one records the outcome and schedules the next attempt.
 */
export const settleDelivery = (s: {
  id: string; status: Exclude<DeliveryStatus, "pending">; responseStatusCode: number | null; durationMs: number | null
  failureReason: string | null; sentAt: Date | null
}) => SqlClient.SqlClient.use((sql) => sql<{ id: string }>`update webhook_deliveries
    set status = ${s.status}, response_status_code = ${s.responseStatusCode}, duration_ms = ${s.durationMs},
      failure_reason = ${s.failureReason}, occurred_at = coalesce(${s.sentAt}::timestamptz, occurred_at)
    where id = ${s.id} and status = 'pending' returning id`).pipe(Effect.map((rows) => rows.length === 1))

/** The outcome of one sent attempt, for a batch settle. */
export interface Settlement {
  readonly id: string
  readonly status: Exclude<DeliveryStatus, "pending">
  readonly responseStatusCode: number | null
  readonly durationMs: number | null
  readonly failureReason: string | null
  readonly sentAt: Date | null
}

/**
 * settleDelivery for many final outcomes in one statement (the sends of one fan-out), with the
 * same condition per record. Returns the ids it settled. The ids are also given as an array: the
 * planner cannot count a function's rows and would otherwise scan every pending record (a
 * burst has tens of thousands) instead of looking each one up by its primary key.
 */
export const settleDeliveries = (rows: ReadonlyArray<Settlement>) => rows.length === 0
  ? Effect.succeed([] as ReadonlyArray<string>)
  : SqlClient.SqlClient.use((sql) => sql<{ id: string }>`update webhook_deliveries d
      set status = v.status, response_status_code = v.code, duration_ms = v.ms, failure_reason = v.reason,
        occurred_at = coalesce(v.sent_at, d.occurred_at)
      from jsonb_to_recordset(${JSON.stringify(rows.map((r) => ({
          id: r.id, status: r.status, code: r.responseStatusCode, ms: r.durationMs, reason: r.failureReason, sent_at: r.sentAt,
        })))}::jsonb) as v(id text, status text, code int, ms int, reason text, sent_at timestamptz)
      where d.id = any(${rows.map((r) => r.id)}::text[]) and d.id = v.id and d.status = 'pending' returning d.id`)
    .pipe(Effect.map((r) => r.map((x) => x.id)))

/**
 * One `webhooks.deliver` job per attempt record, due at `runAt` (computed from the Clock),
 * keyed by the record so an attempt never has two jobs; one statement for any number.
 * `priority`: graphile-worker's (lower runs first; 0 unless given).
 */
export const enqueueAttempts = (deliveryIds: ReadonlyArray<string>, runAt: Date, priority = 0) => deliveryIds.length === 0
  ? Effect.succeed(0)
  : addJobs(TASKS.webhookDeliver, (sql) => ({
    payload: sql`json_build_object('deliveryId', id)`,
    runAt: sql`${runAt}::timestamptz`,
    jobKey: jobKeySql(sql, TASKS.webhookDeliver, sql`id`),
    priority: sql`${priority}::int`,
    from: sql`unnest(${deliveryIds as Array<string>}::text[]) as id`,
  }))

/** Delivery history retention (spec: 90 days). */
export const deleteDeliveriesBefore = (cutoff: Date) => SqlClient.SqlClient.use((sql) =>
  sql<{ n: number }>`with gone as (delete from webhook_deliveries where occurred_at < ${cutoff} returning 1)
    select count(*)::int as n from gone`).pipe(Effect.map((rows) => rows[0]?.n ?? 0))
