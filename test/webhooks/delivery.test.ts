import { createHmac } from "node:crypto"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { canonicalJson } from "../../src/platform/canonical-json.js"
import { Events } from "../../src/platform/events/service.js"
import { WebhookSender } from "../../src/webhooks/delivery/send.js"
import { Tenancy } from "../../src/tenancy/service.js"
import { RETRY_GAP_BASES_MS } from "../../src/webhooks/schedule.js"
import { type AttemptReport, deliverAttempt, fanOut } from "../../src/webhooks/tasks.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  type Behaviour,
  countRows,
  createWebhook,
  fastSender,
  type Receiver,
  type Received,
  sqlRows,
  startReceiver,
  WEBHOOK_TEST_ENV,
} from "./support.js"

// End to end against a real HTTP receiver on loopback (WEBHOOK_ALLOW_PRIVATE_TARGETS=true).
// graphile-worker picks due jobs by database time, so each attempt is run directly (its
// task Effect via app.run) after moving the TestClock to the attempt's computed run_at.

let app: TestApp
let b: Bootstrapped
const receivers: Array<Receiver> = []
beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
  b = await app.bootstrap()
})
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close()
})
afterAll(async () => {
  await app?.close()
})

const receiver = async (script: ReadonlyArray<Behaviour>) => {
  const r = await startReceiver(script)
  receivers.push(r)
  return r
}

const { sender, close: closeSender } = fastSender(1_000)
afterAll(() => closeSender())

/** Each test gets its own Environment, so its fan-outs reach only its own webhooks. */
const freshEnvironment = () =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.withTransaction(
        tenancy.createEnvironment({
          workspaceId: b.workspace_id,
          projectId: b.project_id,
          type: "test",
          name: "hooks",
        }),
      )).id
    }),
  )

const emitUserCreated = (environmentId: string, userChar = "a") =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      return yield* sql.withTransaction(
        events.emit({
          type: "user.created",
          workspaceId: b.workspace_id,
          environmentId,
          actor: { type: "api_key", id: "mky_x" },
          payload: { userId: `usr_${userChar.repeat(32)}`, method: "passkey", maskedEmail: "z***@e***.org" },
        }),
      )
    }),
  )

const attempt = (deliveryId: string) =>
  app.run(deliverAttempt(deliveryId).pipe(Effect.provideService(WebhookSender, sender))) as Promise<AttemptReport>

const jobRunAt = async (deliveryId: string) => {
  const rows = await sqlRows<{ run_at: Date }>(app, "select run_at from graphile_worker.jobs where key = $1", [
    `webhooks.deliver:${deliveryId}`,
  ])
  expect(rows).toHaveLength(1)
  return rows[0]!.run_at.getTime()
}

/** Checks one received request against the spec's Delivery rules, with the exported verifier and with node:crypto. */
const expectSigned = (r: Received, secret: string, eventId: string, sentAtMs: number) => {
  expect(r.headers["content-type"]).toBe("application/json")
  expect(r.headers["x-auth-event-id"]).toBe(eventId)
  const ts = Math.floor(sentAtMs / 1000)
  expect(r.headers["x-auth-timestamp"]).toBe(String(ts))
  const independent = `v1=${createHmac("sha256", secret).update(`${ts}.${r.rawBody}`, "utf8").digest("hex")}`
  expect(r.headers["x-auth-signature"]).toBe(independent)
  expect(verifyWebhook({ headers: r.headers, rawBody: r.rawBody, secrets: secret, now: sentAtMs })).toEqual({
    ok: true,
    eventId,
    timestampSeconds: ts,
  })
  // The body is the envelope with keys sorted recursively.
  expect(r.rawBody).toBe(canonicalJson(JSON.parse(r.rawBody)))
}

interface Run {
  readonly webhook: { id: string; secret: string }
  readonly eventId: string
  readonly reports: ReadonlyArray<AttemptReport>
  readonly sentAt: ReadonlyArray<number>
  readonly gaps: ReadonlyArray<number>
  readonly receiver: Receiver
}

