import { Clock, Effect } from "effect"
import { billingState } from "../../billing/service.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import {
  billingMonthOf,
  FREE_TIER_MAU,
  GRACE_PERIOD_MS,
  monthBounds,
  THRESHOLD_PERCENTS,
  thresholdMau,
} from "../../usage/limits.js"
import * as repo from "../../usage/repo.js"
import type { MauUsage } from "./schema.js"

/**
 * The MAU report of one Workspace month (optionally narrowed to one Environment). Thresholds
 * come from the rows that emitted `mau.threshold_reached`, so the report and the events
 * agree. Billing state: below the free tier `within_free_tier`; from reaching 100 % a
 * 7-day `grace_period`, then `grace_period_ended` (reported only: a self-hosted install has
 * no payment provider, nothing is blocked).
 */
export const mauReport = Effect.fnUntraced(function* (
  workspaceId: string,
  env: EnvironmentRecord | undefined,
  billingMonth: string | undefined,
) {
  const nowMs = yield* Clock.currentTimeMillis
  const month = billingMonth ?? billingMonthOf(nowMs)
  const { start, end } = monthBounds(month)
  const workspaceMau = yield* repo.workspaceMau(workspaceId, month)
  const mau = env === undefined ? workspaceMau : yield* repo.environmentMau(env.id, month)
  const reached = new Map((yield* repo.thresholdsOf(workspaceId, month)).map((r) => [r.threshold_percent, r]))
  const full = reached.get(100)
  const graceEndsMs = full ? full.reached_at.getTime() + GRACE_PERIOD_MS : undefined
  const report: MauUsage = {
    workspace_id: workspaceId,
    environment_id: env?.id ?? null,
    billing_month: month,
    period_start: start.toISOString(),
    period_end: end.toISOString(),
    mau,
    workspace_mau: workspaceMau,
    free_tier_limit: FREE_TIER_MAU,
    free_tier_remaining: Math.max(0, FREE_TIER_MAU - workspaceMau),
    free_tier_used_percent: Math.round((workspaceMau / FREE_TIER_MAU) * 10_000) / 100,
    thresholds: THRESHOLD_PERCENTS.map((percent) => {
      const row = reached.get(percent)
      return {
        percent,
        mau: thresholdMau(percent),
        reached: row !== undefined,
        reached_at: row?.reached_at.toISOString() ?? null,
      }
    }),
    billing_status:
      graceEndsMs === undefined ? "within_free_tier" : nowMs < graceEndsMs ? "grace_period" : "grace_period_ended",
    grace_period_started_at: full?.reached_at.toISOString() ?? null,
    grace_period_ends_at: graceEndsMs === undefined ? null : new Date(graceEndsMs).toISOString(),
    billing: yield* billingState(workspaceId),
  }
  return report
}, Effect.orDie)
