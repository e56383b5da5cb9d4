import { Schema } from "effect"

// Failures of the bounce intake; rendered by the one table in src/http/problems.ts.

/** The bounce source is not authenticated: wrong or missing secret, or an SNS message that does not verify. */
export class BounceSourceRejected extends Schema.TaggedError<BounceSourceRejected>()("BounceSourceRejected", {
  detail: Schema.String,
}) {}

/** The generic route is off: BOUNCE_WEBHOOK_SECRET is not set. */
export class BounceIntakeDisabled extends Schema.TaggedError<BounceIntakeDisabled>()("BounceIntakeDisabled", {}) {}

/** No delivery of ours matches the bounce (generic form). */
export class DeliveryNotFound extends Schema.TaggedError<DeliveryNotFound>()("DeliveryNotFound", {
  detail: Schema.optionalKey(Schema.String),
}) {}
