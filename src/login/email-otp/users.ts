import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { liveStateChanged } from "../../platform/live-state-changes.js"
import { Events } from "../../platform/events/service.js"
import type { UserRow } from "../../users/repo.js"

/**
 * A correct code proves the address: an existing user whose email was not yet verified
 * (e.g. created through the Management API) becomes verified, with `user.updated`.
 */
export const markEmailVerified = Effect.fnUntraced(function* (user: UserRow, now: Date) {
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  const rows = yield* sql<{
    id: string
  }>`update users set email_verified = true, updated_at = ${now}, version = version + 1
    where environment_id = ${user.environment_id} and id = ${user.id} and email_verified = false
    returning id`
  if (rows.length === 0) return
  liveStateChanged(user.environment_id, user.id)
  yield* events.emit({
    type: "user.updated",
    workspaceId: user.workspace_id,
    environmentId: user.environment_id,
    actor: { type: "end_user", id: user.id },
    payload: { userId: user.id, changedFields: ["email_verified"] },
  })
})
