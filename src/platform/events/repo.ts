import { SqlClient, type Statement } from "effect/sql"

export interface OutboxRow {
  readonly eventId: string
  readonly workspaceId: string
  readonly environmentId: string | undefined
  readonly type: string
  /** The validated envelope, serialized. */
  readonly envelope: string
  readonly occurredAt: Date
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
      select (graphile_worker.add_job(
        identifier => 'webhooks.fanout',
        payload => json_build_object('eventId', event.id),
        run_at => ${e.occurredAt}::timestamptz,
        max_attempts => 25,
        job_key => 'webhooks.fanout:' || event.id
      )).id::text as id
      from event
      where exists (select 1 from webhooks
        where workspace_id = ${e.workspaceId}
          ${!e.environmentId ? sql`` : sql`and environment_id = ${e.environmentId}`}
          and status = 'active' and deleted_at is null and ${e.type} = any(event_types))
    )`

/**
 * Appends an event to the outbox and enqueues its fan-out job when subscribed, in ONE
 * statement on the caller's connection (issue 13: one round trip per event instead of two).
 */
export const appendToOutbox = (e: OutboxRow) => SqlClient.SqlClient.use((sql) =>
  sql`with ${outboxCtes(sql, e)} select count(*)::int as jobs from fanout`)
