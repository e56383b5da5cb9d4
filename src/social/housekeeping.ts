import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { withCallSpan } from "../platform/observability/span.js"

/** Used or expired states are kept a day for investigation (as login transactions), then deleted. */
export const SOCIAL_STATE_RETENTION_MS = 24 * 3600_000

/**
 * Social login's share of housekeeping: states a day past their expiry are deleted (those
 * of login transactions also go with their transaction, by cascade).
 */
export const sweepSocial = Effect.fnUntraced(
  function* (now: Date) {
    const sql = yield* SqlClient.SqlClient
    const before = new Date(now.getTime() - SOCIAL_STATE_RETENTION_MS)
    return (yield* sql<{ id: string }>`delete from social_states where expires_at < ${before} returning id`).length
  },
  Effect.orDie,
  withCallSpan("social.sweep"),
)
