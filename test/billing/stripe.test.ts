import Stripe from "stripe"
import { STRIPE_API_VERSION } from "../../src/billing/stripe-api.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeKey } from "../support/tenancy.js"
import { expectProblem } from "../management/support/problem.js"
import { type FakeStripe, startFakeStripe } from "./fake-stripe.js"

// Billing with the Stripe implementation: the official `stripe` package pointed at a local
// server speaking Stripe's API (STRIPE_API_BASE), and Stripe webhooks signed with the
// package's own test helper (generateTestHeaderString).

const SECRET_KEY = "sk_test_authservice"
const WEBHOOK_SECRET = "whsec_authservice_test_secret"
const PRICE = "price_mau_metered"

let app: TestApp
let stripe: FakeStripe

beforeAll(async () => {
  stripe = await startFakeStripe(SECRET_KEY)
  app = await startApp({
    env: {
      STRIPE_SECRET_KEY: SECRET_KEY,
      STRIPE_PRICE_ID: PRICE,
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_BASE: stripe.apiBase,
    },
  })
})
afterAll(async () => {
  await app?.close()
  await stripe?.close()
})

const rows = async <T>(text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(
    (await import("effect/sql")).SqlClient.SqlClient.use((sql) => sql.unsafe(text, params as Array<unknown>)),
  ) as Promise<Array<T>>
const checkout = (b: Bootstrapped, body: unknown = good, headers: Record<string, string> = {}) =>
  app.management("/v1/billing/checkout-session", { method: "POST", body, key: b.api_key, headers })
const portal = (b: Bootstrapped, body: unknown = { return_url: "https://app.example.com/settings" }) =>
  app.management("/v1/billing/portal-session", { method: "POST", body, key: b.api_key })
const good = { success_url: "https://app.example.com/billing/done", cancel_url: "https://app.example.com/billing" }
const usageBilling = async (b: Bootstrapped) => (await app.management("/v1/usage/mau", { key: b.api_key })).json.billing

describe("checkout and portal sessions", () => {
  it("checkout: one Stripe customer per Workspace (created on first use, kept), a subscription-mode session with the metered price", async () => {
    const b = await app.bootstrap()
    const before = stripe.requests.length
    const res = await checkout(b)
    expect(res.status, res.text).toBe(200)
    expect(Object.keys(res.json).sort()).toEqual(["checkout_url", "expires_at"])
    expect(res.json.checkout_url).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/)
    expect(res.json.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const sent = stripe.requests.slice(before)
    expect(sent.map((r) => r.path)).toEqual(["/v1/customers", "/v1/checkout/sessions"])
    expect(sent[0]!.params["metadata[workspace_id]"]).toBe(b.workspace_id)
    expect(sent[0]!.idempotencyKey).toBe(`authservice-customer-${b.workspace_id}`)
    const [row] = await rows<{ stripe_customer_id: string }>(
      "select stripe_customer_id from workspace_billing where workspace_id = $1",
      [b.workspace_id],
    )
    expect(sent[1]!.params).toMatchObject({
      mode: "subscription",
      customer: row!.stripe_customer_id,
      "line_items[0][price]": PRICE,
      success_url: good.success_url,
      cancel_url: good.cancel_url,
      client_reference_id: b.workspace_id,
    })
    expect(sent[1]!.params).not.toHaveProperty("line_items[0][quantity]")
    // the session is recorded for the Workspace and its customer: only its completion will count
    const sessionId = /\/c\/pay\/(cs_test_[0-9a-f]+)$/.exec(res.json.checkout_url)![1]!
    expect(
      await rows("select workspace_id, stripe_customer_id, expires_at from billing_checkout_sessions where id = $1", [
        sessionId,
      ]),
    ).toEqual([
      {
        workspace_id: b.workspace_id,
        stripe_customer_id: row!.stripe_customer_id,
        expires_at: new Date(res.json.expires_at),
      },
    ])

    // the customer is kept: a second checkout and a portal session reuse it
    expect((await checkout(b)).status).toBe(200)
    const p = await portal(b)
    expect(p.status, p.text).toBe(200)
    expect(p.json).toEqual({ portal_url: expect.stringMatching(/^https:\/\/billing\.stripe\.com\/p\/session\/bps_/) })
    expect(stripe.requests.slice(before).filter((r) => r.path === "/v1/customers")).toHaveLength(1)
    expect(stripe.of("/v1/billing_portal/sessions").at(-1)!.params).toEqual({
      customer: row!.stripe_customer_id,
      return_url: "https://app.example.com/settings",
    })
  })

  it("concurrent first uses create one customer (the Workspace's billing row is locked)", async () => {
    const b = await app.bootstrap()
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? checkout(b) : portal(b))))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(
      stripe.of("/v1/customers").filter((r) => r.params["metadata[workspace_id]"] === b.workspace_id),
    ).toHaveLength(1)
  })

  it("Idempotency-Key replays the first session without asking Stripe again", async () => {
    const b = await app.bootstrap()
    const first = await checkout(b, good, { "idempotency-key": "checkout-1" })
    const count = stripe.of("/v1/checkout/sessions").length
    const again = await checkout(b, good, { "idempotency-key": "checkout-1" })
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json).toEqual(first.json)
    expect(stripe.of("/v1/checkout/sessions")).toHaveLength(count)
    expectProblem(
      await checkout(b, { ...good, cancel_url: "https://app.example.com/other" }, { "idempotency-key": "checkout-1" }),
      409,
      "idempotency_key_conflict",
    )
  })

  it("refusals reach Stripe never: bad body 400, non-HTTPS 400, pinned key 403", async () => {
    const b = await app.bootstrap()
    const count = stripe.requests.length
    expectProblem(await checkout(b, { success_url: good.success_url }), 400, "invalid_request_body")
    expectProblem(await checkout(b, { ...good, success_url: "http://app.example.com/done" }), 400, "invalid_request")
    expectProblem(await portal(b, { return_url: "http://localhost/x" }), 400, "invalid_request")
    const pinned = await makeKey(app, {
      workspaceId: b.workspace_id,
      environmentId: b.environment_id,
      scopes: ["billing:write"],
    })
    expectProblem(
      await app.management("/v1/billing/portal-session", {
        method: "POST",
        body: { return_url: "https://a.example/r" },
        key: pinned,
      }),
      403,
      "forbidden",
    )
    expect(stripe.requests.length).toBe(count)
    expect(await rows("select 1 from workspace_billing where workspace_id = $1", [b.workspace_id])).toHaveLength(0)
  })

  it("a failure Stripe marks retryable (5xx) is retried once under the same Idempotency-Key, with the pinned API version", async () => {
    const b = await app.bootstrap()
    expect((await checkout(b)).status).toBe(200)
    const before = stripe.requests.length
    stripe.failNext("/v1/checkout/sessions", 503)
    expect((await checkout(b)).status).toBe(200)
    const sent = stripe.requests.slice(before)
    expect(sent.map((r) => r.path)).toEqual(["/v1/checkout/sessions", "/v1/checkout/sessions"])
    expect(sent[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
    expect(sent[1]!.idempotencyKey).toBe(sent[0]!.idempotencyKey)
    expect(sent.map((r) => r.stripeVersion)).toEqual([STRIPE_API_VERSION, STRIPE_API_VERSION])
    // Two 5xx in a row: one retry only, then 502.
    stripe.failNext("/v1/billing_portal/sessions", 500)
    stripe.failNext("/v1/billing_portal/sessions", 500)
    const count = stripe.requests.length
    expectProblem(await portal(b), 502, "billing_provider_error")
    expect(stripe.requests.length - count).toBe(2)
  })

  it("a Stripe failure is 502 billing_provider_error and stores nothing; a retry succeeds", async () => {
    const b = await app.bootstrap()
    stripe.failNext("/v1/customers", 400)
    expectProblem(await checkout(b), 502, "billing_provider_error")
    expect(
      await rows("select 1 from workspace_billing where workspace_id = $1 and stripe_customer_id is not null", [
        b.workspace_id,
      ]),
    ).toHaveLength(0)
    stripe.failNext("/v1/checkout/sessions", 400)
    expectProblem(await checkout(b), 502, "billing_provider_error")
    expect((await checkout(b)).status).toBe(200)
    expect(
      new Set(
        stripe
          .of("/v1/customers")
          .filter((r) => r.params["metadata[workspace_id]"] === b.workspace_id)
          .map((r) => r.idempotencyKey),
      ).size,
    ).toBe(1)
  })

  it("a session that fails after the customer was created keeps the customer: retries, even past Stripe's 24-hour idempotency, reuse it", async () => {
    const b = await app.bootstrap()
    const mine = () => stripe.of("/v1/customers").filter((r) => r.params["metadata[workspace_id]"] === b.workspace_id)
    stripe.failNext("/v1/checkout/sessions", 400)
    expectProblem(await checkout(b), 502, "billing_provider_error")
    const [row] = await rows<{ stripe_customer_id: string | null }>(
      "select stripe_customer_id from workspace_billing where workspace_id = $1",
      [b.workspace_id],
    )
    expect(row!.stripe_customer_id).toMatch(/^cus_/) // committed before the session was asked for
    expect(mine()).toHaveLength(1)
    stripe.forgetIdempotencyKeys() // a day later: Stripe would now make a second customer
    stripe.failNext("/v1/billing_portal/sessions", 400)
    expectProblem(await portal(b), 502, "billing_provider_error")
    const res = await checkout(b)
    expect(res.status, res.text).toBe(200)
    expect(mine()).toHaveLength(1)
    expect(stripe.of("/v1/checkout/sessions").at(-1)!.params["customer"]).toBe(row!.stripe_customer_id)
    expect(stripe.of("/v1/billing_portal/sessions").at(-1)!.params["customer"]).toBe(row!.stripe_customer_id)
  })
})

