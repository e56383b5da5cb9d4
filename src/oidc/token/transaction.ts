import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Login transaction `code_issued` -> `consumed` when its code is exchanged (DESIGN.md
 * decisions; table of sql/0020, owned by the login capability). Conditional, in the
 * exchange's transaction: only a transaction still at `code_issued` moves.
 */
export const markTransactionConsumed = (environmentId: string, transactionId: string) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(yield* Clock.currentTimeMillis)
  yield* sql`update auth_transactions set status = 'consumed', consumed_at = ${now}, updated_at = ${now}
    where environment_id = ${environmentId} and id = ${transactionId} and status = 'code_issued'`
})