/** Creates a webhook, emits one event, fans out, and runs every attempt at its computed run_at. */
const scenario = async (script: ReadonlyArray<Behaviour>): Promise<Run> => {
  const r = await receiver(script)
  const env = await freshEnvironment()
  const webhook = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
  const envelope = await emitUserCreated(env)
  const created = await app.run(fanOut(envelope.eventId))
  expect(created).toHaveLength(1)
  const reports: Array<AttemptReport> = []
  const sentAt: Array<number> = []
  const gaps: Array<number> = []
  let next: string | undefined = created[0]
  while (next !== undefined) {
    sentAt.push(app.now())
    const report = await attempt(next)
    reports.push(report)
    if (report.verdict.status === "failed") {
      const runAt = await jobRunAt(report.nextDeliveryId!)
      expect(runAt).toBe(report.verdict.runAt.getTime())
      const gap = runAt - app.now()
      const base = RETRY_GAP_BASES_MS[report.attempt - 1]!
      expect(gap).toBeGreaterThanOrEqual(base / 2)
      expect(gap).toBeLessThan(base)
      gaps.push(gap)
      await app.advance(gap)
    }
    next = report.nextDeliveryId
  }
  for (const [i, req] of r.received.entries()) expectSigned(req, webhook.secret, envelope.eventId, sentAt[i]!)
  const body = JSON.parse(r.received[0]!.rawBody)
  expect(body).toEqual(JSON.parse(JSON.stringify(envelope)))
  return { webhook, eventId: envelope.eventId, reports, sentAt, gaps, receiver: r }
}

const history = async (webhookId: string) => {
  const res = await app.management(`/v1/webhooks/${webhookId}/deliveries?limit=100`)
  expect(res.status).toBe(200)
  return [...res.json.data].reverse() as Array<{
    attempt: number
    status: string
    response_status_code: number | null
    occurred_at: string
    event_id: string
    duration_ms: number | null
  }>
}

