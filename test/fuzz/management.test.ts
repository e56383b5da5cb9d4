import fc from "fast-check"
import { afterAll, beforeAll, expect, it } from "vitest"
import { trackDelivery } from "../../src/bounces/deliveries.js"
import { allRoutes } from "../../src/routes.js"
import { type FakeStripe, startFakeStripe } from "../billing/fake-stripe.js"
import { type AwsStub, CERT_FILE, sesBounce, signSns, SNS_TOPIC, startAwsStub } from "../bounces/sns.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeDashboardSession } from "../support/tenancy.js"
import { uniqueEmail } from "../login/support.js"
import { bodyFor, expectProblem, RUNS, refusedChangesNothing, snapshot } from "./support.js"

let app: TestApp
let b: Bootstrapped
let userId: string
let stripe: FakeStripe
let aws: AwsStub
/** A Dashboard session of a Workspace Owner: POST /v1/workspaces and impersonation take no API key. */
let dashboard: string
/** A mail delivery of the Environment, so a bounce report can name it. */
let delivery: { id: string; messageId: string; recipient: string }

const BOUNCE_SECRET = "bounce-secret-0123456789-abcdefghijklmnop"
const STRIPE_KEY = "sk_test_fuzz"

beforeAll(async () => {
  stripe = await startFakeStripe(STRIPE_KEY)
  aws = await startAwsStub()
  // Every intake the Management host can have is configured, so each create route reaches its rules.
  app = await startApp({
    env: {
      STRIPE_SECRET_KEY: STRIPE_KEY,
      STRIPE_PRICE_ID: "price_fuzz",
      STRIPE_WEBHOOK_SECRET: "whsec_fuzz",
      STRIPE_API_BASE: stripe.apiBase,
      BOUNCE_WEBHOOK_SECRET: BOUNCE_SECRET,
      SNS_CERT_URL_PREFIX: aws.base,
      BOUNCE_SNS_TOPIC_ARNS: SNS_TOPIC,
      // One key sends every property's runs: the budgets are not what is fuzzed here.
      RATE_LIMIT_MANAGEMENT_PER_MINUTE: "1000000",
      RATE_LIMIT_WEBHOOK_TEST_PER_MINUTE: "1000000",
    },
  })
  b = await app.bootstrap()
  const user = await app.management("/v1/users", {
    method: "POST",
    body: { environment_id: b.environment_id, email: uniqueEmail("fuzz-target") },
  })
  expect(user.status, user.text).toBe(201)
  userId = user.json.id
  const settings = await app.management(`/v1/environments/${b.environment_id}/settings`, {
    method: "PATCH",
    body: { impersonation_enabled: true },
  })
  expect(settings.status, settings.text).toBe(200)
  dashboard = await makeDashboardSession(app, { email: uniqueEmail("fuzz-owner"), workspaceId: b.workspace_id })
  const recipient = uniqueEmail("fuzz-bounce")
  const mail = await app.run(
    trackDelivery(b.environment_id, "login_code", { to: recipient, subject: "code", text: "code" }),
  )
  delivery = { id: mail.headers!["X-Authservice-Delivery-Id"]!, messageId: mail.messageId!, recipient }
})
afterAll(async () => {
  await app?.close()
  await stripe?.close()
  await aws?.close()
})

/** How a create route is called: its valid body, and the credentials and query the spec asks of it. */
interface Target {
  readonly base: Record<string, unknown>
  readonly headers?: () => Record<string, string>
  readonly query?: string
}

const apiKey = () => ({ authorization: `Bearer ${b.api_key}` })
const dashboardSession = () => ({ authorization: `Bearer ${dashboard}`, "x-workspace-id": b.workspace_id })

/** A valid create body per collection, which the generator breaks one field at a time. */
const targets = (): Record<string, Target> => ({
  "/v1/workspaces": { base: { name: "Fuzz" }, headers: dashboardSession },
  "/v1/projects": { base: { workspace_id: b.workspace_id, name: "Fuzz" } },
  "/v1/environments": { base: { project_id: b.project_id, type: "test", name: "Fuzz" } },
  "/v1/api-keys": { base: { workspace_id: b.workspace_id, name: "Fuzz", scopes: ["users:read"] } },
  "/v1/clients": {
    base: {
      environment_id: b.environment_id,
      client_type: "web_spa",
      name: "Fuzz",
      token_endpoint_auth_method: "none",
      redirect_uris: ["https://app.example.com/cb"],
    },
  },
  "/v1/connections": {
    base: {
      environment_id: b.environment_id,
      provider: "google",
      mode: "byo",
      provider_key: "google",
      provider_client_id: "id",
      provider_client_secret: "secret",
    },
  },
  "/v1/domains": { base: { environment_id: b.environment_id, hostname: "login.fuzz.example.com" } },
  "/v1/users": { base: { environment_id: b.environment_id, email: uniqueEmail("fuzz") } },
  "/v1/webhooks": {
    base: { environment_id: b.environment_id, url: "https://hooks.example.com/in", event_types: ["user.created"] },
  },
  // `.invalid` never resolves (RFC 2606): the import fails at once without reaching out, and the job records it.
  "/v1/user-import-jobs": {
    base: { environment_id: b.environment_id, format: "csv", source_url: "https://files.invalid/users.csv" },
  },
  "/v1/user-export-jobs": { base: { environment_id: b.environment_id, target_user_id: userId } },
  "/v1/impersonation": {
    base: { user_id: userId, reason: "support ticket", duration_minutes: 5 },
    headers: dashboardSession,
    query: `environment_id=${b.environment_id}`,
  },
  "/v1/billing/checkout-session": {
    base: { success_url: "https://app.example.com/billing/done", cancel_url: "https://app.example.com/billing" },
  },
  "/v1/billing/portal-session": { base: { return_url: "https://app.example.com/settings" } },
  "/v1/email-bounces": {
    base: { delivery_id: delivery.id, recipient: delivery.recipient, bounce_type: "soft" },
    headers: () => ({ "x-bounce-secret": BOUNCE_SECRET }),
  },
  "/v1/email-bounces/sns": {
    base: signSns(
      { Type: "Notification", Message: sesBounce(delivery.id, delivery.messageId, delivery.recipient, "Transient") },
      `${aws.base}${CERT_FILE}`,
    ),
    headers: () => ({}),
  },
})

