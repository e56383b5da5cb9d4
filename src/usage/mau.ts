import { Clock, Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { Events } from "../platform/events/service.js"
import { billingMonthOf, FREE_TIER_MAU, reachedThresholds } from "./limits.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../platform/observability/span.js"

export interface MonthlyActiveUser {
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
}

/**
 * Counts a user as active in the current UTC billing month, in the CALLER's SQL transaction
 * (login completion, refresh): the count exists exactly when the login commits.
 * Idempotent: only the user's first activity of the month counts. The Workspace counter's
 * row lock serialises concurrent first logins, so the transaction that brings the total to
 * 80, 95 or 100 % of the free tier sees it; the unique (Workspace, month, threshold) row
 * then makes `mau.threshold_reached` exactly once (spec: Events; Limits "Free tier").
 */
export const recordMonthlyActiveUser = (input: MonthlyActiveUser) =>
  Effect.gen(function* () {
    const events = yield* Events
    const nowMs = yield* Clock.currentTimeMillis
    const at = new Date(nowMs)
    const billingMonth = billingMonthOf(nowMs)
    const isNew = yield* repo.insertMonthlyUser({ ...input, billingMonth, at })
    if (!isNew) return
    const currentMau = yield* repo.incrementWorkspaceMau(input.workspaceId, billingMonth)
    for (const percent of reachedThresholds(currentMau)) {
      const claimed = yield* repo.claimThreshold({
        workspaceId: input.workspaceId,
        billingMonth,
        percent,
        currentMau,
        freeTierLimit: FREE_TIER_MAU,
        at,
      })
      if (!claimed) continue
      // A Workspace-level event (no environmentId): every subscribed webhook of the Workspace gets it.
      yield* events.emit({
        type: "mau.threshold_reached",
        workspaceId: input.workspaceId,
        actor: { type: "system" },
        payload: { billingMonth, thresholdPercent: percent, currentMau, freeTierLimit: FREE_TIER_MAU },
      })
    }
  }).pipe(Effect.orDie, withCallSpan("usage.recordMonthlyActiveUser")) as Effect.Effect<
    void,
    never,
    SqlClient.SqlClient | Events
  >
