import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import type { Bootstrapped } from "../support/app.js"
import { send } from "../support/http.js"
import { cloneDatabase } from "../support/template.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import {
  type Call,
  type ConfidentialClient,
  emailOtpLogin,
  type LoggedIn,
  registerClient,
  tokenRequest,
} from "./support.js"

// Node with tsx as a loader, not the tsx CLI: the CLI relays SIGTERM and SIGKILLs a child that
// does not acknowledge it within 60 ms, which a loaded machine can miss.
const NODE_ARGS = ["--import", "tsx"]
const MASTER_KEY = randomBytes(32).toString("base64url")
const METRICS_TOKEN = randomBytes(24).toString("base64url")

/** A local OTLP/HTTP collector: keeps the body of every export it receives. */
const startCollector = async () => {
  const bodies: Array<{ path: string; contentType: string | undefined; body: string }> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      bodies.push({
        path: req.url ?? "",
        contentType: req.headers["content-type"],
        body: Buffer.concat(chunks).toString("utf8"),
      })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () => new Promise((r) => server.close(r)),
  }
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
    env: { PATH: process.env["PATH"]!, HOME: process.env["HOME"] ?? "/root", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (c: Buffer) => {
    out.stdout += c
  })
  child.stderr!.on("data", (c: Buffer) => {
    out.stderr += c
  })
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
  return { child, out, exited }
}

let smtp: SmtpSink
let collector: Awaited<ReturnType<typeof startCollector>>
let server: { child: ChildProcess; out: { stdout: string; stderr: string }; exited: Promise<number | null> }
let port: number
let b: Bootstrapped
let client: ConfidentialClient
let login: LoggedIn
let lines: Array<Record<string, unknown>>
let refreshToken: string
const probes = { pathEmail: `someone.${process.pid}@example.org`, pathToken: randomBytes(32).toString("base64url") }

beforeAll(async () => {
  smtp = await startSmtpSink()
  collector = await startCollector()
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  port = await freePort()
  const env = {
    NODE_ENV: "production",
    DATABASE_URL: database.url,
    MASTER_KEY,
    PORT: String(port),
    SMTP_URL: smtp.url,
    METRICS_TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    // JSON, so the test can find the hex trace id in what the collector received.
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "authservice-logs-test",
    // Revocations of one client from one address: the 4th is refused, and its line names the limit.
    RATE_LIMIT_TOKEN_PER_MINUTE: "3",
  }
  const cli = run(["src/cli.ts", "bootstrap", "--json"], env)
  expect(await cli.exited, cli.out.stderr).toBe(0)
  b = JSON.parse(cli.out.stdout.trim())
  // Server and worker in one process (npm start), as in production but with one Postgres.
  server = run(["src/start.ts"], env)
  const deadline = Date.now() + 60_000
  while (
    !(await send(port, `api.localhost:${port}`, "/readyz").then(
      (r) => r.status === 200,
      () => false,
    ))
  ) {
    if (Date.now() > deadline) throw new Error(server.out.stdout + server.out.stderr)
    await new Promise((r) => setTimeout(r, 200))
  }
  const call: Call = (host, path, options) => send(port, host, path, options)
  client = await registerClient(call, `api.localhost:${port}`, b)
  login = await emailOtpLogin(
    call,
    { interaction: b.interaction_domain, issuer: `localhost:${port}` },
    b,
    client,
    uniqueEmail("logs"),
    (to) => smtp.waitForCode(to),
  )
  const refreshed = await tokenRequest(call, `localhost:${port}`, b, client, {
    grant_type: "refresh_token",
    refresh_token: login.tokens.refresh_token,
  })
  expect(refreshed.status).toBe(200)
  refreshToken = refreshed.json.refresh_token
  // Requests that carry secrets where a careless log would print them: query strings, bearer
  // headers, paths; and failures whose text echoes their input.
  await call(`localhost:${port}`, `/e/${b.environment_id}/oauth2/userinfo?access_token=${login.tokens.access_token}`, {
    headers: { authorization: `Bearer ${login.tokens.access_token}` },
  })
  await call(`localhost:${port}`, `/e/${b.environment_id}/oauth2/userinfo`, {
    headers: { authorization: `Bearer ${login.tokens.id_token}` },
  })
  await call(b.interaction_domain, `/v1/lookup/${probes.pathEmail}/${probes.pathToken}`)
  await call(b.interaction_domain, "/v1/auth/transactions", {
    body: { client_id: client.id, email: login.email, code: login.otp },
  })
  await call(`api.localhost:${port}`, "/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  await call(`localhost:${port}`, `/e/${b.environment_id}/oauth2/revoke`, {
    method: "POST",
    body: new URLSearchParams({ token: refreshToken }).toString(),
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`,
      "x-request-id": login.email,
    },
  })
  for (let i = 0; i < 3; i++) {
    await call(`localhost:${port}`, `/e/${b.environment_id}/oauth2/revoke`, {
      method: "POST",
      body: new URLSearchParams({ token: "unknown" }).toString(),
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`,
      },
    })
  }
  server.child.kill("SIGTERM")
  expect(await server.exited).toBe(0)
  lines = server.out.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}, 120_000)

