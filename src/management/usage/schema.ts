import { Schema } from "effect"
import { BillingState } from "../../billing/schema.js"
import { BILLING_MONTH_PATTERN } from "../../usage/limits.js"

// Wire of GET /v1/usage/mau (spec: "Other Management routes"; Resources "usage": the
// Workspace MAU aggregate, the 30,000 MAU free tier, threshold state and billing/grace-period
// state; field names are ours, docs/decisions/management-api.md).

export const BillingMonth = Schema.String.check(
  Schema.isPattern(BILLING_MONTH_PATTERN, { message: "billing_month must be YYYY-MM (month 01 to 12)" }),
)

export const MauQuery = Schema.Struct({
  billing_month: Schema.optionalKey(BillingMonth),
  environment_id: Schema.optionalKey(Schema.String),
  workspace_id: Schema.optionalKey(Schema.String),
})

export const BillingStatus = Schema.Literals(["within_free_tier", "grace_period", "grace_period_ended"])

export const Threshold = Schema.Struct({
  percent: Schema.Literals([80, 95, 100]),
  /** The Workspace MAU at which the threshold is reached. */
  mau: Schema.Int,
  reached: Schema.Boolean,
  reached_at: Schema.NullOr(Schema.String),
})

export const MauUsage = Schema.Struct({
  workspace_id: Schema.String,
  /** The Environment of `mau` when one was asked for (or the key is pinned), else null. */
  environment_id: Schema.NullOr(Schema.String),
  billing_month: Schema.String,
  period_start: Schema.String,
  period_end: Schema.String,
  /** Distinct active users of the month in the Environment asked for, or in the whole Workspace. */
  mau: Schema.Int,
  /** The Workspace aggregate across its Environments (what the free tier counts). */
  workspace_mau: Schema.Int,
  free_tier_limit: Schema.Int,
  free_tier_remaining: Schema.Int,
  /** workspace_mau as a percentage of the free tier, two decimals. */
  free_tier_used_percent: Schema.Number,
  thresholds: Schema.Array(Threshold),
  billing_status: BillingStatus,
  grace_period_started_at: Schema.NullOr(Schema.String),
  grace_period_ends_at: Schema.NullOr(Schema.String),
  /** The paid subscription (payment provider), apart from the free tier's state above. */
  billing: BillingState,
})
export type MauUsage = typeof MauUsage.Type
