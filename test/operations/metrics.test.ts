import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import { type Receiver, startReceiver } from "../webhooks/support.js"
import { query } from "../login/support.js"
import { type Call, type ConfidentialClient, emailOtpLogin, registerClient, sample, tokenRequest } from "./support.js"

const TOKEN = "metrics-token-0123456789abcdef"

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let receiver: Receiver
let client: ConfidentialClient
let call: Call

const scrape = async (authorization: string | null = `Bearer ${TOKEN}`) =>
  app.request(app.config.managementHost, "/metrics", authorization === null ? {} : { headers: { authorization } })

/** Scrapes until `check` holds (the worker runs jobs on its own schedule, in real time). */
const scrapeUntil = async (check: (text: string) => boolean) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const text = (await scrape()).text
    if (check(text) || Date.now() > deadline) return text
    await new Promise((r) => setTimeout(r, 100))
  }
}

beforeAll(async () => {
  smtp = await startSmtpSink()
  receiver = await startReceiver([{ status: 204 }])
  app = await startApp({
    worker: true,
    env: { SMTP_URL: smtp.url, METRICS_TOKEN: TOKEN, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", RATE_LIMIT_CLIENT_PER_MINUTE: "3" },
  })
  b = await app.bootstrap()
  call = app.request
  client = await registerClient(call, app.config.managementHost, b)
  const hook = await app.management("/v1/webhooks", {
    method: "POST", body: { environment_id: b.environment_id, url: receiver.url(), event_types: ["login.succeeded"] },
  })
  expect(hook.status, hook.text).toBe(201)
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
  await receiver?.close()
})

describe("the Prometheus endpoint (Management host /metrics)", () => {
  it("with METRICS_TOKEN set: no or a wrong bearer token is 401 unauthorized with a Bearer challenge, and reveals nothing", async () => {
    for (const authorization of [null, `Bearer ${TOKEN}x`, `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`, TOKEN]) {
      const res = await scrape(authorization)
      expect(res.status).toBe(401)
      expect(res.headers["content-type"]).toBe("application/problem+json")
      expect(res.json.code).toBe("unauthorized")
      expect(res.headers["www-authenticate"]).toBe(`Bearer realm="metrics"`)
      expect(res.text).not.toContain("authservice_")
    }
    expect((await app.request(app.config.managementHost, "/metrics", { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(405)
    // Only the Management host serves it.
    expect((await app.request(app.config.canonicalIssuerHost, "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404)
  })

  it("counts a login end to end: requests by route template and status, logins by method and outcome, tokens by grant, OTP mail, webhook delivery, jobs", async () => {
    const email = uniqueEmail("metrics")
    const login = await emailOtpLogin(call, { interaction: b.interaction_domain, issuer: app.config.canonicalIssuerHost }, b, client, email, (to) => smtp.waitForCode(to))
    const res = await scrape()
    expect(res.status).toBe(200)
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(res.headers["cache-control"]).toBe("no-store")
    const text = await scrapeUntil((t) => (sample(t, "authservice_webhook_deliveries_total", { outcome: "delivered" }) ?? 0) >= 1)

    // Requests: labelled by template (never the transaction id), surface and status.
    expect(text).not.toContain(login.transactionId)
    expect(sample(text, "authservice_http_requests_total", { surface: "interaction", method: "POST", route: "/v1/auth/transactions/:transactionId/email/verify", status: "400" })).toBe(1)
    expect(sample(text, "authservice_http_requests_total", { surface: "interaction", method: "POST", route: "/v1/auth/transactions/:transactionId/email/verify", status: "200" })).toBe(1)
    expect(sample(text, "authservice_http_requests_total", { surface: "issuer", method: "POST", route: "/e/{environment_id}/oauth2/token", status: "200" })).toBe(1)
    expect(sample(text, "authservice_http_request_duration_seconds_count", { surface: "issuer", route: "/e/{environment_id}/oauth2/token", status: "200" })).toBe(1)
    expect(sample(text, "authservice_http_request_duration_seconds_bucket", { route: "/e/{environment_id}/oauth2/token", status: "200", le: "+Inf" })).toBe(1)
    // Domain counters.
    expect(sample(text, "authservice_logins_total", { method: "email_otp", outcome: "succeeded" })).toBe(1)
    expect(sample(text, "authservice_logins_total", { method: "email_otp", outcome: "invalid_code" })).toBe(1)
    expect(sample(text, "authservice_tokens_issued_total", { grant: "authorization_code" })).toBe(1)
    expect(sample(text, "authservice_otp_emails_total", { outcome: "sent" })).toBe(1)
    expect(sample(text, "authservice_webhook_deliveries_total", { outcome: "delivered" })).toBe(1)
    expect(sample(text, "authservice_jobs_total", { task: "send_login_code", outcome: "completed" })).toBe(1)
    expect(sample(text, "authservice_job_duration_seconds_count", { task: "send_login_code" })).toBe(1)
    // Pools: this process's SQL pool maximum, live connections, the job runner's pool.
    expect(sample(text, "authservice_db_pool_max_connections")).toBe(6)
    expect(sample(text, "authservice_db_connections", { pool: "sql", state: "active" })).toBeGreaterThanOrEqual(1)
    expect(sample(text, "authservice_worker_db_pool_connections", { state: "total" })).toBeGreaterThanOrEqual(1)
    // Process metrics from prom-client's defaults.
    expect(sample(text, "authservice_process_resident_memory_bytes")).toBeGreaterThan(0)

    // Refresh, then the old token again after the 5-second grace: a reuse detection.
    const refreshed = await tokenRequest(call, app.config.canonicalIssuerHost, b, client, { grant_type: "refresh_token", refresh_token: login.tokens.refresh_token })
    expect(refreshed.status, refreshed.text).toBe(200)
    await app.advance("6 seconds")
    const reused = await tokenRequest(call, app.config.canonicalIssuerHost, b, client, { grant_type: "refresh_token", refresh_token: login.tokens.refresh_token })
    expect([reused.status, reused.json.error]).toEqual([400, "invalid_grant"])
    const after = (await scrape()).text
    expect(sample(after, "authservice_tokens_issued_total", { grant: "refresh_token" })).toBe(1)
    expect(sample(after, "authservice_refresh_token_reuse_detected_total")).toBe(1)
    expect(sample(after, "authservice_http_requests_total", { surface: "issuer", route: "/e/{environment_id}/oauth2/token", status: "400" })).toBe(1)
  })

  it("rate-limit refusals by limit; unmatched paths share one label", async () => {
    const before = sample((await scrape()).text, "authservice_rate_limit_refusals_total", { bucket: "txn_create:client" }) ?? 0
    const body = { client_id: client.id, redirect_uri: client.redirectUri, code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256", state: "s", nonce: "n", scope: "openid" }
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) statuses.push((await call(b.interaction_domain, "/v1/auth/transactions", { body })).status)
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1)
    const refused = statuses.filter((s) => s === 429).length
    await call(b.interaction_domain, "/v1/no/such/path/abc123")
    await call(b.interaction_domain, "/v1/no/such/path/def456")
    const text = (await scrape()).text
    expect(sample(text, "authservice_rate_limit_refusals_total", { bucket: "txn_create:client" })).toBe(before + refused)
    expect(sample(text, "authservice_http_requests_total", { surface: "interaction", method: "GET", route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(2)
    expect(text).not.toContain("abc123")
  })

  it("queue depth and delivery lag from the job table; failed jobs counted", async () => {
    // A job of a task no worker runs, due 60 s ago by the application clock: it waits, so it lags.
    const dueAt = new Date(app.now() - 60_000)
    await query(app, "select (graphile_worker.add_job('ops_probe_unknown_task', '{}'::json, run_at := $1::timestamptz)).id::text as id", [dueAt])
    await query(app, "select (graphile_worker.add_job('ops_probe_unknown_task', '{}'::json, run_at := $1::timestamptz)).id::text as id", [new Date(app.now() + 3_600_000)])
    // A mail job whose payload cannot be read fails (and is retried by graphile-worker).
    await query(app, "select (graphile_worker.add_job('send_login_code', '{}'::json, max_attempts := 1)).id::text as id")
    const text = await scrapeUntil((t) => (sample(t, "authservice_jobs_total", { task: "send_login_code", outcome: "failed" }) ?? 0) >= 1)
    expect(sample(text, "authservice_jobs_total", { task: "send_login_code", outcome: "failed" })).toBe(1)
    expect(sample(text, "authservice_job_queue_lag_seconds", { task: "ops_probe_unknown_task" })).toBeCloseTo(60, 0)
    expect(sample(text, "authservice_job_queue_depth", { state: "due" })).toBeGreaterThanOrEqual(1)
    expect(sample(text, "authservice_job_queue_depth", { state: "scheduled" })).toBeGreaterThanOrEqual(1)
    // The lag follows the application clock.
    await app.advance("30 seconds")
    expect(sample((await scrape()).text, "authservice_job_queue_lag_seconds", { task: "ops_probe_unknown_task" })).toBeCloseTo(90, 0)
  })
})
