import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeKey } from "../support/tenancy.js"
import { expectProblem } from "../management/support/problem.js"

// Without STRIPE_* (the default of a self-hosted install) both billing routes answer 501
// billing_not_configured, but only after the scope and body checks; /usage/mau says so.

let app: TestApp
let b: Bootstrapped

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const checkout = (body: unknown, key?: string) =>
  app.management("/v1/billing/checkout-session", { method: "POST", body, ...(key ? { key } : {}) })
const portal = (body: unknown, key?: string) =>
  app.management("/v1/billing/portal-session", { method: "POST", body, ...(key ? { key } : {}) })
const good = { success_url: "https://app.example.com/billing/done", cancel_url: "https://app.example.com/billing" }

describe("billing without a payment provider", () => {
  it("a valid request: 501 billing_not_configured; nothing is recorded", async () => {
    expectProblem(await checkout(good), 501, "billing_not_configured")
    expectProblem(await portal({ return_url: "https://app.example.com/settings" }), 501, "billing_not_configured")
    const rows = await app.run(
      (await import("effect/sql")).SqlClient.SqlClient.use((sql) => sql`select 1 from workspace_billing`),
    )
    expect(rows).toHaveLength(0)
  })

  it("scope first: no key 401, a key without billing:write 403 insufficient_scope (billing:read is not enough), even with a bad body", async () => {
    const res = await app.request(app.config.managementHost, "/v1/billing/checkout-session", {
      method: "POST",
      body: good,
    })
    expectProblem(res, 401, "unauthorized")
    const readOnly = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["billing:read", "usage:read"] })
    expectProblem(await checkout({ nonsense: true }, readOnly), 403, "insufficient_scope")
    expectProblem(await portal({}, readOnly), 403, "insufficient_scope")
  })

  it("then the body: a wrong shape is 400 invalid_request_body, a non-HTTPS URL 400 invalid_request", async () => {
    expectProblem(await checkout({ success_url: good.success_url }), 400, "invalid_request_body")
    expectProblem(await checkout({ ...good, extra: 1 }), 400, "invalid_request_body")
    expectProblem(await checkout({ ...good, cancel_url: 42 }), 400, "invalid_request_body")
    expectProblem(await portal({}), 400, "invalid_request_body")
    for (const url of [
      "http://app.example.com/done",
      "ftp://app.example.com/x",
      "/relative",
      "https://user:pw@app.example.com/x",
      "not a url",
    ]) {
      expectProblem(await checkout({ ...good, success_url: url }), 400, "invalid_request")
      expectProblem(await checkout({ ...good, cancel_url: url }), 400, "invalid_request")
      expectProblem(await portal({ return_url: url }), 400, "invalid_request")
    }
    expectProblem(await checkout({ ...good, workspace_id: "wsp_other" }), 400, "invalid_request")
  })

  it("an Environment-pinned key with billing:write: 403 forbidden (billing belongs to the Workspace)", async () => {
    const pinned = await makeKey(app, {
      workspaceId: b.workspace_id,
      environmentId: b.environment_id,
      scopes: ["billing:write"],
    })
    expectProblem(await checkout(good, pinned), 403, "forbidden")
  })

  it("the Stripe webhook route answers 501 too, and /usage/mau reports billing not_configured", async () => {
    const res = await app.request(app.config.managementHost, "/v1/billing/stripe/webhook", {
      method: "POST",
      body: { id: "evt_1", type: "invoice.payment_failed" },
      headers: { "stripe-signature": "t=1,v1=00" },
    })
    expectProblem(res, 501, "billing_not_configured")
    const usage = await app.management("/v1/usage/mau")
    expect(usage.status).toBe(200)
    expect(usage.json.billing).toEqual({
      status: "not_configured",
      subscription_id: null,
      past_due_since: null,
      grace_period_ends_at: null,
      grace_period_ended: false,
    })
  })
})

describe("billing configuration", () => {
  it("Stripe needs its three variables together; STRIPE_API_BASE is refused in production", async () => {
    const { parseConfig } = await import("../../src/platform/config.js")
    expect(parseConfig({}).providers.stripe).toBeUndefined()
    expect(() => parseConfig({ STRIPE_SECRET_KEY: "sk_test_x", STRIPE_PRICE_ID: "price_x" })).toThrow(
      /STRIPE_WEBHOOK_SECRET/,
    )
    const full = { STRIPE_SECRET_KEY: "sk_test_x", STRIPE_PRICE_ID: "price_x", STRIPE_WEBHOOK_SECRET: "whsec_x" }
    expect(parseConfig(full).providers.stripe).toMatchObject({ priceId: "price_x", apiBase: undefined })
    expect(() => parseConfig({ ...full, STRIPE_API_BASE: "ftp://x" })).toThrow(/STRIPE_API_BASE/)
    const production = {
      NODE_ENV: "production",
      DATABASE_URL: "postgres://db.example/auth",
      MASTER_KEY: Buffer.alloc(32, 1).toString("base64url"),
      PLATFORM_DOMAIN: "auth.example.com",
      CANONICAL_ISSUER_HOST: "id.example.com",
      MANAGEMENT_HOST: "api.example.com",
      ...full,
    }
    expect(parseConfig(production).providers.stripe).toBeDefined()
    expect(() => parseConfig({ ...production, STRIPE_API_BASE: "http://127.0.0.1:1" })).toThrow(
      /refused when NODE_ENV=production/,
    )
  })
})
