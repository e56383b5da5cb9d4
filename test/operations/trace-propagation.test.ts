import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, it } from "vitest"
import { startApp } from "../support/app.js"
import { sqlRows, startReceiver } from "../webhooks/support.js"
import { type CollectedSpan, startOtlpCollector } from "./otlp-collector.js"

// One trace from the request to the webhook receiver (docs/decisions/observability.md, "Traces"):
// the request's server span, the graphile-worker jobs it causes (the fan-out, run by the real
// worker, and the retry job the fan-out queues), each send's client span and the `traceparent`
// the receiver is sent.

const SERVER = 2
const CLIENT = 3
const CONSUMER = 5

const closers: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
})

/** Waits until `check` holds (the worker runs jobs in real time). */
const eventually = async <T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe("trace context across the request, its jobs and the webhook (in-process OTLP collector, real worker)", () => {
  it("a request that queues a webhook delivery: the server span, the fan-out job, its retry job and both sends share the caller's trace id, and the receiver is sent each send's traceparent", async () => {
    const collector = await startOtlpCollector()
    closers.push(collector.close)
    // The first send fails: its retry is a `webhooks.deliver` job that the fan-out job queues.
    const receiver = await startReceiver([{ status: 503 }, { status: 204 }])
    closers.push(receiver.close)
    const app = await startApp({
      worker: true,
      env: {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "authservice-trace-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=ci,service.namespace=auth%20team,service.name=ignored",
      },
    })
    let closed = false
    closers.push(async () => (closed ? undefined : app.close()))
    const b = await app.bootstrap()
    const hook = await app.management("/v1/webhooks", {
      method: "POST",
      body: { environment_id: b.environment_id, url: receiver.url(), event_types: ["user.created"] },
    })
    expect(hook.status, hook.text).toBe(201)

    // The caller's own trace context (W3C Trace Context): the request continues it.
    const traceId = randomBytes(16).toString("hex")
    const callerSpanId = randomBytes(8).toString("hex")
    const created = await app.management("/v1/users", {
      method: "POST",
      headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: { environment_id: b.environment_id, email: `traced.${process.pid}@example.com` },
    })
    expect(created.status, created.text).toBe(201)
    const sends = () => receiver.received.filter((r) => r.rawBody.includes('"user.created"'))
    await eventually("the first send", () => sends()[0])
    // The retry job carries the fan-out job's traceparent in its payload.
    const retry = await eventually(
      "the retry job",
      async () =>
        (
          await sqlRows<{ payload: { traceparent?: string } }>(
            app,
            `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
             where t.identifier = 'webhooks.deliver'`,
          )
        )[0]?.payload,
    )
    expect(retry.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
    // Its time comes (the application clock, then the job's run_at), and the worker runs it.
    await app.advance("31 seconds")
    await sqlRows(
      app,
      `update graphile_worker._private_jobs set run_at = now() where task_id =
         (select id from graphile_worker._private_tasks where identifier = 'webhooks.deliver')`,
    )
    const delivery = await eventually("the retried delivery", () => sends()[1])
    // Closing the app flushes the batch span processor to the collector.
    await app.close()
    closed = true

    const spans = collector.spans()
    const inTrace = spans.filter((s) => s.traceId === traceId)
    const byId = new Map(inTrace.map((s) => [s.spanId, s]))
    const ancestorsOf = (s: CollectedSpan) => {
      const seen: Array<string> = []
      for (let p = s.parentSpanId; p !== undefined; p = byId.get(p)?.parentSpanId) seen.push(p)
      return seen
    }
    const one = (what: string, pick: (s: CollectedSpan) => boolean) => {
      const found = inTrace.filter(pick)
      expect(found, `${what} in ${inTrace.map((s) => s.name).join(", ")}`).toHaveLength(1)
      return found[0]!
    }
    const server = one("the server span", (s) => s.kind === SERVER && s.attributes["http.route"] === "/v1/users")
    expect(server.parentSpanId).toBe(callerSpanId)
    // The fan-out job makes the first attempt itself (src/webhooks/tasks.ts); the retry is a
    // `webhooks.deliver` job that it queued with its own traceparent.
    const fanout = one("the fan-out job", (s) => s.name === "job webhooks.fanout")
    const deliver = one("the retry job", (s) => s.name === "job webhooks.deliver")
    const firstSend = one(
      "the first send",
      (s) =>
        s.name === "webhooks.send" &&
        ancestorsOf(s).includes(fanout.spanId) &&
        !ancestorsOf(s).includes(deliver.spanId),
    )
    const send = one("the retried send", (s) => s.name === "webhooks.send" && ancestorsOf(s).includes(deliver.spanId))
    expect([fanout.kind, deliver.kind, firstSend.kind, send.kind]).toEqual([CONSUMER, CONSUMER, CLIENT, CLIENT])
    // Parent links: the caller -> the request -> ... -> the fan-out job -> ... -> the retry job -> ... -> the send.
    const ancestors = ancestorsOf
    expect(ancestors(fanout)).toContain(server.spanId)
    expect(ancestors(deliver)).toContain(fanout.spanId)
    expect(retry.traceparent).toBe(`00-${traceId}-${ancestors(deliver)[0]}-01`)
    expect(sends()[0]!.headers["traceparent"]).toBe(`00-${traceId}-${firstSend.spanId}-01`)
    // What the receiver saw: the delivery span, in the request's trace.
    expect(delivery.headers["traceparent"]).toBe(`00-${traceId}-${send.spanId}-01`)

    // The resource: OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES;
    // the other attributes are percent-decoded; the SDK's own attributes are kept.
    expect(server.resource).toMatchObject({
      "service.name": "authservice-trace-test",
      "deployment.environment.name": "ci",
      "service.namespace": "auth team",
      "telemetry.sdk.language": "nodejs",
    })
    expect(new Set(collector.exports.map((e) => `${e.path} ${e.contentType}`))).toEqual(
      new Set(["/v1/traces application/json"]),
    )
  }, 60_000)

  it("the default protocol is http/protobuf (the OTLP exporter specification's default)", async () => {
    const collector = await startOtlpCollector()
    closers.push(collector.close)
    const app = await startApp({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom/traces` } })
    const traceId = randomBytes(16).toString("hex")
    const res = await app.request(app.config.managementHost, "/healthz", {
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
    })
    expect(res.status).toBe(200)
    await app.close()
    expect(collector.exports.length).toBeGreaterThan(0)
    for (const e of collector.exports) {
      // _TRACES_ENDPOINT is used as given (no /v1/traces appended).
      expect([e.path, e.contentType]).toEqual(["/custom/traces", "application/x-protobuf"])
    }
    // The trace id travels as its 16 bytes in the protobuf encoding.
    expect(collector.exports.some((e) => e.body.includes(Buffer.from(traceId, "hex")))).toBe(true)
  }, 60_000)
})
