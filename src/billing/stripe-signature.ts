import { createHmac, timingSafeEqual } from "node:crypto"

/**
 * Checks a `Stripe-Signature` header as Stripe documents it ("Verify webhook signatures
 * manually"): `t=<unix seconds>` and one or more `v1=<hex HMAC-SHA256 of "t.body">` with the
 * endpoint secret; any matching `v1` passes, compared in constant time; a timestamp older than
 * `toleranceSeconds` is refused (a replayed delivery). Returns the reason for a refusal, or
 * undefined. test/billing/stripe.test.ts signs with the official package's test helper.
 */
export const stripeSignatureProblem = (
  rawBody: string,
  header: string | undefined,
  secret: string,
  toleranceSeconds: number,
  nowMs: number,
): string | undefined => {
  if (header === undefined) return "Stripe-Signature header missing"
  let timestamp: number | undefined
  const signatures: Array<Buffer> = []
  for (const item of header.split(",")) {
    const at = item.indexOf("=")
    const key = item.slice(0, at).trim()
    const value = item.slice(at + 1).trim()
    if (key === "t" && /^\d{1,12}$/.test(value)) timestamp = Number(value)
    if (key === "v1" && /^[0-9a-f]{64}$/.test(value)) signatures.push(Buffer.from(value, "hex"))
  }
  if (timestamp === undefined || signatures.length === 0)
    return "Unable to extract timestamp and signatures from header"
  const expected = createHmac("sha256", secret).update(`${timestamp}.${rawBody}`, "utf8").digest()
  if (!signatures.some((s) => timingSafeEqual(s, expected)))
    return "No signatures found matching the expected signature for payload"
  if (Math.floor(nowMs / 1000) - timestamp > toleranceSeconds) return "Timestamp outside the tolerance zone"
  return undefined
}
