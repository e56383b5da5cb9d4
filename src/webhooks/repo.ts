import { Array as Arr, Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
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
  id: string
  workspaceId: string
  environmentId: string
  url: string
  eventTypes: ReadonlyArray<string>
  secretSealed: string
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WebhookRow>`insert into webhooks (id, workspace_id, environment_id, url, event_types,
    status, secret_sealed, created_at, updated_at)
  values (${w.id}, ${w.workspaceId}, ${w.environmentId}, ${w.url}, ${w.eventTypes as Array<string>}::text[], 'active',
    ${w.secretSealed}, ${w.now}, ${w.now})
  returning ${webhookColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** A live (not deleted) webhook of the Workspace; `lock` holds its row until the transaction ends. */
export const webhookById = (workspaceId: string, id: string, options: { lock?: boolean } = {}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WebhookRow>`select ${webhookColumns(sql)} from webhooks
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    ${options.lock ? sql`for update` : sql``}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const listWebhooks = (environmentId: string, page: { limit: number; after: string | undefined }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WebhookRow>`select ${webhookColumns(sql)} from webhooks
    where environment_id = ${environmentId} and deleted_at is null
      ${page.after === undefined ? sql`` : sql`and id > ${page.after}`}
    order by id limit ${page.limit + 1}`,
  )

export const updateWebhook = (u: {
  workspaceId: string
  id: string
  url: string
  eventTypes: ReadonlyArray<string>
  status: WebhookStatus
  now: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WebhookRow>`update webhooks
    set url = ${u.url}, event_types = ${u.eventTypes as Array<string>}::text[], status = ${u.status}, updated_at = ${u.now},
      version = version + 1
    where workspace_id = ${u.workspaceId} and id = ${u.id} and deleted_at is null
    returning ${webhookColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

export const deleteWebhook = (workspaceId: string, id: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update webhooks
    set deleted_at = ${now}, updated_at = ${now}, secret_sealed = null, status = 'disabled', version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

export const replaceSecret = (workspaceId: string, id: string, secretSealed: string, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<WebhookRow>`update webhooks
    set secret_sealed = ${secretSealed}, secret_rotated_at = ${now}, updated_at = ${now}, version = version + 1
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning ${webhookColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

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
  environmentId: string,
  webhookId: string,
  filter: DeliveryFilter,
  page: { limit: number; after: { occurredAt: Date; id: string } | undefined },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DeliveryRow>`select ${deliveryColumns(sql)} from webhook_deliveries
    where environment_id = ${environmentId} and webhook_id = ${webhookId}
      ${filter.status === undefined ? sql`` : sql`and status = ${filter.status}`}
      ${filter.occurredAfter === undefined ? sql`` : sql`and occurred_at > ${filter.occurredAfter}`}
      ${filter.occurredBefore === undefined ? sql`` : sql`and occurred_at < ${filter.occurredBefore}`}
      ${page.after === undefined ? sql`` : sql`and (occurred_at, id) < (${page.after.occurredAt}, ${page.after.id})`}
    order by occurred_at desc, id desc limit ${page.limit + 1}`,
  )

/** One attempt with what it sent and got back, and the envelope it sent while the outbox keeps it. */
export interface DeliveryDetailRow extends DeliveryRow {
  readonly request_url: string | null
  readonly request_signature: string | null
  readonly response_headers: Record<string, string> | null
  readonly response_body: string | null
  readonly response_body_truncated: boolean | null
  readonly transport_error: string | null
  /** Null once the event left the outbox (30 days). */
  readonly envelope: unknown
}

/** One attempt of a webhook in an Environment (the caller reached both already). */
export const deliveryById = (environmentId: string, webhookId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<DeliveryDetailRow>`select d.id, d.webhook_id, d.event_id, d.event_type, d.attempt, d.status,
      d.response_status_code, d.duration_ms, d.occurred_at, d.request_url, d.request_signature, d.response_headers,
      d.response_body, d.response_body_truncated, d.transport_error, e.envelope
    from webhook_deliveries d left join event_outbox e on e.id = d.event_id
    where d.environment_id = ${environmentId} and d.webhook_id = ${webhookId} and d.id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

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

/** The active subscriptions of an outbox event, and which of their first attempts one statement created. */
export interface FirstAttemptsRead {
  /** Ordered by webhook id. */
  readonly subscriptions: ReadonlyArray<EventSubscriptionRow>
  /** The id of each subscription's first attempt created by this statement, by webhook id. */
  readonly created: ReadonlyMap<string, string>
  /** Whether first attempts of the event were already recorded and are still pending. */
  readonly pendingFirstAttempts: boolean
}

/**
 * Fan-out of an outbox event in one statement: reads its active subscriptions (same
 * Environment, or, for a Workspace-level event without an Environment, every Environment of its
 * Workspace; subscribed to its type) and inserts one `pending` attempt-1 record for each of the
 * first `ids.length` of them (by webhook id), under those ids; an attempt that exists already is
 * skipped. `pendingFirstAttempts` is read before the insert (one snapshot): whether first attempts
 * of the event were already recorded and are still pending (a re-run of its fan-out), whatever the
 * state of their subscriptions now. Undefined: the event is gone. Subscriptions past
 * `ids.length` are returned without a record (the caller inserts them).
 */
export const createFirstAttemptRecords = (eventId: string, ids: ReadonlyArray<string>, now: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<
        Omit<EventSubscriptionRow, "webhook_id"> & {
          readonly webhook_id: string | null
          readonly created_id: string | null
          readonly pending_first_attempts: boolean
        }
      >`with e as (
      select id, workspace_id, environment_id, type, envelope from event_outbox where id = ${eventId}
    ), s as (
      select row_number() over (order by w.id) as n, w.id as webhook_id, w.environment_id, w.url, w.secret_sealed
      from e join webhooks w on w.workspace_id = e.workspace_id
        and (e.environment_id is null or w.environment_id = e.environment_id)
        and w.status = 'active' and w.deleted_at is null and e.type = any(w.event_types)
    ), created as (
      insert into webhook_deliveries (id, workspace_id, environment_id, webhook_id, event_id, event_type, attempt,
        status, occurred_at, scheduled_at)
      select (${ids as Array<string>}::text[])[s.n::int], e.workspace_id, s.environment_id, s.webhook_id, e.id, e.type, 1,
        'pending', ${now}, ${now}
      from s cross join e where s.n <= ${ids.length}
      on conflict (webhook_id, event_id, attempt) do nothing
      returning id, webhook_id
    )
    select e.id as event_id, e.workspace_id, e.type, e.envelope, s.webhook_id, s.environment_id, s.url,
      s.secret_sealed, created.id as created_id,
      exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending' and d.attempt = 1)
        as pending_first_attempts
    from e left join s on true left join created on created.webhook_id = s.webhook_id
    order by s.n`,
  ).pipe(
    Effect.map((rows): FirstAttemptsRead | undefined => {
      if (rows.length === 0) return undefined
      const subscriptions: Array<EventSubscriptionRow> = []
      const created = new Map<string, string>()
      for (const r of rows) {
        if (r.webhook_id === null) continue
        subscriptions.push({ ...r, webhook_id: r.webhook_id })
        if (r.created_id !== null) created.set(r.webhook_id, r.created_id)
      }
      return { subscriptions, created, pendingFirstAttempts: rows[0]!.pending_first_attempts }
    }),
  )

/**
 * One attempt to deliver one event to one webhook: the columns every attempt record has. A type, not an interface,
 * so that a row of it is a record `sql.insert` accepts.
 */
type DeliveryAttempt = {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt: number
}

export type NewDelivery = DeliveryAttempt & {
  readonly status: "pending"
  readonly occurred_at: Date
  readonly scheduled_at: Date
}

/** Inserts attempt records; an attempt that already exists is skipped. Returns the ids inserted. */
export const insertDeliveries = (rows: ReadonlyArray<NewDelivery>) =>
  !Arr.isReadonlyArrayNonEmpty(rows)
    ? Effect.succeed([] as ReadonlyArray<string>)
    : SqlClient.SqlClient.use(
        (sql) => sql<{ id: string }>`insert into webhook_deliveries ${sql.insert(rows)}
      on conflict (webhook_id, event_id, attempt) do nothing returning id`,
      ).pipe(Effect.map((r) => r.map((x) => x.id)))

/** Everything one attempt needs: the record, its webhook and the stored envelope. */
export interface AttemptRow extends DeliveryAttempt {
  readonly status: DeliveryStatus
  readonly url: string
  readonly webhook_status: WebhookStatus
  readonly webhook_deleted: boolean
  readonly secret_sealed: string | null
  readonly envelope: unknown
}

const attemptSelect = (
  sql: SqlClient.SqlClient,
) => sql`select d.id, d.workspace_id, d.environment_id, d.webhook_id, d.event_id,
      d.event_type, d.attempt, d.status, w.url, w.status as webhook_status, (w.deleted_at is not null) as webhook_deleted,
      w.secret_sealed, e.envelope
    from webhook_deliveries d
      join webhooks w on w.id = d.webhook_id and w.environment_id = d.environment_id
      join event_outbox e on e.id = d.event_id`

export const attemptById = (deliveryId: string) =>
  SqlClient.SqlClient.use((sql) => sql<AttemptRow>`${attemptSelect(sql)} where d.id = ${deliveryId}`).pipe(
    Effect.map((rows) => rows[0]),
  )

/**
 * The first attempts of an event that are still pending: what its fan-out job sends. On a
 * re-run of that job (its worker died) these are the sends it had not settled.
 */
export const pendingFirstAttempts = (eventId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<AttemptRow>`${attemptSelect(sql)} where d.event_id = ${eventId} and d.attempt = 1 and d.status = 'pending' order by d.id`,
  )

/**
 * The "still pending" condition of the conditional updates of one attempt by its id, written so
 * that it does not imply `status = 'pending'`: the planner then looks the ids up by primary
 * key. Written plainly, it matched the partial indexes on pending records
 * (webhook_deliveries_pending_event, _unsettled), which the statistics show nearly empty, and
 * in a burst the planner walked that index's thousands of recently dead entries on every
 * settle (3.8 ms per statement and most of the worker's Postgres CPU; 0.3 ms by primary key).
 * `status` is never null, so `is true` changes nothing else.
 */
const stillPending = (sql: SqlClient.SqlClient, status: Statement.Fragment) => sql`(${status} = 'pending') is true`

/**
 * Moves a pending attempt that was not sent (its receiver's slots were full) to a later time,
 * with its `webhooks.deliver` job due then at `priority`: one statement (the move and the job
 * commit together). Whether it moved (an attempt settled meanwhile is left alone, no job).
 */
export const deferAttempt = (id: string, runAt: Date, priority: number) =>
  addJobs(TASKS.webhookDeliver, (sql) => ({
    with: sql`deferred as (update webhook_deliveries
      set occurred_at = ${runAt}, scheduled_at = ${runAt}
      where id = ${id} and ${stillPending(sql, sql`status`)} returning id)`,
    payload: sql`json_build_object('deliveryId', id)`,
    runAt: sql`${runAt}::timestamptz`,
    jobKey: jobKeySql(sql, TASKS.webhookDeliver, sql`id`),
    priority: sql`${priority}::int`,
    from: sql`deferred`,
  })).pipe(Effect.map((n) => n === 1))

/**
 * What one attempt sent and got back (docs/decisions/events-and-webhooks.md, "Attempt request
 * and response"): the URL and signature header sent, and the response kept (bounded) or the
 * transport error. Absent for an attempt that was never sent.
 */
export interface Exchange {
  readonly requestUrl: string
  readonly requestSignature: string
  readonly response:
    | {
        readonly headers: Readonly<Record<string, string>>
        readonly body: string
        readonly bodyTruncated: boolean
      }
    | undefined
  readonly transportError: string | undefined
}

/** The outcome of one sent attempt. */
export interface Settlement {
  readonly id: string
  readonly status: Exclude<DeliveryStatus, "pending">
  readonly responseStatusCode: number | null
  readonly durationMs: number | null
  readonly failureReason: string | null
  readonly sentAt: Date | null
  readonly exchange: Exchange | undefined
}

/** One settlement as the jsonb record both settle statements read (one shape, one parse). */
const settlementRecord = (r: Settlement) => ({
  id: r.id,
  status: r.status,
  code: r.responseStatusCode,
  ms: r.durationMs,
  reason: r.failureReason,
  sent_at: r.sentAt,
  url: r.exchange?.requestUrl ?? null,
  signature: r.exchange?.requestSignature ?? null,
  headers: r.exchange?.response?.headers ?? null,
  body: r.exchange?.response?.body ?? null,
  truncated: r.exchange?.response?.bodyTruncated ?? null,
  error: r.exchange?.transportError ?? null,
})

const settlementColumns = (sql: SqlClient.SqlClient) => sql`v(id text, status text, code int, ms int, reason text,
  sent_at timestamptz, url text, signature text, headers jsonb, body text, truncated boolean, error text)`

const settledSet = (sql: SqlClient.SqlClient) => sql`status = v.status, response_status_code = v.code,
  duration_ms = v.ms, failure_reason = v.reason, occurred_at = coalesce(v.sent_at, d.occurred_at),
  request_url = v.url, request_signature = v.signature, response_headers = v.headers, response_body = v.body,
  response_body_truncated = v.truncated, transport_error = v.error`

/**
 * Settles a pending attempt (it stays `pending` while in flight), records when it was sent and
 * what it sent and got back, in one statement. Conditional on `pending`, so of two runs of the
 * same attempt (a worker presumed dead that was not) exactly one records the outcome and
 * schedules the next attempt.
 */
export const settleDelivery = (s: Settlement) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update webhook_deliveries d set ${settledSet(sql)}
    from jsonb_to_record(${JSON.stringify(settlementRecord(s))}::jsonb) as ${settlementColumns(sql)}
    where d.id = ${s.id} and ${stillPending(sql, sql`d.status`)} returning d.id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/**
 * settleDelivery for many final outcomes in one statement (the sends of one fan-out), with the
 * same condition per record. Returns the ids it settled. The ids are also given as an array: the
 * planner cannot count a function's rows and would otherwise scan every pending record (a
 * burst has tens of thousands) instead of looking each one up by its primary key.
 */
export const settleDeliveries = (rows: ReadonlyArray<Settlement>) =>
  rows.length === 0
    ? Effect.succeed([] as ReadonlyArray<string>)
    : SqlClient.SqlClient.use(
        (sql) => sql<{ id: string }>`update webhook_deliveries d set ${settledSet(sql)}
      from jsonb_to_recordset(${JSON.stringify(rows.map(settlementRecord))}::jsonb) as ${settlementColumns(sql)}
      where d.id = any(${rows.map((r) => r.id)}::text[]) and d.id = v.id and ${stillPending(sql, sql`d.status`)}
      returning d.id`,
      ).pipe(Effect.map((r) => r.map((x) => x.id)))

/**
 * One `webhooks.deliver` job per attempt record, due at `runAt` (computed from the Clock),
 * keyed by the record so an attempt never has two jobs; one statement for any number.
 * `priority`: graphile-worker's (lower runs first; 0 unless given).
 */
export const enqueueAttempts = (deliveryIds: ReadonlyArray<string>, runAt: Date, priority = 0) =>
  deliveryIds.length === 0
    ? Effect.succeed(0)
    : addJobs(TASKS.webhookDeliver, (sql) => ({
        payload: sql`json_build_object('deliveryId', id)`,
        runAt: sql`${runAt}::timestamptz`,
        jobKey: jobKeySql(sql, TASKS.webhookDeliver, sql`id`),
        priority: sql`${priority}::int`,
        from: sql`unnest(${deliveryIds as Array<string>}::text[]) as id`,
      }))

/** Delivery history retention (spec: 90 days). */
export const deleteDeliveriesBefore = (cutoff: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`with gone as (delete from webhook_deliveries where occurred_at < ${cutoff} returning 1)
    select count(*)::int as n from gone`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

/**
 * Response headers and bodies may carry personal data the user purge cannot find: they are
 * cleared once the attempt is older than the cutoff; the record itself stays its 90 days.
 */
export const clearExchangesBefore = (cutoff: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{ n: number }>`with cleared as (update webhook_deliveries set response_headers = null, response_body = null
      where occurred_at < ${cutoff} and (response_headers is not null or response_body is not null) returning 1)
    select count(*)::int as n from cleared`,
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))