describe("retry scenarios (one scripted receiver each)", () => {
  it("500 -> time-out -> 200: delivered at send 3", async () => {
    const run = await scenario([{ status: 500 }, { hold: true }, { status: 200 }])
    expect(run.receiver.received).toHaveLength(3)
    expect(run.reports.map((r) => r.verdict.status)).toEqual(["failed", "failed", "delivered"])
    const h = await history(run.webhook.id)
    expect(h.map((d) => [d.attempt, d.status, d.response_status_code])).toEqual([
      [1, "failed", 500],
      [2, "failed", null],
      [3, "delivered", 200],
    ])
    expect(h.map((d) => Date.parse(d.occurred_at))).toEqual(run.sentAt)
    expect(h.every((d) => d.event_id === run.eventId && typeof d.duration_ms === "number")).toBe(true)
    expect(run.gaps).toHaveLength(2)
  })

  it("400, 400, 400: exhausted at send 3", async () => {
    const run = await scenario([{ status: 400 }])
    expect(run.receiver.received).toHaveLength(3)
    const h = await history(run.webhook.id)
    expect(h.map((d) => [d.attempt, d.status, d.response_status_code])).toEqual([
      [1, "failed", 400],
      [2, "failed", 400],
      [3, "exhausted", 400],
    ])
  })

  it("410: exhausted at send 1", async () => {
    const run = await scenario([{ status: 410 }])
    expect(run.receiver.received).toHaveLength(1)
    const h = await history(run.webhook.id)
    expect(h.map((d) => [d.attempt, d.status, d.response_status_code])).toEqual([[1, "exhausted", 410]])
    expect(
      await countRows(
        app,
        "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.deliver' and key in (select 'webhooks.deliver:' || id from webhook_deliveries where webhook_id = $1 and attempt > 1)",
        [run.webhook.id],
      ),
    ).toBe(0)
  })

  it("429 x 8: exhausted after 8 sends, with the 7 gaps 30 s ... 6 h each within 50-100 % of its base", async () => {
    const run = await scenario([{ status: 429 }])
    expect(run.receiver.received).toHaveLength(8)
    const h = await history(run.webhook.id)
    expect(h.map((d) => d.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(h.map((d) => d.status)).toEqual([...Array(7).fill("failed"), "exhausted"])
    expect(h.every((d) => d.response_status_code === 429)).toBe(true)
    expect(run.gaps).toHaveLength(7)
    for (const [i, gap] of run.gaps.entries()) {
      expect(gap).toBeGreaterThanOrEqual(RETRY_GAP_BASES_MS[i]! / 2)
      expect(gap).toBeLessThan(RETRY_GAP_BASES_MS[i]!)
      expect(Date.parse(h[i + 1]!.occurred_at) - Date.parse(h[i]!.occurred_at)).toBe(gap)
    }
  })
})

describe("delivery rules", () => {
  it("a disabled webhook gets no further sends; re-enabled it receives new events", async () => {
    const r = await receiver([{ status: 503 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const [first] = await app.run(fanOut((await emitUserCreated(env, "b")).eventId))
    const report = await attempt(first!)
    expect(report.verdict.status).toBe("failed")
    await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "disabled" } })
    await app.advance("1 minute")
    const second = await attempt(report.nextDeliveryId!)
    expect(second.verdict).toEqual({ status: "exhausted", why: "webhook_disabled" })
    expect(r.received).toHaveLength(1)
    expect((await history(w.id)).map((d) => [d.attempt, d.status])).toEqual([
      [1, "failed"],
      [2, "exhausted"],
    ])
    // while disabled, new events are not fanned out to it
    expect(await app.run(fanOut((await emitUserCreated(env, "c")).eventId))).toEqual([])
    await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "active" } })
    r.script([{ status: 204 }])
    const [again] = await app.run(fanOut((await emitUserCreated(env, "d")).eventId))
    expect((await attempt(again!)).verdict).toEqual({ status: "delivered" })
    expect(r.received).toHaveLength(2)
  })

  it("a deleted webhook gets no further sends", async () => {
    const r = await receiver([{ status: 500 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const [first] = await app.run(fanOut((await emitUserCreated(env, "e")).eventId))
    const report = await attempt(first!)
    await app.management(`/v1/webhooks/${w.id}`, { method: "DELETE" })
    await app.advance("1 minute")
    expect((await attempt(report.nextDeliveryId!)).verdict).toEqual({ status: "exhausted", why: "webhook_deleted" })
    expect(r.received).toHaveLength(1)
  })

  it("the same attempt run twice at once records one outcome and schedules one next attempt", async () => {
    const r = await receiver([{ status: 502 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const [first] = await app.run(fanOut((await emitUserCreated(env, "f")).eventId))
    const reports = await Promise.all([attempt(first!), attempt(first!)])
    const rows = await sqlRows<{ attempt: number; status: string }>(
      app,
      "select attempt, status from webhook_deliveries where webhook_id = $1 order by attempt",
      [w.id],
    )
    expect(rows).toEqual([
      { attempt: 1, status: "failed" },
      { attempt: 2, status: "pending" },
    ])
    expect(reports.filter((x) => x.nextDeliveryId !== undefined)).toHaveLength(1)
    expect(
      await countRows(
        app,
        "select 1 from graphile_worker.jobs where key in (select 'webhooks.deliver:' || id from webhook_deliveries where webhook_id = $1 and attempt = 2)",
        [w.id],
      ),
    ).toBe(1)
    // at least once: both runs may have sent; a settled attempt run again sends nothing
    const sends = r.received.length
    expect(sends).toBeGreaterThanOrEqual(1)
    expect((await attempt(first!)).verdict).toEqual({ status: "skipped" })
    expect(r.received).toHaveLength(sends)
  })

  it("after rotate-secret new sends are signed with the new secret; a verifier holding both secrets accepts them", async () => {
    const r = await receiver([{ status: 200 }, { status: 200 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    // A send before the rotation (the worker then holds the old secret's signing key).
    const before = await emitUserCreated(env, "k")
    await attempt((await app.run(fanOut(before.eventId)))[0]!)
    expectSigned(r.received[0]!, w.secret, before.eventId, app.now())
    const rotated = (await app.management(`/v1/webhooks/${w.id}/rotate-secret`, { method: "POST" })).json
    const envelope = await emitUserCreated(env, "g")
    const [id] = await app.run(fanOut(envelope.eventId))
    await attempt(id!)
    const req = r.received[1]!
    expectSigned(req, rotated.secret, envelope.eventId, app.now())
    expect(
      verifyWebhook({ headers: req.headers, rawBody: req.rawBody, secrets: [w.secret, rotated.secret], now: app.now() })
        .ok,
    ).toBe(true)
    expect(verifyWebhook({ headers: req.headers, rawBody: req.rawBody, secrets: [w.secret], now: app.now() })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  it("delivery records older than 90 days are removed by housekeeping; younger ones stay", async () => {
    const r = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const [id] = await app.run(fanOut((await emitUserCreated(env, "h")).eventId))
    await attempt(id!)
    await app.advance("89 days")
    await app.run(housekeeping)
    expect(await countRows(app, "select 1 from webhook_deliveries where webhook_id = $1", [w.id])).toBe(1)
    await app.advance("1 day")
    await app.advance("1 second")
    await app.run(housekeeping)
    expect(await countRows(app, "select 1 from webhook_deliveries where webhook_id = $1", [w.id])).toBe(0)
  })
})

describe("POST /v1/webhooks/{id}/test against a real receiver", () => {
  it("sends a signed webhook.test now: 200 {delivered, response_status, response_time_ms, requested_at}; not recorded, not retried", async () => {
    const r = await receiver([{ status: 202 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const res = await app.management(`/v1/webhooks/${w.id}/test`, {
      method: "POST",
      body: { event_type: "user.created" },
    })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      delivered: true,
      response_status: 202,
      response_time_ms: expect.any(Number),
      requested_at: new Date(app.now()).toISOString(),
    })
    expect(r.received).toHaveLength(1)
    const body = JSON.parse(r.received[0]!.rawBody)
    expect(body).toMatchObject({
      type: "webhook.test",
      version: 1,
      workspaceId: b.workspace_id,
      environmentId: env,
      payload: { webhookId: w.id, eventType: "user.created" },
    })
    expect(Object.keys(body).sort()).toEqual([
      "actor",
      "environmentId",
      "eventId",
      "occurredAt",
      "payload",
      "trace",
      "type",
      "version",
      "workspaceId",
    ])
    expectSigned(r.received[0]!, w.secret, body.eventId, app.now())
    expect(await countRows(app, "select 1 from webhook_deliveries where webhook_id = $1", [w.id])).toBe(0)
    expect(await countRows(app, "select 1 from event_outbox where id = $1", [body.eventId])).toBe(0)
  })

  it("an empty body is accepted; a non-2xx answer is reported, not retried", async () => {
    const r = await receiver([{ status: 500 }])
    const env = await freshEnvironment()
    const w = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const res = await app.management(`/v1/webhooks/${w.id}/test`, { method: "POST" })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ delivered: false, response_status: 500 })
    expect(r.received).toHaveLength(1)
    expect(JSON.parse(r.received[0]!.rawBody).payload).toEqual({ webhookId: w.id })
    expect(
      await countRows(
        app,
        "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.deliver' and key in (select 'webhooks.deliver:' || id from webhook_deliveries where webhook_id = $1)",
        [w.id],
      ),
    ).toBe(0)
  })

  it("no response (connection refused): delivered false, nulls, still HTTP 200", async () => {
    const r = await receiver([{ status: 200 }])
    const url = r.url()
    await r.close()
    receivers.splice(receivers.indexOf(r), 1)
    const w = await createWebhook(app, { environment_id: await freshEnvironment(), url, event_types: ["user.created"] })
    const res = await app.management(`/v1/webhooks/${w.id}/test`, { method: "POST", body: {} })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      delivered: false,
      response_status: null,
      response_time_ms: null,
      requested_at: new Date(app.now()).toISOString(),
    })
  })
})
