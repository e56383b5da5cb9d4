import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { SpanKind } from "@opentelemetry/api"
import { randomBytes } from "node:crypto"
import { Effect, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestResponse } from "../support/http.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import { type ConfidentialClient, emailOtpLogin, type LoggedIn, registerClient, sample } from "./support.js"

const exporter = new InMemorySpanExporter()
let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let client: ConfidentialClient
let login: LoggedIn

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url }, spanProcessor: new SimpleSpanProcessor(exporter) })
  b = await app.bootstrap()
  client = await registerClient(app.request, app.config.managementHost, b)
  exporter.reset()
  login = await emailOtpLogin(
    app.request,
    { interaction: b.interaction_domain, issuer: app.config.canonicalIssuerHost },
    b,
    client,
    uniqueEmail("traced"),
    (to) => smtp.waitForCode(to),
  )
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const spans = () => exporter.getFinishedSpans()
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
const descendants = (root: ReadableSpan): Array<ReadableSpan> => {
  const all = spans().filter((s) => s.spanContext().traceId === root.spanContext().traceId)
  const found: Array<ReadableSpan> = []
  const walk = (id: string) => {
    for (const child of all.filter((s) => parentOf(s) === id)) {
      found.push(child)
      walk(child.spanContext().spanId)
    }
  }
  walk(root.spanContext().spanId)
  return found
}
const serverSpan = (route: string, status: number) => {
  const found = spans().filter(
    (s) =>
      s.kind === SpanKind.SERVER &&
      s.attributes["http.route"] === route &&
      s.attributes["http.response.status_code"] === status,
  )
  expect(
    found,
    `${route} ${status}: ${spans()
      .map((s) => `${s.name} ${String(s.attributes["http.route"])}`)
      .join(", ")}`,
  ).toHaveLength(1)
  return found[0]!
}
const statementsUnder = (root: ReadableSpan) =>
  descendants(root).filter((s) => s.kind === SpanKind.CLIENT && typeof s.attributes["db.query.text"] === "string")

describe("OpenTelemetry spans of one login (in-memory exporter)", () => {
  it("each request is a server span named by method, with its route template, status and request id; its SQL statements are child spans", () => {
    const verifyRoute = "/v1/auth/transactions/{transactionId}/email/verify"
    const verified = serverSpan(verifyRoute, 200)
    const refused = serverSpan(verifyRoute, 400)
    // Named when the request arrives, before routing: the method (OpenTelemetry HTTP semantic conventions); the route is an attribute.
    expect(verified.name).toBe("POST")
    expect(parentOf(verified)).toBeUndefined()
    expect(verified.attributes["app.request_id"]).toMatch(/^req_/)
    // Two requests, two traces.
    expect(refused.spanContext().traceId).not.toBe(verified.spanContext().traceId)
    const sql = statementsUnder(verified)
    expect(sql.length).toBeGreaterThan(0)
    expect(sql.map((s) => String(s.attributes["db.query.text"])).join("\n")).toMatch(/email_challenges/)
    for (const s of sql) {
      expect(s.spanContext().traceId).toBe(verified.spanContext().traceId)
      expect(s.endTime[0] * 1e9 + s.endTime[1]).toBeLessThanOrEqual(verified.endTime[0] * 1e9 + verified.endTime[1])
    }

    const token = serverSpan("/e/{environment_id}/oauth2/token", 200)
    expect(statementsUnder(token).length).toBeGreaterThan(0)
    // Our own operation spans sit between the request and its statements.
    expect(descendants(token).map((s) => s.name)).toContain("oidc.token")
    expect(serverSpan("/v1/auth/transactions/{transactionId}/complete", 200)).toBeDefined()
  })

  it("each job attempt is a consumer span in the trace of the request that queued it, with the job's statements under it", async () => {
    const jobs = spans().filter((s) => s.name === "job send_login_code")
    expect(jobs).toHaveLength(1)
    const job = jobs[0]!
    expect(job.kind).toBe(SpanKind.CONSUMER)
    // The request that started the Email OTP challenge queued the mail: the job is in its trace, under it.
    const start = serverSpan("/v1/auth/transactions/{transactionId}/email/start", 202)
    expect(job.spanContext().traceId).toBe(start.spanContext().traceId)
    expect(descendants(start)).toContain(job)
    expect(job.attributes["job.task"]).toBe("send_login_code")
    expect(job.attributes["job.attempt"]).toBe(1)
    expect(descendants(job).map((s) => s.name)).toContain("jobs.sendLoginCode")
    expect(statementsUnder(job).length).toBeGreaterThan(0)
  })

  it("an answer the listener gives from memory is a server span too, with the application's attributes and an inbound parent", async () => {
    const userinfo = (headers: Record<string, string> = {}) =>
      app.request(app.config.canonicalIssuerHost, `/e/${b.environment_id}/oauth2/userinfo`, {
        headers: { authorization: `Bearer ${login.tokens.access_token}`, "user-agent": "trace-test", ...headers },
      })
    const answeredByListener = async () => {
      const metrics = await app.request(app.config.managementHost, "/metrics")
      return ["replayed", "computed"]
        .map((how) => sample(metrics.text, "authservice_listener_answers_total", { endpoint: "userinfo", how }) ?? 0)
        .reduce((a, n) => a + n, 0)
    }
    // The application's answer first: the listener then holds it.
    const first = await userinfo()
    expect(first.status).toBe(200)
    const before = await answeredByListener()
    const traceId = randomBytes(16).toString("hex")
    const parentId = randomBytes(8).toString("hex")
    const second = await userinfo({ traceparent: `00-${traceId}-${parentId}-01` })
    expect(second.status).toBe(200)
    expect(await answeredByListener()).toBe(before + 1)

    const route = "/e/{environment_id}/oauth2/userinfo"
    const ofRequest = (res: TestResponse) =>
      spans().filter(
        (s) => s.kind === SpanKind.SERVER && s.attributes["app.request_id"] === res.headers["x-request-id"],
      )
    const [application] = ofRequest(first)
    const [listener] = ofRequest(second)
    expect(application).toBeDefined()
    expect(listener).toBeDefined()
    expect(listener!.name).toBe("GET")
    expect(listener!.spanContext().traceId).toBe(traceId)
    expect(parentOf(listener!)).toBe(parentId)
    expect(listener!.attributes).toEqual({
      ...application!.attributes,
      "app.request_id": second.headers["x-request-id"],
    })
    expect(listener!.attributes["http.route"]).toBe(route)
    expect(listener!.attributes["http.response.status_code"]).toBe(200)
    expect(listener!.attributes["user_agent.original"]).toBe("trace-test")
    expect(listener!.status.code).toBe(application!.status.code)
  })

  it("the tracer makes spans only: no OpenTelemetry context is built around each step of a fiber (nothing reads it)", async () => {
    const tracer = await app.run(Effect.map(Tracer.Tracer, (t) => t))
    expect(tracer).not.toBe(Tracer.nativeTracer)
    expect(tracer.context).toBeUndefined()
  })

  it("no span carries the code, a token, the client secret or the email address", () => {
    const everything = JSON.stringify(
      spans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
    )
    for (const secret of [
      login.otp,
      login.authorizationCode,
      login.verifier,
      login.tokens.access_token,
      login.tokens.id_token,
      login.tokens.refresh_token,
      client.secret,
      login.email,
      b.api_key,
    ]) {
      expect(everything).not.toContain(secret)
    }
  })
})
