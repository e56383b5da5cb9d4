import { createHmac, type KeyObject } from "node:crypto"

/**
 * The delivery signature (spec: Events, Delivery rule 1): `v1=` + lowercase hex of
 * HMAC-SHA256(secret, timestamp + "." + raw body). The secret is the base64url text used
 * as a UTF-8 string, never decoded (Subscription rule 3): the text, or a key of its bytes.
 */
export const signatureOf = (secret: string | KeyObject, timestampSeconds: number, rawBody: string): string =>
  `v1=${createHmac("sha256", typeof secret === "string" ? Buffer.from(secret, "utf8") : secret)
    .update(`${timestampSeconds}.${rawBody}`, "utf8")
    .digest("hex")}`

/** The headers of one delivery (names are case-insensitive on the wire). */
export const deliveryHeaders = (input: {
  readonly eventId: string
  readonly timestampSeconds: number
  readonly signature: string
}) => ({
  "content-type": "application/json",
  "user-agent": "authservice-webhooks/1",
  "x-auth-event-id": input.eventId,
  "x-auth-timestamp": String(input.timestampSeconds),
  "x-auth-signature": input.signature,
})
