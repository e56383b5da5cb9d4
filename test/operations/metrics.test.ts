import parsePrometheus from "parse-prometheus-text-format"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import { type Receiver, startReceiver } from "../webhooks/support.js"
import { query } from "../login/support.js"
import { type Call, type ConfidentialClient, emailOtpLogin, registerClient, sample, tokenRequest } from "./support.js"
import { PIPELINED_READ_CONNECTIONS } from "../../src/platform/database.js"

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
    env: {
      SMTP_URL: smtp.url,
      METRICS_TOKEN: TOKEN,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      RATE_LIMIT_CLIENT_PER_MINUTE: "3",
    },
  })
  b = await app.bootstrap()
  call = app.request
  client = await registerClient(call, app.config.managementHost, b)
  const hook = await app.management("/v1/webhooks", {
    method: "POST",
    body: { environment_id: b.environment_id, url: receiver.url(), event_types: ["login.succeeded"] },
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
    for (const authorization of [
      null,
      `Bearer ${TOKEN}x`,
      `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`,
      TOKEN,
    ]) {
      const res = await scrape(authorization)
      expect(res.status).toBe(401)
      expect(res.headers["content-type"]).toBe("application/problem+json")
      expect(res.json.code).toBe("unauthorized")
      expect(res.headers["www-authenticate"]).toBe(`Bearer realm="metrics"`)
      expect(res.text).not.toContain("authservice_")
    }
    expect(
      (
        await app.request(app.config.managementHost, "/metrics", {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}` },
        })
      ).status,
    ).toBe(405)
    // Only the Management host serves it.
    expect(
      (await app.request(app.config.canonicalIssuerHost, "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).toBe(404)
  })

  it("counts a login end to end: requests by route template and status, logins by method and outcome, tokens by grant, OTP mail, webhook delivery, jobs", async () => {
    const email = uniqueEmail("metrics")
    const login = await emailOtpLogin(
      call,
      { interaction: b.interaction_domain, issuer: app.config.canonicalIssuerHost },
      b,
      client,
      email,
      (to) => smtp.waitForCode(to),
    )
    const res = await scrape()
    expect(res.status).toBe(200)
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(res.headers["cache-control"]).toBe("no-store")
    const text = await scrapeUntil(
      (t) => (sample(t, "authservice_webhook_deliveries_total", { outcome: "delivered" }) ?? 0) >= 1,
    )

    // Requests: labelled by template (never the transaction id), surface and status.
    expect(text).not.toContain(login.transactionId)
    expect(
      sample(text, "authservice_http_requests_total", {
        surface: "interaction",
        method: "POST",
        route: "/v1/auth/transactions/{transactionId}/email/verify",
        status: "400",
      }),
    ).toBe(1)
    expect(
      sample(text, "authservice_http_requests_total", {
        surface: "interaction",
        method: "POST",
        route: "/v1/auth/transactions/{transactionId}/email/verify",
        status: "200",
      }),
    ).toBe(1)
    expect(
      sample(text, "authservice_http_requests_total", {
        surface: "issuer",
        method: "POST",
        route: "/e/{environment_id}/oauth2/token",
        status: "200",
      }),
    ).toBe(1)
    expect(
      sample(text, "authservice_http_request_duration_seconds_count", {
        surface: "issuer",
        route: "/e/{environment_id}/oauth2/token",
        status: "200",
      }),
    ).toBe(1)
    expect(
      sample(text, "authservice_http_request_duration_seconds_bucket", {
        route: "/e/{environment_id}/oauth2/token",
        status: "200",
        le: "+Inf",
      }),
    ).toBe(1)
    // Domain counters.
    expect(sample(text, "authservice_logins_total", { method: "email_otp", outcome: "succeeded" })).toBe(1)
    expect(sample(text, "authservice_logins_total", { method: "email_otp", outcome: "invalid_code" })).toBe(1)
    expect(sample(text, "authservice_tokens_issued_total", { grant: "authorization_code" })).toBe(1)
    expect(sample(text, "authservice_otp_emails_total", { outcome: "sent" })).toBe(1)
    expect(sample(text, "authservice_webhook_deliveries_total", { outcome: "delivered" })).toBe(1)
    expect(sample(text, "authservice_jobs_total", { task: "send_login_code", outcome: "completed" })).toBe(1)
    expect(sample(text, "authservice_job_duration_seconds_count", { task: "send_login_code" })).toBe(1)
    // Pools: this process's SQL connections at most (a pool of 6 here, and 2 for pipelined reads), live connections, the job runner's pool.
    expect(sample(text, "authservice_db_pool_max_connections")).toBe(6 + PIPELINED_READ_CONNECTIONS)
    expect(sample(text, "authservice_db_connections", { pool: "sql", state: "active" })).toBeGreaterThanOrEqual(1)
    expect(sample(text, "authservice_worker_db_pool_connections", { state: "total" })).toBeGreaterThanOrEqual(1)
    // Process metrics from prom-client's defaults.
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0)

    // Refresh, then the old token again after the 5-second grace: a reuse detection.
    const refreshed = await tokenRequest(call, app.config.canonicalIssuerHost, b, client, {
      grant_type: "refresh_token",
      refresh_token: login.tokens.refresh_token,
    })
    expect(refreshed.status, refreshed.text).toBe(200)
    await app.advance("6 seconds")
    const reused = await tokenRequest(call, app.config.canonicalIssuerHost, b, client, {
      grant_type: "refresh_token",
      refresh_token: login.tokens.refresh_token,
    })
    expect([reused.status, reused.json.error]).toEqual([400, "invalid_grant"])
    const after = (await scrape()).text
    expect(sample(after, "authservice_tokens_issued_total", { grant: "refresh_token" })).toBe(1)
    // A refresh is a token grant, not a login: the login counts are those of the sign-in above.
    expect(after).not.toMatch(/^authservice_logins_total\{[^}]*method="refresh_token"/m)
    expect(sample(after, "authservice_logins_total", { method: "email_otp", outcome: "succeeded" })).toBe(1)
    expect(sample(after, "authservice_refresh_token_reuse_detected_total")).toBe(1)
    expect(
      sample(after, "authservice_http_requests_total", {
        surface: "issuer",
        route: "/e/{environment_id}/oauth2/token",
        status: "400",
      }),
    ).toBe(1)
  })

  it("rate-limit refusals by limit; unmatched paths share one label", async () => {
    const before =
      sample((await scrape()).text, "authservice_rate_limit_refusals_total", { bucket: "txn_create:client" }) ?? 0
    const body = {
      client_id: client.id,
      redirect_uri: client.redirectUri,
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      state: "s",
      nonce: "n",
      scope: "openid",
    }
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++)
      statuses.push((await call(b.interaction_domain, "/v1/auth/transactions", { body })).status)
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1)
    const refused = statuses.filter((s) => s === 429).length
    await call(b.interaction_domain, "/v1/no/such/path/abc123")
    await call(b.interaction_domain, "/v1/no/such/path/def456")
    const text = (await scrape()).text
    expect(sample(text, "authservice_rate_limit_refusals_total", { bucket: "txn_create:client" })).toBe(
      before + refused,
    )
    expect(
      sample(text, "authservice_http_requests_total", {
        surface: "interaction",
        method: "GET",
        route: "unmatched",
        status: "404",
      }),
    ).toBeGreaterThanOrEqual(2)
    expect(text).not.toContain("abc123")
  })

  it("queue depth and delivery lag from the job table; failed jobs counted", async () => {
    // A job of a task no worker runs, due 60 s ago by the application clock: it waits, so it lags.
    const dueAt = new Date(app.now() - 60_000)
    await query(
      app,
      "select (graphile_worker.add_job('ops_probe_unknown_task', '{}'::json, run_at := $1::timestamptz)).id::text as id",
      [dueAt],
    )
    await query(
      app,
      "select (graphile_worker.add_job('ops_probe_unknown_task', '{}'::json, run_at := $1::timestamptz)).id::text as id",
      [new Date(app.now() + 3_600_000)],
    )
    // A mail job whose payload cannot be read fails (and is retried by graphile-worker).
    await query(
      app,
      "select (graphile_worker.add_job('send_login_code', '{}'::json, max_attempts := 1)).id::text as id",
    )
    const text = await scrapeUntil(
      (t) => (sample(t, "authservice_jobs_total", { task: "send_login_code", outcome: "failed" }) ?? 0) >= 1,
    )
    expect(sample(text, "authservice_jobs_total", { task: "send_login_code", outcome: "failed" })).toBe(1)
    expect(sample(text, "authservice_job_queue_lag_seconds", { task: "ops_probe_unknown_task" })).toBeCloseTo(60, 0)
    expect(sample(text, "authservice_job_queue_depth", { state: "due" })).toBeGreaterThanOrEqual(1)
    expect(sample(text, "authservice_job_queue_depth", { state: "scheduled" })).toBeGreaterThanOrEqual(1)
    // The lag follows the application clock.
    await app.advance("30 seconds")
    expect(
      sample((await scrape()).text, "authservice_job_queue_lag_seconds", { task: "ops_probe_unknown_task" }),
    ).toBeCloseTo(90, 0)
  })

  it("the exposition parses with a Prometheus text-format parser and every family follows the naming conventions", async () => {
    const res = await scrape()
    expect(res.status).toBe(200)
    const families = parsePrometheus(res.text)
    expect(families.length).toBeGreaterThan(30)
    const byName = new Map(families.map((f) => [f.name, f]))
    // The standard process and Node.js metrics, under the names stock dashboards query.
    for (const [name, type] of [
      ["process_cpu_seconds_total", "COUNTER"],
      ["process_cpu_user_seconds_total", "COUNTER"],
      ["process_resident_memory_bytes", "GAUGE"],
      ["process_start_time_seconds", "GAUGE"],
      ["process_open_fds", "GAUGE"],
      ["nodejs_heap_size_used_bytes", "GAUGE"],
      ["nodejs_heap_size_total_bytes", "GAUGE"],
      ["nodejs_eventloop_lag_seconds", "GAUGE"],
      ["nodejs_active_handles", "GAUGE"],
      ["nodejs_gc_duration_seconds", "HISTOGRAM"],
      ["nodejs_version_info", "GAUGE"],
    ] as const) {
      expect(byName.get(name)?.type, name).toBe(type)
    }
    const problems: Array<string> = []
    for (const f of families) {
      const says = (what: string) => problems.push(`${f.name} (${f.type}): ${what}`)
      if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(f.name)) says("not a valid metric name")
      if (!/^(authservice|process|nodejs)_/.test(f.name))
        says("neither ours (authservice_) nor a standard process_/nodejs_ metric")
      if (f.name.startsWith("authservice_process_") || f.name.startsWith("authservice_nodejs_"))
        says("a default metric under our prefix")
      if (f.help.trim() === "") says("no HELP")
      if (f.type === "UNTYPED") says("no TYPE")
      // `_total` is the counter suffix, and only the counter's (Prometheus naming conventions).
      if (f.type === "COUNTER" && !f.name.endsWith("_total")) says("a counter without _total")
      if (f.type !== "COUNTER" && f.name.endsWith("_total")) says("_total on a metric that is not a counter")
      // Units in names, base units: time in seconds, sizes in bytes.
      if (/_(milliseconds|ms|minutes|hours|kilobytes|megabytes)(_|$)/.test(f.name)) says("not a base unit")
      if (/(duration|latency|lag|_time|age)(_|$)/.test(f.name) && !/_seconds(_total)?$/.test(f.name))
        says("a time without _seconds")
      if (/(memory|heap|size)/.test(f.name) && f.name.startsWith("authservice_") && !/_bytes$/.test(f.name))
        says("a size without _bytes")
      if (f.type === "HISTOGRAM" && f.metrics.length > 0 && !f.metrics.some((m) => m.buckets?.["+Inf"] !== undefined))
        says("no +Inf bucket")
      for (const m of f.metrics) {
        // Bounded label values: routes are templates in the spec's `{param}` style or `unmatched`.
        const route = m.labels?.["route"]
        if (route !== undefined && !/^(\/[A-Za-z0-9_.\-/{}]*|unmatched)$/.test(route)) says(`route label "${route}"`)
        if (route?.includes(":")) says(`route label "${route}" in find-my-way syntax`)
        for (const [label, value] of Object.entries(m.labels ?? {})) {
          if (/(cli|usr|ses|txn|evt|dlv|env|ws)_[A-Za-z0-9]{8,}/.test(value))
            says(`label ${label}="${value}" holds an id`)
        }
      }
    }
    // Each histogram series: its +Inf bucket is its count. (The parser merges the series of a
    // labelled histogram into one, a limitation of parse-prometheus-text-format 1.1.1, so
    // the series are read from the exposition's lines.)
    for (const line of res.text.split("\n")) {
      const m = /^(\w+)_count(?:\{(.*)\})? (\S+)$/.exec(line)
      if (!m || byName.get(m[1]!)?.type !== "HISTOGRAM") continue
      const labels = Object.fromEntries(
        [...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]),
      )
      if (sample(res.text, `${m[1]}_bucket`, { ...labels, le: "+Inf" }) !== Number(m[3]))
        problems.push(`${m[1]}{${m[2] ?? ""}}: the +Inf bucket is not the count`)
    }
    expect(problems).toEqual([])
    // Labelled by template, in one style: the Management routes with ids too.
    const routes = new Set(byName.get("authservice_http_requests_total")!.metrics.map((m) => m.labels?.["route"] ?? ""))
    expect(routes).toContain("/e/{environment_id}/oauth2/token")
    expect(routes).toContain("/v1/auth/transactions/{transactionId}/email/verify")
  })
})
