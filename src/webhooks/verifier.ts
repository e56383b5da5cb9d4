import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * Webhook receiver verifier (spec: Events, Delivery rules 1-4). A self-contained library
 * for consumers: it depends on nothing but `node:crypto` and can be copied into a
 * receiver as is.
 *
 *   const result = verifyWebhook({ headers: req.headers, rawBody, secrets: [current, previous], now: Date.now() })
 *   if (!result.ok) return res.status(400).send(result.reason)
 *   // deduplicate on result.eventId (delivery is at least once), then JSON.parse(rawBody)
 *
 * - `rawBody` must be the exact bytes (or their UTF-8 text) received: never a re-serialized
 *   JSON object.
 * - `secrets`: one secret, or several during a rotation (the previous one stays valid for
 *   24 hours after `rotate-secret`). Each is used as the UTF-8 string it is (never decoded).
 * - Timestamps more than 300 seconds from `now`, in either direction, are refused; exactly
 *   300 seconds is accepted.
 */

export type VerifyFailureReason =
  | "missing_header"
  | "malformed_timestamp_header"
  | "malformed_signature_header"
  | "timestamp_too_old"
  | "timestamp_in_future"
  | "signature_mismatch"
  | "crypto_operation_failed"

export type VerifyResult =
  | { readonly ok: true; readonly eventId: string; readonly timestampSeconds: number }
  | { readonly ok: false; readonly reason: VerifyFailureReason }

/** Node's `req.headers`, a Fetch `Headers`, or any plain record; names are matched case-insensitively. */
export type HeadersInput =
  | { readonly get: (name: string) => string | null }
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

export interface VerifyInput {
  readonly headers: HeadersInput
  /** The request body exactly as received. */
  readonly rawBody: string | Uint8Array
  readonly secrets: string | ReadonlyArray<string>
  /** The receiver's current time: a Date, or milliseconds since the Unix epoch. */
  readonly now: Date | number
  /** Seconds of clock difference tolerated either way (default 300, the spec's value). */
  readonly toleranceSeconds?: number
}

export const SIGNATURE_TOLERANCE_SECONDS = 300

export const HEADER_EVENT_ID = "x-auth-event-id"
export const HEADER_TIMESTAMP = "x-auth-timestamp"
export const HEADER_SIGNATURE = "x-auth-signature"

const headerValue = (headers: HeadersInput, name: string): string | undefined => {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get: (n: string) => string | null }).get(name) ?? undefined
  }
  for (const [key, value] of Object.entries(headers as Record<string, string | ReadonlyArray<string> | undefined>)) {
    if (key.toLowerCase() !== name) continue
    if (value === undefined) return undefined
    // A repeated header is ambiguous: it is passed on joined and then fails the format check.
    return typeof value === "string" ? value : value.join(", ")
  }
  return undefined
}

const fail = (reason: VerifyFailureReason): VerifyResult => ({ ok: false, reason })

export const verifyWebhook = (input: VerifyInput): VerifyResult => {
  const eventId = headerValue(input.headers, HEADER_EVENT_ID)
  const timestamp = headerValue(input.headers, HEADER_TIMESTAMP)
  const signature = headerValue(input.headers, HEADER_SIGNATURE)
  if (!eventId || !timestamp || !signature) return fail("missing_header")

  // Unix seconds as a decimal string.
  if (!/^\d{1,15}$/.test(timestamp)) return fail("malformed_timestamp_header")
  const timestampSeconds = Number(timestamp)
  // `v1=` + 64 lowercase hex characters (HMAC-SHA256).
  const m = /^v1=([0-9a-f]{64})$/.exec(signature)
  if (!m) return fail("malformed_signature_header")

  const nowSeconds = Math.floor((typeof input.now === "number" ? input.now : input.now.getTime()) / 1000)
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS
  if (!Number.isFinite(nowSeconds)) return fail("crypto_operation_failed")
  if (nowSeconds - timestampSeconds > tolerance) return fail("timestamp_too_old")
  if (timestampSeconds - nowSeconds > tolerance) return fail("timestamp_in_future")

  const secrets = typeof input.secrets === "string" ? [input.secrets] : input.secrets
  try {
    if (secrets.length === 0) return fail("crypto_operation_failed")
    const expected = Buffer.from(m[1]!, "hex")
    const body = typeof input.rawBody === "string" ? Buffer.from(input.rawBody, "utf8") : input.rawBody
    let matched = false
    for (const secret of secrets) {
      if (typeof secret !== "string" || secret.length === 0) return fail("crypto_operation_failed")
      const mac = createHmac("sha256", Buffer.from(secret, "utf8"))
        .update(`${timestamp}.`, "utf8")
        .update(body)
        .digest()
      // Every secret is tried (no early exit), each compared in constant time.
      if (timingSafeEqual(mac, expected)) matched = true
    }
    return matched ? { ok: true, eventId, timestampSeconds } : fail("signature_mismatch")
  } catch {
    return fail("crypto_operation_failed")
  }
}
