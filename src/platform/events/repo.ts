import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { addJobCall, jobKeySql, TASKS } from "../jobs.js"
import { currentTraceparent } from "../observability/trace-context.js"

export interface OutboxRow {
  readonly eventId: string
  readonly workspaceId: string
  readonly environmentId: string | undefined
  readonly type: string
  /** The validated envelope, serialized. */
  readonly envelope: string
  readonly occurredAt: Date
  /** The span that made the event (when spans are recorded): its fan-out job joins that trace. */
  readonly traceparent?: string | undefined
}

/**
 * The outbox insert and the webhook fan-out job (only when at least one active subscription
 * could want the type: no job at all for events nobody subscribed to), as two CTEs named
 * `event` and `fanout`. With `guard` (the name of an earlier CTE), the event is written only
 * when that CTE has a row: a statement that makes a change and reports it in one round trip.
 * The statement must read `fanout` (an unread SELECT CTE is never evaluated).
 */
export const outboxCtes = (sql: SqlClient.SqlClient, e: OutboxRow, guard?: string): Statement.Fragment => sql`event as (
      insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at)
      select ${e.eventId}, ${e.workspaceId}, ${e.environmentId ?? null}, ${e.type}, ${e.envelope}::jsonb, ${e.occurredAt}
      ${guard === undefined ? sql`` : sql`from ${sql.literal(guard)} limit 1`}
      returning id
    ), fanout as (
      select (${addJobCall(sql, TASKS.webhookFanout, {
        payload: sql`json_build_object('eventId', event.id)`,
        runAt: sql`${e.occurredAt}::timestamptz`,
        jobKey: jobKeySql(sql, TASKS.webhookFanout, sql`event.id`),
        traceparent: e.traceparent,
      })}).id::text as id
      from event
      where exists (select 1 from webhooks
        where workspace_id = ${e.workspaceId}
          ${!e.environmentId ? sql`` : sql`and environment_id = ${e.environmentId}`}
          and status = 'active' and deleted_at is null and ${e.type} = any(event_types))
    )`

/**
 * Appends an event to the outbox and enqueues its fan-out job when subscribed, in ONE
 * statement on the caller's connection (docs/decisions/performance.md: one round trip per event instead of two).
 */
export const appendToOutbox = (e: OutboxRow) =>
  SqlClient.SqlClient.use((sql) => sql`with ${outboxCtes(sql, e)} select count(*)::int as jobs from fanout`)

/**
 * The webhook fan-out jobs of many events in one statement (the condition and job key of
 * `outboxCtes`, per event): a user import batch enqueues the fan-outs of its `user.created`
 * events at once (`Events.emitMany`).
 */
export const enqueueFanoutsIfSubscribed = (
  events: ReadonlyArray<{
    eventId: string
    workspaceId: string
    environmentId: string | null
    type: string
    runAt: Date
  }>,
) =>
  events.length === 0
    ? Effect.void
    : Effect.flatMap(currentTraceparent, (traceparent) =>
        SqlClient.SqlClient.use(
          (sql) => sql`select (${addJobCall(sql, TASKS.webhookFanout, {
            payload: sql`json_build_object('eventId', v.event_id)`,
            runAt: sql`v.run_at`,
            jobKey: jobKeySql(sql, TASKS.webhookFanout, sql`v.event_id`),
            traceparent,
          })}).id::text as id
    from jsonb_to_recordset(${JSON.stringify(
      events.map((e) => ({
        event_id: e.eventId,
        workspace_id: e.workspaceId,
        environment_id: e.environmentId,
        type: e.type,
        run_at: e.runAt,
      })),
    )}::jsonb) as v(event_id text, workspace_id text, environment_id text, type text, run_at timestamptz)
    where exists (select 1 from webhooks w
      where w.workspace_id = v.workspace_id and (v.environment_id is null or w.environment_id = v.environment_id)
        and w.status = 'active' and w.deleted_at is null and v.type = any(w.event_types))
    order by v.run_at, v.event_id`,
        ),
      ).pipe(Effect.asVoid)
