import { Schema } from "effect"

// Wire of the billing routes (spec: "Other Management routes": POST /billing/checkout-session
// `success_url`, `cancel_url` (HTTPS), returns `checkout_url`, `expires_at`; POST
// /billing/portal-session `return_url` (HTTPS), returns `portal_url`).

const HttpsUrl = Schema.String.check(Schema.isMaxLength(2048))

export const CheckoutSessionBody = Schema.Struct({
  success_url: HttpsUrl,
  cancel_url: HttpsUrl,
  /** Optional; must equal the authenticated Workspace (Management common rule 5). */
  workspace_id: Schema.optionalKey(Schema.String),
})

export const CheckoutSession = Schema.Struct({
  checkout_url: Schema.String,
  /** ISO 8601 UTC: when the checkout page stops accepting payment. */
  expires_at: Schema.String,
})

export const PortalSessionBody = Schema.Struct({
  return_url: HttpsUrl,
  workspace_id: Schema.optionalKey(Schema.String),
})

export const PortalSession = Schema.Struct({
  portal_url: Schema.String,
})

/** The Workspace's subscription as shown in GET /usage/mau (`billing`). */
export const BillingState = Schema.Struct({
  status: Schema.Literals([
    "not_configured",
    "no_subscription",
    "active",
    "past_due",
    "incomplete",
    "paused",
    "canceled",
  ]),
  subscription_id: Schema.NullOr(Schema.String),
  /** The first payment failure not yet made good (past_due only). */
  past_due_since: Schema.NullOr(Schema.String),
  /** past_due_since + 7 days (decisions, "Billing grace period"). */
  grace_period_ends_at: Schema.NullOr(Schema.String),
  grace_period_ended: Schema.Boolean,
})
export type BillingState = typeof BillingState.Type
