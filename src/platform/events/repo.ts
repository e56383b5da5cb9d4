import { SqlClient } from "effect/sql"

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
 * Appends an event to the outbox and, when at least one active subscription could want it,
 * enqueues its webhook fan-out job (no job at all for events nobody subscribed to), in ONE
 * statement on the caller's connection (issue 13: one round trip per event instead of two;
 * the data-modifying CTE always runs, the job only for a subscribed type).
 */
export const appendToOutbox = (e: OutboxRow) => SqlClient.SqlClient.use((sql) => sql`with event as (
      insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at)
      values (${e.eventId}, ${e.workspaceId}, ${e.environmentId ?? null}, ${e.type}, ${e.envelope}::jsonb, ${e.occurredAt})
      returning id
    )
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
        and status = 'active' and deleted_at is null and ${e.type} = any(event_types))`)
