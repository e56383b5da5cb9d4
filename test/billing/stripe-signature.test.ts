import Stripe from "stripe"
import { describe, expect, it } from "vitest"
import { stripeForm } from "../../src/billing/stripe-api.js"
import { stripeSignatureProblem } from "../../src/billing/stripe-signature.js"

// The hand-written Stripe pieces (src/billing/stripe-api.ts, stripe-signature.ts) against the
// official package: headers signed by its test helper, parameters encoded as it encodes them.

const SECRET = "whsec_test_secret"
const NOW = 1_790_000_000_000
const body = JSON.stringify({ id: "evt_1", type: "invoice.paid", data: { object: {} } })
const signed = (payload = body, secret = SECRET, timestamp = NOW / 1000) =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp })

describe("Stripe-Signature", () => {
  it("accepts the official signer's header, and one good v1 among several (a secret being rolled)", () => {
    expect(stripeSignatureProblem(body, signed(), SECRET, 300, NOW)).toBeUndefined()
    const good = /v1=([0-9a-f]{64})/.exec(signed())![1]
    const header = `t=${NOW / 1000},v1=${"0".repeat(64)},v0=abc,v1=${good}`
    expect(stripeSignatureProblem(body, header, SECRET, 300, NOW)).toBeUndefined()
  })

  it("refuses a missing or malformed header, another secret, a changed body and an old timestamp", () => {
    expect(stripeSignatureProblem(body, undefined, SECRET, 300, NOW)).toBe("Stripe-Signature header missing")
    for (const header of ["", "t=abc,v1=00", `v1=${"0".repeat(64)}`, `t=${NOW / 1000}`, `t=${NOW / 1000},v1=xyz`])
      expect(stripeSignatureProblem(body, header, SECRET, 300, NOW), header).toBe(
        "Unable to extract timestamp and signatures from header",
      )
    expect(stripeSignatureProblem(body, signed(body, "whsec_other"), SECRET, 300, NOW)).toBe(
      "No signatures found matching the expected signature for payload",
    )
    expect(stripeSignatureProblem(`${body} `, signed(), SECRET, 300, NOW)).toBe(
      "No signatures found matching the expected signature for payload",
    )
    expect(stripeSignatureProblem(body, signed(body, SECRET, NOW / 1000 - 300), SECRET, 300, NOW)).toBeUndefined()
    expect(stripeSignatureProblem(body, signed(body, SECRET, NOW / 1000 - 301), SECRET, 300, NOW)).toBe(
      "Timestamp outside the tolerance zone",
    )
  })
})

describe("form encoding", () => {
  it("uses Stripe's bracket notation for nested objects and arrays, skipping undefined", () => {
    const form = new URLSearchParams(
      stripeForm({
        mode: "subscription",
        line_items: [{ price: "price_1" }],
        metadata: { workspace_id: "wks_1" },
        subscription_data: { metadata: { workspace_id: "wks_1" } },
        customer: undefined,
      }),
    )
    expect([...form.entries()]).toEqual([
      ["mode", "subscription"],
      ["line_items[0][price]", "price_1"],
      ["metadata[workspace_id]", "wks_1"],
      ["subscription_data[metadata][workspace_id]", "wks_1"],
    ])
  })
})
