import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRequest, Unauthorized } from "../http/errors.js"
import { Audit } from "../platform/audit.js"
import { Config } from "../platform/config.js"
import { Crypto, constantTimeEqual } from "../platform/crypto.js"
import { Events } from "../platform/events/service.js"
import { normalizeEmail } from "../users/repo.js"
import { DELIVERY_ID_HEADER } from "./deliveries.js"
import { BounceIntakeDisabled, BounceSourceRejected, DeliveryNotFound } from "./errors.js"
import { recipientHashes } from "./recipient.js"
import * as repo from "./repo.js"
import { SesNotification } from "./schema.js"
import { confirmSubscription, type SnsMessage, verifySnsMessage } from "./sns.js"
import { withCallSpan } from "../platform/observability/span.js"

export interface Bounce {
  /** How the report names our delivery, most specific first: the first one we know is it. */
  readonly refs: ReadonlyArray<repo.DeliveryRef>
  readonly recipient: string
  readonly bounceType: "hard" | "soft"
  readonly source: "generic" | "ses"
}

export type BounceOutcome =
  | { readonly matched: false }
  | { readonly matched: true; readonly deliveryId: string; readonly duplicate: boolean; readonly suppressed: boolean }

/**
 * Records one bounce of one of our deliveries (decisions, "Bounces"): the delivery (by id or
 * Message-ID) ties it to its Environment, and the bounced address must be that delivery's
 * recipient (by its HMAC), so nobody can suppress an address with another mail's id. Once per
 * delivery and type, in one transaction: a hard bounce suppresses the address for Email OTP
 * (registered or not), `email.delivery.bounced` is emitted (recipientHash, never the address)
 * and the bounce is audited. A repeated report changes nothing.
 */
export const recordBounce = Effect.fnUntraced(function* (bounce: Bounce) {
  const sql = yield* SqlClient.SqlClient
  const _crypto = yield* Crypto
  const events = yield* Events
  const audit = yield* Audit
  let delivery: repo.DeliveryRow | undefined
  for (const ref of bounce.refs) {
    delivery = yield* repo.findDelivery(ref)
    if (delivery !== undefined) break
  }
  if (delivery === undefined) return { matched: false } satisfies BounceOutcome
  // The delivery may have been recorded under an earlier hash of the address (./recipient.ts);
  // what is recorded from now on carries the current one.
  const hashes = yield* recipientHashes(delivery.workspace_id, bounce.recipient)
  if (!hashes.all.map((h) => constantTimeEqual(h, delivery.recipient_hash)).includes(true))
    return { matched: false } satisfies BounceOutcome
  const hash = hashes.current
  const now = new Date(yield* Clock.currentTimeMillis)
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const fresh = yield* repo.insertBounce({
        deliveryId: delivery.id,
        bounceType: bounce.bounceType,
        source: bounce.source,
        now,
      })
      const suppressed = bounce.bounceType === "hard"
      if (!fresh) return { matched: true, deliveryId: delivery.id, duplicate: true, suppressed } satisfies BounceOutcome
      const users = suppressed
        ? yield* repo.suppress({
            environmentId: delivery.environment_id,
            recipientHash: hash,
            deliveryId: delivery.id,
            emailNormalized: normalizeEmail(bounce.recipient),
            now,
          })
        : []
      yield* events.emit({
        type: "email.delivery.bounced",
        workspaceId: delivery.workspace_id,
        environmentId: delivery.environment_id,
        actor: { type: "system" },
        payload: {
          deliveryId: delivery.id,
          recipientHash: hash,
          messageId: delivery.message_id,
          bounceType: bounce.bounceType,
        },
      })
      yield* audit.append({
        workspaceId: delivery.workspace_id,
        environmentId: delivery.environment_id,
        actor: { type: "system" },
        action: "email.bounced",
        subjectType: "mail_delivery",
        subjectId: delivery.id,
        details: { bounce_type: bounce.bounceType, source: bounce.source, suppressed, suppressed_user_ids: users },
      })
      return { matched: true, deliveryId: delivery.id, duplicate: false, suppressed } satisfies BounceOutcome
    }),
  )
}, withCallSpan("bounces.recordBounce"))

/**
 * SES intake exists only when BOUNCE_SNS_TOPIC_ARNS names its topics (or `*` in development):
 * otherwise its route answers 404 before reading anything, like the generic route without its
 * secret, and nothing is fetched or confirmed for anyone's topic.
 */
export const requireSesIntake = Effect.gen(function* () {
  const topics = (yield* Config).providers.bounces.snsTopicArns
  if (topics === undefined) return yield* new BounceIntakeDisabled()
  return topics
})

/** The generic JSON form, authenticated by BOUNCE_WEBHOOK_SECRET in `X-Bounce-Secret` (constant time). */
export const authenticateGeneric = Effect.fnUntraced(function* (presented: string | undefined) {
  const config = yield* Config
  const secret = config.providers.bounces.secret
  if (secret === undefined) return yield* new BounceIntakeDisabled()
  if (presented === undefined || !constantTimeEqual(presented, secret)) {
    return yield* new Unauthorized({ detail: "Send the install's bounce secret in X-Bounce-Secret" })
  }
})