afterAll(async () => {
  if (server && server.child.exitCode === null) server.child.kill("SIGKILL")
  await smtp?.close()
  await collector?.close()
})

describe("production logs (NODE_ENV=production)", () => {
  it("every stdout line is one JSON object with time, level and msg; stderr is empty", () => {
    expect(lines.length).toBeGreaterThan(10)
    for (const line of lines) expect(Object.keys(line)).toEqual(expect.arrayContaining(["level", "msg"]))
    expect(server.out.stderr).toBe("")
  })

  it("one line per request: request id, trace id, surface, route template, status, duration", () => {
    const requests = lines.filter((l) => l["msg"] === "request")
    const verify = requests.filter((l) => l["route"] === "/v1/auth/transactions/{transactionId}/email/verify")
    expect(verify.map((l) => l["status"]).sort()).toEqual([200, 400])
    for (const line of requests) {
      expect(line["time"]).toMatch(/^\d{4}-\d\d-\d\dT/)
      expect(line["request_id"]).toMatch(/^req_[a-z2-7]{32}$/)
      expect(line["trace_id"]).toMatch(/^[0-9a-f]{32}$/)
      expect(typeof line["duration_ms"]).toBe("number")
      expect(["management", "issuer", "interaction", "probe"]).toContain(line["surface"])
    }
    const token = requests.find((l) => l["route"] === "/e/{environment_id}/oauth2/token" && l["status"] === 200)!
    expect(token).toBeDefined()
    // The trace id is the one exported to the OTLP collector for that request.
    expect(collector.bodies.some((e) => e.path === "/v1/traces" && e.body.includes(String(token["trace_id"])))).toBe(
      true,
    )
    expect(collector.bodies.map((e) => e.body).join("")).toContain("authservice-logs-test")
    // Distinct requests, distinct request ids.
    expect(new Set(requests.map((l) => l["request_id"])).size).toBe(requests.length)
  })

  it("a 429 line names the limit that refused; other lines carry no limit", () => {
    const requests = lines.filter((l) => l["msg"] === "request")
    const revokes = requests.filter((l) => l["route"] === "/e/{environment_id}/oauth2/revoke")
    expect(revokes.map((l) => [l["status"], l["limit"]])).toEqual([
      [200, undefined],
      [200, undefined],
      [200, undefined],
      [429, "revoke:client+ip"],
    ])
    expect(requests.filter((l) => l["status"] !== 429).every((l) => !("limit" in l))).toBe(true)
  })

  it("one line per job attempt, with the job's trace id", () => {
    const jobs = lines.filter((l) => l["msg"] === "job" && l["task"] === "send_login_code")
    expect(jobs).toHaveLength(1)
    expect(jobs[0]).toMatchObject({ level: "info", outcome: "completed", attempt: 1 })
    expect(jobs[0]!["trace_id"]).toMatch(/^[0-9a-f]{32}$/)
  })

  it("never a secret, token, code or full email address", () => {
    const output = server.out.stdout + server.out.stderr
    const secrets = {
      otp: login.otp,
      wrongOtp: login.wrongOtp,
      authorizationCode: login.authorizationCode,
      verifier: login.verifier,
      accessToken: login.tokens.access_token,
      idToken: login.tokens.id_token,
      refreshToken: login.tokens.refresh_token,
      rotated: refreshToken,
      clientSecret: client.secret,
      apiKey: b.api_key,
      masterKey: MASTER_KEY,
      metricsToken: METRICS_TOKEN,
      email: login.email,
      pathEmail: probes.pathEmail,
      pathToken: probes.pathToken,
      // Token parts that would survive a truncation.
      accessTokenSignature: login.tokens.access_token.split(".")[2]!,
      refreshSecret: login.tokens.refresh_token.split(".").pop()!,
    }
    for (const [name, secret] of Object.entries(secrets)) expect(output.includes(secret), name).toBe(false)
    // Masked forms are fine, and show the net is there.
    expect(output).toContain("s***@e***.org")
  })
})
