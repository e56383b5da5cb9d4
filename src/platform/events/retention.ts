import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { jobKeySql, TASKS } from "../jobs.js"
import { withCallSpan } from "../observability/span.js"

/**
 * How long an outbox event is kept (decisions, "Outbox retention"). Delivery history
 * (webhook_deliveries, 90 days) keeps its own `event_type` and never needs the envelope once
 * settled; retries of one event end within about 8 hours (spec, Delivery 7).
 */
export const OUTBOX_RETENTION_MS = 30 * 24 * 3600_000

/**
 * Deletes outbox events older than the retention period, except those undelivered fan-out
 * still reads: an event whose `webhooks.fanout` job is still queued (the workers were down),
 * or with an attempt that is `pending` (scheduled or in flight) or `failed` (a retry is due).
 * Those go on a later run, once settled.
 */
export const pruneOutbox = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const cutoff = new Date((yield* Clock.currentTimeMillis) - OUTBOX_RETENTION_MS)
  const rows = yield* sql<{ n: number }>`with gone as (
      delete from event_outbox e
      where e.occurred_at < ${cutoff}
        and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status in ('pending', 'failed'))
        and not exists (select 1 from graphile_worker.jobs j where j.key = ${jobKeySql(sql, TASKS.webhookFanout, sql`e.id`)})
      returning 1)
    select count(*)::int as n from gone`
  return rows[0]?.n ?? 0
}).pipe(withCallSpan("events.pruneOutbox"))
