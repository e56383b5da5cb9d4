import { Clock, Effect } from "effect"
import { Config } from "../platform/config.js"
import { Ids } from "../platform/ids.js"
import type { MailMessage } from "../platform/mailer.js"
import { recipientHash } from "./recipient.js"
import * as repo from "./repo.js"

/** The header that carries the delivery id, besides the Message-ID (some providers rewrite the latter). */
export const DELIVERY_ID_HEADER = "X-Authservice-Delivery-Id"

/**
 * Records an outgoing mail of an Environment before it is sent and returns the message with
 * its delivery id in the Message-ID and a header: a bounce that names either is tied to this
 * Environment (decisions, "Bounces"). A send that fails leaves an unused record; a retry
 * makes a new one.
 */
export const trackDelivery = Effect.fnUntraced(function* (
  environmentId: string,
  purpose: string,
  message: MailMessage,
) {
  const ids = yield* Ids
  const config = yield* Config
  const workspaceId = yield* repo.workspaceOfEnvironment(environmentId)
  if (workspaceId === undefined) return message
  const id = yield* ids.make("dlv")
  const messageId = `<${id}@${config.platformDomain}>`
  yield* repo.insertDelivery({
    id,
    workspaceId,
    environmentId,
    messageId,
    recipientHash: yield* recipientHash(workspaceId, message.to),
    purpose,
    now: new Date(yield* Clock.currentTimeMillis),
  })
  return { ...message, messageId, headers: { ...message.headers, [DELIVERY_ID_HEADER]: id } } satisfies MailMessage
})

/**
 * Amazon SES's SMTP interface accepts a mail with `250 Ok <message id>`, the id its bounce
 * notifications carry as `mail.messageId` (whatever it did to the Message-ID header).
 */
const SES_ACCEPTED = /^250[ -]Ok ([0-9A-Za-z][0-9A-Za-z-]{7,127})\s*$/

/** The provider's message id in an SMTP reply, when the reply is Amazon SES's; else undefined. */
export const providerMessageIdOf = (response: string | undefined) =>
  response === undefined ? undefined : SES_ACCEPTED.exec(response)?.[1]

/**
 * After the send: records the provider's message id of a tracked delivery when its SMTP reply
 * names one (Amazon SES), so an SES bounce without our headers still finds the delivery.
 */
export const recordProviderReply = Effect.fnUntraced(function* (message: MailMessage, response: string | undefined) {
  const deliveryId = message.headers?.[DELIVERY_ID_HEADER]
  const providerMessageId = providerMessageIdOf(response)
  if (deliveryId !== undefined && providerMessageId !== undefined)
    yield* repo.setProviderMessageId(deliveryId, providerMessageId)
})