export const receiveGeneric = Effect.fnUntraced(function* (body: {
  delivery_id?: string
  message_id?: string
  recipient: string
  bounce_type: "hard" | "soft"
}) {
  if (body.delivery_id === undefined && body.message_id === undefined) {
    return yield* new InvalidRequest({ detail: "Name the delivery: delivery_id or message_id" })
  }
  const outcome = yield* recordBounce({
    refs: body.delivery_id !== undefined ? [{ deliveryId: body.delivery_id }] : [{ messageId: body.message_id! }],
    recipient: body.recipient,
    bounceType: body.bounce_type,
    source: "generic",
  })
  if (!outcome.matched)
    return yield* new DeliveryNotFound({ detail: "No delivery of ours to that recipient has this id" })
  return {
    delivery_id: outcome.deliveryId,
    bounce_type: body.bounce_type,
    duplicate: outcome.duplicate,
    suppressed: outcome.suppressed,
  }
})

const decodeSes = Schema.decodeUnknownEffect(Schema.fromJsonString(SesNotification))

/** SES: Permanent is a hard bounce; Transient and Undetermined are soft. */
const bounceTypeOf = (sesType: string): "hard" | "soft" => (sesType === "Permanent" ? "hard" : "soft")

/**
 * How an SES notification names our delivery (decisions, "Bounces: tying a bounce to an
 * Environment"): our X-Authservice-Delivery-Id header, present only when the identity's
 * notifications include the original headers; else SES's own message id, which the mail job
 * recorded from SES's SMTP reply; else the Message-ID (SES usually replaces ours).
 */
const sesRefs = (mail: SesNotification["mail"]) => {
  const deliveryId = mail.headers?.find((h) => h.name.toLowerCase() === DELIVERY_ID_HEADER.toLowerCase())?.value
  if (deliveryId !== undefined) return { withHeader: true, refs: [{ deliveryId }] }
  const refs: Array<repo.DeliveryRef> = []
  if (mail.messageId !== undefined) refs.push({ providerMessageId: mail.messageId })
  if (mail.commonHeaders?.messageId !== undefined) refs.push({ messageId: mail.commonHeaders.messageId })
  return { withHeader: false, refs }
}

/** Says which SES setting a notification without our header needs, when nothing else matched. */
export const MISSING_HEADERS_WARNING =
  "SES bounce notification without the X-Authservice-Delivery-Id header matched no delivery: " +
  "turn on \"Include original headers\" for the identity's bounce notifications (SES console: the identity's " +
  "Notifications, Feedback notifications; API: SetIdentityHeadersInNotificationsEnabled, NotificationType Bounce)"

/**
 * Amazon SES through SNS: the SNS message is verified (signature, certificate host, topic),
 * a SubscriptionConfirmation is confirmed by visiting its SubscribeURL, and a bounce
 * notification records each bounced recipient of our delivery (found as sesRefs says). A bounce
 * without our header that matched nothing is logged as a warning naming the SES setting.
 * Anything else verified is acknowledged (200), so SNS does not retry it.
 */
export const receiveSns = Effect.fnUntraced(function* (message: SnsMessage) {
  const config = yield* Config
  const snsUrlPrefix = config.providers.bounces.snsUrlPrefix
  const snsTopicArns = yield* requireSesIntake
  if (snsTopicArns !== "any" && !snsTopicArns.includes(message.TopicArn)) {
    return yield* new BounceSourceRejected({ detail: "The SNS topic is not in BOUNCE_SNS_TOPIC_ARNS" })
  }
  yield* verifySnsMessage(message, snsUrlPrefix)
  if (message.Type === "SubscriptionConfirmation") {
    yield* confirmSubscription(message, snsUrlPrefix)
    yield* Effect.logInfo("confirmed an SNS subscription for bounces", { topic_arn: message.TopicArn })
    return { type: message.Type, processed: 0 }
  }
  if (message.Type !== "Notification") return { type: message.Type, processed: 0 }
  const ses = yield* decodeSes(message.Message).pipe(Effect.option)
  if (ses._tag === "None") return { type: message.Type, processed: 0 }
  const n = ses.value
  if ((n.notificationType ?? n.eventType) !== "Bounce" || n.bounce === undefined)
    return { type: message.Type, processed: 0 }
  const { withHeader, refs } = sesRefs(n.mail)
  let processed = 0
  let matched = false
  for (const r of n.bounce.bouncedRecipients) {
    const outcome = yield* recordBounce({
      refs,
      recipient: r.emailAddress,
      bounceType: bounceTypeOf(n.bounce.bounceType),
      source: "ses",
    })
    matched ||= outcome.matched
    if (outcome.matched && !outcome.duplicate) processed += 1
  }
  if (!withHeader && !matched) {
    yield* Effect.logWarning(MISSING_HEADERS_WARNING, {
      topic_arn: message.TopicArn,
      ses_message_id: n.mail.messageId ?? null,
    })
  }
  return { type: message.Type, processed }
})
