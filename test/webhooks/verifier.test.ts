import { createHmac } from "node:crypto"
import { describe, expect, it } from "vitest"
import { signatureOf } from "../../src/webhooks/delivery/signing.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"

// Spec, Events, Delivery rules 1-4: headers are case-insensitive; 300 s tolerance either way
// (exactly 300 accepted); several secrets; the seven failure reasons.

const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I" // used as text, never decoded
const other = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3Q"
const body =
  '{"eventId":"evt_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","payload":{"name":"Zoë"},"type":"user.updated","version":1}'
const ts = 1_760_000_000
const now = ts * 1000
const eventId = "evt_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

const independentSignature = (key: string, t: number | string, raw: string) =>
  `v1=${createHmac("sha256", key).update(`${t}.${raw}`).digest("hex")}`

const headers = (overrides: Record<string, string | undefined> = {}) => {
  const h: Record<string, string> = {
    "X-Auth-Event-Id": eventId,
    "X-Auth-Timestamp": String(ts),
    "X-Auth-Signature": independentSignature(secret, ts, body),
  }
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete h[k]
    else h[k] = v
  }
  return h
}

describe("verifyWebhook", () => {
  it("the service's signature equals an independent node:crypto HMAC over timestamp.body", () => {
    expect(signatureOf(secret, ts, body)).toBe(independentSignature(secret, ts, body))
    expect(signatureOf(secret, ts, body)).toMatch(/^v1=[0-9a-f]{64}$/)
  })

  it("accepts a valid delivery and returns eventId and timestampSeconds", () => {
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: secret, now })).toEqual({
      ok: true,
      eventId,
      timestampSeconds: ts,
    })
  })

  it("matches header names case-insensitively (node req.headers, Fetch Headers, any casing)", () => {
    const lower = Object.fromEntries(Object.entries(headers()).map(([k, v]) => [k.toLowerCase(), v]))
    const upper = Object.fromEntries(Object.entries(headers()).map(([k, v]) => [k.toUpperCase(), v]))
    expect(verifyWebhook({ headers: lower, rawBody: body, secrets: secret, now }).ok).toBe(true)
    expect(verifyWebhook({ headers: upper, rawBody: body, secrets: secret, now }).ok).toBe(true)
    expect(verifyWebhook({ headers: new Headers(headers()), rawBody: body, secrets: secret, now }).ok).toBe(true)
  })

  it("accepts the raw body as bytes, and a Date as now", () => {
    expect(
      verifyWebhook({ headers: headers(), rawBody: Buffer.from(body, "utf8"), secrets: secret, now: new Date(now) }).ok,
    ).toBe(true)
  })

  it("tries several secrets (rotation overlap): either the current or the previous one verifies", () => {
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [other, secret], now }).ok).toBe(true)
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [secret, other], now }).ok).toBe(true)
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [other], now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  it("uses the secret as a UTF-8 string, never base64url-decoded", () => {
    const decodedKeySig = `v1=${createHmac("sha256", Buffer.from(secret, "base64url")).update(`${ts}.${body}`).digest("hex")}`
    expect(
      verifyWebhook({ headers: headers({ "X-Auth-Signature": decodedKeySig }), rawBody: body, secrets: secret, now }),
    ).toEqual({ ok: false, reason: "signature_mismatch" })
  })

  it("a re-serialized body does not verify (the raw body must be used untouched)", () => {
    const reserialized = JSON.stringify(JSON.parse(body), null, 2)
    expect(verifyWebhook({ headers: headers(), rawBody: reserialized, secrets: secret, now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  it("300 seconds either way is accepted; 301 is refused as too old / in the future", () => {
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: secret, now: now + 300_000 }).ok).toBe(true)
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: secret, now: now - 300_000 }).ok).toBe(true)
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: secret, now: now + 301_000 })).toEqual({
      ok: false,
      reason: "timestamp_too_old",
    })
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: secret, now: now - 301_000 })).toEqual({
      ok: false,
      reason: "timestamp_in_future",
    })
  })

  it.each(["X-Auth-Event-Id", "X-Auth-Timestamp", "X-Auth-Signature"])("missing %s -> missing_header", (name) => {
    expect(verifyWebhook({ headers: headers({ [name]: undefined }), rawBody: body, secrets: secret, now })).toEqual({
      ok: false,
      reason: "missing_header",
    })
    expect(verifyWebhook({ headers: headers({ [name]: "" }), rawBody: body, secrets: secret, now })).toEqual({
      ok: false,
      reason: "missing_header",
    })
  })

  it.each(["abc", "-1", "1.5", "1e9", " 1760000000", "17600000000000000", "0x68"])(
    "timestamp %j -> malformed_timestamp_header",
    (value) => {
      expect(
        verifyWebhook({ headers: headers({ "X-Auth-Timestamp": value }), rawBody: body, secrets: secret, now }),
      ).toEqual({ ok: false, reason: "malformed_timestamp_header" })
    },
  )

  it.each([
    "abcdef",
    "v1=",
    "v2=" + "a".repeat(64),
    "v1=" + "a".repeat(63),
    "v1=" + "A".repeat(64),
    "v1=" + "g".repeat(64),
    "sha256=" + "a".repeat(64),
    `v1=${"a".repeat(64)}, v1=${"b".repeat(64)}`,
  ])("signature %j -> malformed_signature_header", (value) => {
    expect(
      verifyWebhook({ headers: headers({ "X-Auth-Signature": value }), rawBody: body, secrets: secret, now }),
    ).toEqual({ ok: false, reason: "malformed_signature_header" })
  })

  it("a signature made for another timestamp does not verify", () => {
    const h = headers({ "X-Auth-Timestamp": String(ts + 1) })
    expect(verifyWebhook({ headers: h, rawBody: body, secrets: secret, now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  it("no usable secret -> crypto_operation_failed", () => {
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [], now })).toEqual({
      ok: false,
      reason: "crypto_operation_failed",
    })
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [""], now })).toEqual({
      ok: false,
      reason: "crypto_operation_failed",
    })
    expect(verifyWebhook({ headers: headers(), rawBody: body, secrets: [42 as unknown as string], now })).toEqual({
      ok: false,
      reason: "crypto_operation_failed",
    })
  })

  it("checks in the spec's order: a missing header wins over a bad timestamp, format over age, age over signature", () => {
    expect(
      verifyWebhook({
        headers: headers({ "X-Auth-Event-Id": undefined, "X-Auth-Timestamp": "x" }),
        rawBody: body,
        secrets: secret,
        now,
      }),
    ).toEqual({ ok: false, reason: "missing_header" })
    expect(
      verifyWebhook({
        headers: headers({ "X-Auth-Timestamp": "x", "X-Auth-Signature": "bad" }),
        rawBody: body,
        secrets: secret,
        now,
      }),
    ).toEqual({ ok: false, reason: "malformed_timestamp_header" })
    expect(
      verifyWebhook({
        headers: headers({ "X-Auth-Signature": `v1=${"0".repeat(64)}` }),
        rawBody: body,
        secrets: secret,
        now: now + 10 * 60_000,
      }),
    ).toEqual({ ok: false, reason: "timestamp_too_old" })
  })
})
