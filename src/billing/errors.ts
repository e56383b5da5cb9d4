import { Schema } from "effect"

// Failures of billing; rendered by the one table in src/http/problems.ts.

/** No payment provider is configured (the default of a self-hosted install). */
export class BillingNotConfigured extends Schema.TaggedError<BillingNotConfigured>()("BillingNotConfigured", {}) {}

/** The payment provider could not be reached or refused the request (logged with its cause). */
export class BillingProviderFailed extends Schema.TaggedError<BillingProviderFailed>()("BillingProviderFailed", {
  detail: Schema.String,
}) {}

/** A provider webhook whose signature (or timestamp) does not verify. */
export class BillingWebhookInvalid extends Schema.TaggedError<BillingWebhookInvalid>()("BillingWebhookInvalid", {
  detail: Schema.String,
}) {}
