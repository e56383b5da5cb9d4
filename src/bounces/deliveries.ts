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
export const trackDelivery = (environmentId: string, purpose: string, message: MailMessage) => Effect.gen(function* () {
  const ids = yield* Ids
  const config = yield* Config
  const workspaceId = yield* repo.workspaceOfEnvironment(environmentId)
  if (workspaceId === undefined) return message
  const id = yield* ids.make("dlv")
  const messageId = `<${id}@${config.platformDomain}>`
  yield* repo.insertDelivery({
    id, workspaceId, environmentId, messageId, recipientHash: yield* recipientHash(workspaceId, message.to), purpose,
    now: new Date(yield* Clock.currentTimeMillis),
  })
  return { ...message, messageId, headers: { ...message.headers, [DELIVERY_ID_HEADER]: id } } satisfies MailMessage
})
