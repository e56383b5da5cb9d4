import { Schema } from "effect"

// Accepted bounce formats (README "Bounces"; decisions, "Bounces").

/** The generic JSON form (POST /v1/email-bounces): one bounce of one delivery. */
export const GenericBounce = Schema.Struct({
  /** `dlv_...`: our delivery id (X-Authservice-Delivery-Id), or */
  delivery_id: Schema.optionalKey(Schema.String),
  /** the Message-ID we sent the mail with (`<dlv_...@PLATFORM_DOMAIN>`, brackets optional). */
  message_id: Schema.optionalKey(Schema.String),
  /** The bounced address: it must be the delivery's recipient. */
  recipient: Schema.String.check(Schema.isMinLength(3), Schema.isMaxLength(254)),
  bounce_type: Schema.Literals(["hard", "soft"]),
})

export const BounceReceipt = Schema.Struct({
  delivery_id: Schema.String,
  bounce_type: Schema.Literals(["hard", "soft"]),
  /** The same bounce was reported before: nothing changed. */
  duplicate: Schema.Boolean,
  /** The address is suppressed for Email OTP (hard bounces). */
  suppressed: Schema.Boolean,
})

export const SnsReceipt = Schema.Struct({
  type: Schema.String,
  /** Bounces of our deliveries that were recorded (0 for anything else). */
  processed: Schema.Int,
})

const Header = Schema.Struct({ name: Schema.String, value: Schema.String })

/** Amazon SES bounce notification (SNS notification or event publishing), the parts we read. */
export const SesNotification = Schema.Struct({
  notificationType: Schema.optionalKey(Schema.String),
  eventType: Schema.optionalKey(Schema.String),
  bounce: Schema.optionalKey(
    Schema.Struct({
      bounceType: Schema.String,
      bouncedRecipients: Schema.Array(Schema.Struct({ emailAddress: Schema.String })),
    }),
  ),
  mail: Schema.Struct({
    messageId: Schema.optionalKey(Schema.String),
    headers: Schema.optionalKey(Schema.Array(Header)),
    commonHeaders: Schema.optionalKey(Schema.Struct({ messageId: Schema.optionalKey(Schema.String) })),
  }),
})
export type SesNotification = typeof SesNotification.Type