describe("Stripe webhook drives the billing state shown in /usage/mau", () => {
  const deliver = (
    event: Record<string, unknown>,
    options: { secret?: string; timestamp?: number; signature?: string | null } = {},
  ) => {
    const payload = JSON.stringify(event)
    const header =
      options.signature === null
        ? undefined
        : (options.signature ??
          Stripe.webhooks.generateTestHeaderString({
            payload,
            secret: options.secret ?? WEBHOOK_SECRET,
            timestamp: options.timestamp ?? Math.floor(app.now() / 1000),
          }))
    return app.request(app.config.managementHost, "/v1/billing/stripe/webhook", {
      method: "POST",
      body: payload,
      headers: { "content-type": "application/json", ...(header ? { "stripe-signature": header } : {}) },
    })
  }
  let n = 0
  const event = (type: string, object: Record<string, unknown>, created = Math.floor(app.now() / 1000)) => ({
    id: `evt_test_${++n}_${Date.now()}`,
    object: "event",
    type,
    created,
    livemode: false,
    api_version: "2026-10-28.endive",
    data: { object },
  })

  /** A Workspace that opened a checkout session: its customer and the session's id (from the URL we handed out). */
  const subscribedWorkspace = async () => {
    const b = await app.bootstrap()
    const res = await checkout(b)
    expect(res.status).toBe(200)
    const [row] = await rows<{ stripe_customer_id: string }>(
      "select stripe_customer_id from workspace_billing where workspace_id = $1",
      [b.workspace_id],
    )
    return {
      b,
      customer: row!.stripe_customer_id,
      session: /\/c\/pay\/(cs_test_[0-9a-f]+)$/.exec(res.json.checkout_url)![1]!,
    }
  }
  const customerOf = async (b: Bootstrapped) =>
    (
      await rows<{ stripe_customer_id: string | null }>(
        "select stripe_customer_id from workspace_billing where workspace_id = $1",
        [b.workspace_id],
      )
    )[0]?.stripe_customer_id
  const ignoredAudits = (b: Bootstrapped) =>
    rows<{ actor_type: string; result: string; subject_id: string; details: any }>(
      "select actor_type, result, subject_id, details from audit_events where action = 'billing.stripe_event_ignored' and workspace_id = $1 order by created_at, id",
      [b.workspace_id],
    )

  it("checkout.session.completed -> active; a redelivery changes nothing", async () => {
    const { b, customer, session } = await subscribedWorkspace()
    expect(await usageBilling(b)).toMatchObject({ status: "no_subscription", subscription_id: null })
    const completed = event("checkout.session.completed", {
      id: session,
      object: "checkout.session",
      mode: "subscription",
      customer,
      subscription: "sub_1",
      client_reference_id: b.workspace_id,
    })
    const res = await deliver(completed)
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({ received: true, duplicate: false, applied: true })
    expect(await usageBilling(b)).toEqual({
      status: "active",
      subscription_id: "sub_1",
      past_due_since: null,
      grace_period_ends_at: null,
      grace_period_ended: false,
    })
    const again = await deliver(completed)
    expect(again.json).toEqual({ received: true, duplicate: true, applied: false })
    expect(
      await rows("select 1 from audit_events where action = 'billing.subscription_changed' and workspace_id = $1", [
        b.workspace_id,
      ]),
    ).toHaveLength(1)
  })

  it("invoice.payment_failed -> past_due with a 7-day grace (TestClock); a stale event is ignored; invoice.paid -> active; deleted -> canceled", async () => {
    const { b, customer } = await subscribedWorkspace()
    await deliver(
      event("customer.subscription.created", { id: "sub_2", object: "subscription", customer, status: "active" }),
    )
    await app.advance("1 hour")
    const failedAt = Math.floor(app.now() / 1000)
    expect(
      (
        await deliver(
          event("invoice.payment_failed", { id: "in_1", object: "invoice", customer, subscription: "sub_2" }, failedAt),
        )
      ).json.applied,
    ).toBe(true)
    const graceEnds = new Date(failedAt * 1000 + 7 * 24 * 3600_000).toISOString()
    expect(await usageBilling(b)).toEqual({
      status: "past_due",
      subscription_id: "sub_2",
      past_due_since: new Date(failedAt * 1000).toISOString(),
      grace_period_ends_at: graceEnds,
      grace_period_ended: false,
    })
    // a second failure does not restart the grace period
    await app.advance("2 days")
    await deliver(
      event("customer.subscription.updated", { id: "sub_2", object: "subscription", customer, status: "past_due" }),
    )
    expect((await usageBilling(b)).grace_period_ends_at).toBe(graceEnds)
    // an older "active" update delivered late changes nothing
    expect(
      (
        await deliver(
          event(
            "customer.subscription.updated",
            { id: "sub_2", object: "subscription", customer, status: "active" },
            failedAt - 60,
          ),
        )
      ).json.applied,
    ).toBe(false)
    expect((await usageBilling(b)).status).toBe("past_due")
    await app.advance("5 days")
    expect(await usageBilling(b)).toMatchObject({ status: "past_due", grace_period_ended: true })
    await deliver(event("invoice.paid", { id: "in_1", object: "invoice", customer, subscription: "sub_2" }))
    expect(await usageBilling(b)).toEqual({
      status: "active",
      subscription_id: "sub_2",
      past_due_since: null,
      grace_period_ends_at: null,
      grace_period_ended: false,
    })
    await app.advance("1 minute")
    await deliver(
      event("customer.subscription.deleted", { id: "sub_2", object: "subscription", customer, status: "canceled" }),
    )
    expect((await usageBilling(b)).status).toBe("canceled")
  })

  it("refused deliveries change nothing: a wrong secret, no header, a tampered body, a timestamp over 300 s old -> 400 invalid_signature", async () => {
    const { b, customer } = await subscribedWorkspace()
    const failed = event("invoice.payment_failed", { id: "in_x", object: "invoice", customer })
    expectProblem(await deliver(failed, { secret: "whsec_wrong" }), 400, "invalid_signature")
    expectProblem(await deliver(failed, { signature: null }), 400, "invalid_signature")
    expectProblem(await deliver(failed, { timestamp: Math.floor(app.now() / 1000) - 301 }), 400, "invalid_signature")
    const header = Stripe.webhooks.generateTestHeaderString({
      payload: JSON.stringify(failed),
      secret: WEBHOOK_SECRET,
      timestamp: Math.floor(app.now() / 1000),
    })
    const tampered = JSON.stringify({ ...failed, type: "invoice.paid" })
    expectProblem(
      await app.request(app.config.managementHost, "/v1/billing/stripe/webhook", {
        method: "POST",
        body: tampered,
        headers: { "content-type": "application/json", "stripe-signature": header },
      }),
      400,
      "invalid_signature",
    )
    expect(await rows("select 1 from stripe_events where id = $1", [failed.id])).toHaveLength(0)
    expect((await usageBilling(b)).status).toBe("no_subscription")
    // exactly 300 s old is still accepted (Stripe's tolerance)
    expect((await deliver(failed, { timestamp: Math.floor(app.now() / 1000) - 300 })).status).toBe(200)
  })

  it("checkout completion: only a session we opened for the Workspace, naming its customer, counts; any other is ignored and audited", async () => {
    const { b, customer, session } = await subscribedWorkspace()
    const other = await subscribedWorkspace()
    const fresh = await app.bootstrap() // no customer recorded yet: nothing may be adopted for it
    const completion = (object: Record<string, unknown>) =>
      event("checkout.session.completed", {
        object: "checkout.session",
        mode: "subscription",
        subscription: "sub_forged",
        ...object,
      })
    const refused: ReadonlyArray<readonly [string, Record<string, unknown>, Bootstrapped, string]> = [
      // a Payment Link / pricing table on the same Stripe account: the payer chose client_reference_id
      [
        "foreign session and customer naming a Workspace without a customer",
        {
          id: "cs_test_paymentlink1",
          customer: "cus_attacker",
          client_reference_id: fresh.workspace_id,
          metadata: { workspace_id: fresh.workspace_id },
        },
        fresh,
        "checkout_session_not_ours",
      ],
      [
        "foreign session and customer naming a subscribed Workspace",
        { id: "cs_test_paymentlink2", customer: "cus_attacker", client_reference_id: b.workspace_id },
        b,
        "checkout_session_not_ours",
      ],
      // another session of the Workspace's own customer, not opened by us
      [
        "the Workspace's customer, a session we did not open",
        { id: "cs_test_elsewhere", customer, client_reference_id: b.workspace_id },
        b,
        "checkout_session_not_ours",
      ],
      // our session, but the event names another customer (ours for another Workspace, or nobody's)
      [
        "our session with another Workspace's customer",
        { id: session, customer: other.customer, client_reference_id: b.workspace_id },
        b,
        "checkout_session_other_customer",
      ],
      [
        "our session with an unknown customer",
        { id: session, customer: "cus_attacker", client_reference_id: b.workspace_id },
        b,
        "checkout_session_other_customer",
      ],
      [
        "another Workspace's session with this Workspace's customer",
        { id: other.session, customer, client_reference_id: b.workspace_id },
        b,
        "checkout_session_other_customer",
      ],
    ]
    for (const [why, object, about, reason] of refused) {
      const forged = completion(object)
      const res = await deliver(forged)
      expect(res.status, why).toBe(200)
      expect(res.json, why).toEqual({ received: true, duplicate: false, applied: false })
      // audited in the Workspace the event is about (and in any other of ours it names)
      const audit = await rows<{ workspace_id: string; actor_type: string; result: string; details: any }>(
        "select workspace_id, actor_type, result, details from audit_events where action = 'billing.stripe_event_ignored' and details->>'stripe_event_id' = $1",
        [forged.id],
      )
      expect(
        audit.find((a) => a.workspace_id === about.workspace_id),
        why,
      ).toMatchObject({
        actor_type: "system",
        result: "failure",
        details: {
          reason,
          stripe_event_type: "checkout.session.completed",
          checkout_session_id: object["id"],
          stripe_customer_id: object["customer"],
        },
      })
      expect(
        audit.every((a) => a.details.reason === reason),
        why,
      ).toBe(true)
    }
    // nothing changed: no customer adopted, no subscription recorded anywhere
    expect(await customerOf(fresh)).toBeUndefined()
    expect(await customerOf(b)).toBe(customer)
    for (const w of [b, other.b, fresh]) expect((await usageBilling(w)).status, w.workspace_id).toBe("no_subscription")
    expect(
      await rows(
        "select 1 from audit_events where action = 'billing.subscription_changed' and workspace_id = any($1)",
        [[b.workspace_id, other.b.workspace_id, fresh.workspace_id]],
      ),
    ).toHaveLength(0)
    // the legitimate completion still works
    const legit = await deliver(
      completion({ id: session, customer, subscription: "sub_legit", client_reference_id: b.workspace_id }),
    )
    expect(legit.json).toEqual({ received: true, duplicate: false, applied: true })
    expect(await usageBilling(b)).toMatchObject({ status: "active", subscription_id: "sub_legit" })
    expect((await usageBilling(other.b)).status).toBe("no_subscription")
  })

  it("an event for a customer we did not record is never adopted through its metadata: ignored, audited in the Workspace it names", async () => {
    // subscription metadata (subscription_data.metadata at checkout)
    const a = await app.bootstrap()
    const sub = event("customer.subscription.created", {
      id: "sub_meta_a",
      object: "subscription",
      customer: "cus_lost_a",
      status: "active",
      metadata: { workspace_id: a.workspace_id },
    })
    expect((await deliver(sub)).json).toEqual({ received: true, duplicate: false, applied: false })
    expect(await usageBilling(a)).toMatchObject({ status: "no_subscription" })
    expect(await customerOf(a)).toBeUndefined()
    expect(
      (await ignoredAudits(a)).map((r) => [r.details.reason, r.details.stripe_event_id, r.details.stripe_customer_id]),
    ).toEqual([["customer_not_recorded", sub.id, "cus_lost_a"]])
    // an invoice carrying its subscription's metadata under parent.subscription_details
    const c = await app.bootstrap()
    expect(
      (
        await deliver(
          event("invoice.payment_failed", {
            id: "in_c",
            object: "invoice",
            customer: "cus_lost_c",
            parent: {
              type: "subscription_details",
              subscription_details: { subscription: "sub_c", metadata: { workspace_id: c.workspace_id } },
            },
          }),
        )
      ).json.applied,
    ).toBe(false)
    expect((await usageBilling(c)).status).toBe("no_subscription")
    expect(await customerOf(c)).toBeUndefined()
    expect((await ignoredAudits(c)).map((r) => r.details.reason)).toEqual(["customer_not_recorded"])
    // a redelivery is a duplicate: no second audit
    expect((await deliver(sub)).json).toEqual({ received: true, duplicate: true, applied: false })
    expect(await ignoredAudits(a)).toHaveLength(1)
  })

  it("metadata naming a Workspace that has another customer, or no Workspace at all, changes nothing", async () => {
    const { b, customer } = await subscribedWorkspace()
    const other = await deliver(
      event("customer.subscription.created", {
        id: "sub_other",
        object: "subscription",
        customer: "cus_second",
        status: "active",
        metadata: { workspace_id: b.workspace_id },
      }),
    )
    expect(other.json).toEqual({ received: true, duplicate: false, applied: false })
    expect((await usageBilling(b)).status).toBe("no_subscription")
    expect(await customerOf(b)).toBe(customer)
    expect((await ignoredAudits(b)).map((r) => r.details.reason)).toEqual(["customer_not_recorded"])
    const nobody = await deliver(
      event("customer.subscription.created", {
        id: "sub_nobody",
        object: "subscription",
        customer: "cus_nobody",
        status: "active",
        metadata: { workspace_id: "wsp_doesnotexist" },
      }),
    )
    expect(nobody.json).toEqual({ received: true, duplicate: false, applied: false })
    expect(await rows("select 1 from workspace_billing where workspace_id = 'wsp_doesnotexist'")).toHaveLength(0)
    expect(await rows("select 1 from audit_events where workspace_id = 'wsp_doesnotexist'")).toHaveLength(0)
  })

  it("an event for a customer we do not know is acknowledged and changes nothing", async () => {
    const res = await deliver(
      event("invoice.payment_failed", { id: "in_y", object: "invoice", customer: "cus_unknown" }),
    )
    expect(res.json).toEqual({ received: true, duplicate: false, applied: false })
  })
})

describe("housekeeping", () => {
  it("checkout session records are forgotten 30 days after the session expired, not before", async () => {
    const b = await app.bootstrap()
    expect((await checkout(b)).status).toBe(200)
    const mine = () =>
      rows<{ expires_at: Date }>("select expires_at from billing_checkout_sessions where workspace_id = $1", [
        b.workspace_id,
      ])
    const [session] = await mine()
    const { housekeeping } = await import("../../src/jobs/housekeeping.js")
    const thirtyDays = 30 * 24 * 3600_000
    await app.advance(`${session!.expires_at.getTime() + thirtyDays - 3600_000 - app.now()} millis`)
    await app.run(housekeeping)
    expect(await mine()).toHaveLength(1)
    await app.advance("2 hours")
    await app.run(housekeeping)
    expect(await mine()).toHaveLength(0)
  })
})
