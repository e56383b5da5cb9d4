import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * Housekeeping: deletes idempotency records past their 24 hours (spec, common rule 2;
 * docs/architecture.md: "kept encrypted and for 24 h"). Each holds a sealed response that may carry a
 * secret shown once (API key, client or webhook secret), so it must not outlive its window.
 * A request with an expired key already deletes its own row; this removes the rest.
 */
export const pruneIdempotencyRecords = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(yield* Clock.currentTimeMillis)
  const rows = yield* sql<{
    n: number
  }>`with gone as (delete from idempotency_keys where expires_at <= ${now} returning 1)
    select count(*)::int as n from gone`
  return rows[0]?.n ?? 0
}).pipe(withCallSpan("management.pruneIdempotencyRecords"))