it("every Management create body (POST on a collection): the spec's success or error, never a 500; a refusal changes nothing; each valid body succeeds", async () => {
  const creates = allRoutes(app.config).management.filter(
    (r) => r.method === "POST" && r.doc?.body !== undefined && !/:[a-zA-Z]+/.test(r.path),
  )
  const all = targets()
  // Every create route has its valid body here: a new route must be added (and reach success).
  expect(creates.map((r) => r.path).sort()).toEqual(Object.keys(all).sort())
  const seen = new Map<string, Set<number>>()
  for (const route of creates) {
    const target = all[route.path]!
    const fields = Object.keys((route.doc!.body as { fields?: Record<string, unknown> }).fields ?? {})
    await fc.assert(
      fc.asyncProperty(bodyFor(fields, target.base), async (body) => {
        const before = await snapshot(app)
        const path = target.query ? `${route.path}?${target.query}` : route.path
        const res = await app.request(app.config.managementHost, path, {
          method: "POST",
          body: JSON.stringify(body),
          headers: (target.headers ?? apiKey)(),
        })
        const context = `POST ${route.path} ${JSON.stringify(body).slice(0, 300)}`
        seen.set(route.path, (seen.get(route.path) ?? new Set()).add(res.status))
        if (res.status >= 400) expectProblem(res, context)
        else expect([200, 201, 202], context).toContain(res.status)
        await refusedChangesNothing(app, before, res, context)
      }),
      { numRuns: RUNS, examples: [[target.base]] },
    )
  }
  // Both sides reached on every route: a refusal, and (from the valid body at least) a success.
  for (const route of creates) {
    expect(
      [...seen.get(route.path)!].some((s) => s >= 400),
      `${route.path} refused`,
    ).toBe(true)
    expect(
      [...seen.get(route.path)!].some((s) => s < 300),
      `${route.path} succeeded: ${[...seen.get(route.path)!]}`,
    ).toBe(true)
  }
}, 240_000)

/** Each body is 400 invalid_request with `detail` and changes nothing: a string Postgres cannot hold. */
const expectUnstorableRefused = async (
  cases: ReadonlyArray<readonly [string, Record<string, unknown>]>,
  detail: string,
) => {
  for (const [path, body] of cases) {
    const before = await snapshot(app)
    const res = await app.management(path, { method: "POST", body })
    expect([res.status, res.json.code, res.json.detail], path).toEqual([400, "invalid_request", detail])
    expect(await snapshot(app)).toEqual(before)
  }
}

it("found by fuzzing: a NUL anywhere in a JSON body is 400 invalid_request and stores nothing (Postgres cannot hold it)", async () => {
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["/v1/projects", { workspace_id: b.workspace_id, name: "a\u0000b" }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("nul"), name: "a\u0000b" }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("nul"), metadata: { "k\u0000": "v" } }],
    [
      "/v1/clients",
      {
        environment_id: b.environment_id,
        client_type: "web_spa",
        name: "a\u0000",
        token_endpoint_auth_method: "none",
        redirect_uris: ["https://a.example.com/cb"],
      },
    ],
  ]
  await expectUnstorableRefused(cases, "Strings must not contain the NUL character (U+0000)")
  // A wrong type still wins over the NUL (shape before rule).
  const wrongType = await app.management("/v1/projects", {
    method: "POST",
    body: { workspace_id: b.workspace_id, name: 5, slug: "a\u0000" },
  })
  expect([wrongType.status, wrongType.json.code]).toEqual([400, "invalid_request_body"])
})

it("found by fuzzing: an unpaired UTF-16 surrogate in a JSON body is 400 invalid_request and stores nothing (jsonb cannot hold it)", async () => {
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    [
      "/v1/clients",
      {
        environment_id: b.environment_id,
        client_type: "web_spa",
        name: "\ud800",
        token_endpoint_auth_method: "none",
        redirect_uris: ["https://app.example.com/cb"],
      },
    ],
    ["/v1/projects", { workspace_id: b.workspace_id, name: "a\udfffb" }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("lone"), metadata: { "k\udbff": "v" } }],
    ["/v1/users", { environment_id: b.environment_id, email: uniqueEmail("lone"), metadata: { k: ["ok", "x\ud83d"] } }],
  ]
  await expectUnstorableRefused(cases, "Strings must be well-formed Unicode (no unpaired surrogate such as \\ud800)")
  // A surrogate pair (an emoji) is well-formed and stored as sent.
  const emoji = await app.management("/v1/projects", {
    method: "POST",
    body: { workspace_id: b.workspace_id, name: "rocket \ud83d\ude80" },
  })
  expect([emoji.status, emoji.json.name]).toEqual([201, "rocket \u{1F680}"])
})
