import { Schema } from "effect"

// Failures of the webhooks feature; rendered by the one table in src/http/problems.ts.

/** The URL breaks a Subscription rule (HTTPS, no userinfo/fragment, no localhost, no blocked IP). */
export class InvalidWebhookUrl extends Schema.TaggedError<InvalidWebhookUrl>()("InvalidWebhookUrl", {
  detail: Schema.String,
}) {}

/** `event_types` is empty, names an unknown or unsubscribable type, or repeats one. */
export class InvalidEventTypes extends Schema.TaggedError<InvalidEventTypes>()("InvalidEventTypes", {
  detail: Schema.String,
}) {}

export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", {
  detail: Schema.optionalKey(Schema.String),
}) {}

/** No attempt with this id among the webhook's (another webhook's attempt is not found either). */
export class WebhookDeliveryNotFound extends Schema.TaggedError<WebhookDeliveryNotFound>()("WebhookDeliveryNotFound", {
  detail: Schema.optionalKey(Schema.String),
}) {}
