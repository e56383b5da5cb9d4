import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { deleteEndedWindows } from "../rate-limit/repo.js"
import { expireDue } from "./transactions/repo.js"
import { withCallSpan } from "../platform/observability/span.js"

/** Finished transactions and their challenges are kept this long for investigation, then deleted. */
export const LOGIN_RETENTION_MS = 24 * 3600_000

/**
 * Login's share of housekeeping: active transactions past their 10 minutes become
 * `expired` (requests expire them lazily too), ended rate-limit windows are deleted, and
 * transactions with their email challenges are deleted a day after their expiry.
 */
export const sweepLogin = Effect.fnUntraced(
  function* (now: Date) {
    const sql = yield* SqlClient.SqlClient
    const expired = (yield* expireDue(now)).length
    yield* deleteEndedWindows(now)
    const before = new Date(now.getTime() - LOGIN_RETENTION_MS)
    const deleted = yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`delete from email_challenges where transaction_id in (select id from auth_transactions where expires_at < ${before})`
        return (yield* sql<{ id: string }>`delete from auth_transactions where expires_at < ${before} returning id`)
          .length
      }),
    )
    return { expired, deleted }
  },
  Effect.orDie,
  withCallSpan("login.sweep"),
)
