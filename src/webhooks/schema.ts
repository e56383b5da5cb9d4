import { Schema } from "effect"
import { PageQuery } from "../management/conventions/pagination.js"

// The wire of the Webhooks routes (spec: Management API, Webhooks; Resources, Webhook and
// Webhook delivery record). Request schemas decode; the same schemas document the routes.

export const WebhookParams = Schema.Struct({ webhookId: Schema.String })

export const ListWebhooksQuery = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  ...PageQuery,
})

export const CreateWebhookBody = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  url: Schema.String,
  event_types: Schema.Array(Schema.String),
})

export const WebhookStatus = Schema.Literals(["active", "disabled"])

export const UpdateWebhookBody = Schema.Struct({
  url: Schema.optionalKey(Schema.String),
  event_types: Schema.optionalKey(Schema.Array(Schema.String)),
  status: Schema.optionalKey(WebhookStatus),
})

export const TestWebhookBody = Schema.Struct({
  event_type: Schema.optionalKey(Schema.String),
})

export const DeliveryStatus = Schema.Literals(["pending", "delivered", "failed", "exhausted"])

export const ListDeliveriesQuery = Schema.Struct({
  status: Schema.optionalKey(DeliveryStatus),
  occurred_after: Schema.optionalKey(Schema.String),
  occurred_before: Schema.optionalKey(Schema.String),
  ...PageQuery,
})

export const Webhook = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  url: Schema.String,
  event_types: Schema.Array(Schema.String),
  status: WebhookStatus,
  created_at: Schema.String,
  updated_at: Schema.String,
})

/** Create returns the secret, once. */
export const CreatedWebhook = Schema.Struct({ ...Webhook.fields, secret: Schema.String })

export const WebhookList = Schema.Struct({ data: Schema.Array(Webhook), next_cursor: Schema.NullOr(Schema.String) })

export const RotatedSecret = Schema.Struct({ id: Schema.String, secret: Schema.String, rotated_at: Schema.String })

export const DeletedWebhook = Schema.Struct({ id: Schema.String, deleted: Schema.Literal(true) })

export const TestResult = Schema.Struct({
  delivered: Schema.Boolean,
  response_status: Schema.NullOr(Schema.Number),
  response_time_ms: Schema.NullOr(Schema.Number),
  requested_at: Schema.String,
})

export const Delivery = Schema.Struct({
  id: Schema.String,
  webhook_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  attempt: Schema.Number,
  status: DeliveryStatus,
  response_status_code: Schema.NullOr(Schema.Number),
  duration_ms: Schema.NullOr(Schema.Number),
  occurred_at: Schema.String,
})

export const DeliveryList = Schema.Struct({ data: Schema.Array(Delivery), next_cursor: Schema.NullOr(Schema.String) })

export const DeliveryParams = Schema.Struct({ webhookId: Schema.String, deliveryId: Schema.String })

// Extensions of the spec's delivery record (docs/decisions/events-and-webhooks.md, "Attempt request
// and response"): served only by the one-attempt route, so the list keeps the spec's fields exactly.

const Headers = Schema.Record(Schema.String, Schema.String)

/** The request an attempt sent, as sent: the signature header included, never the secret. */
export const AttemptRequest = Schema.Struct({
  url: Schema.String,
  method: Schema.Literal("POST"),
  headers: Headers,
  /** The signed envelope, byte for byte; null once the event left the outbox (30 days). */
  body: Schema.NullOr(Schema.String),
})

/** The HTTP response an attempt got; headers and body are null once cleared (30 days). */
export const AttemptResponse = Schema.Struct({
  status_code: Schema.Number,
  headers: Schema.NullOr(Headers),
  body: Schema.NullOr(Schema.String),
  /** The receiver sent more than the 4 KiB kept (or its body was cut short). */
  body_truncated: Schema.Boolean,
  duration_ms: Schema.NullOr(Schema.Number),
})

export const TransportErrorCode = Schema.Literals([
  "timeout",
  "connection_refused",
  "connection_reset",
  "dns_failure",
  "tls_error",
  "blocked_address",
  "connection_failed",
])

/** Why an attempt got no HTTP response. */
export const AttemptTransportError = Schema.Struct({ code: TransportErrorCode, message: Schema.String })

export const DeliveryDetail = Schema.Struct({
  ...Delivery.fields,
  request: Schema.NullOr(AttemptRequest),
  response: Schema.NullOr(AttemptResponse),
  transport_error: Schema.NullOr(AttemptTransportError),
})
