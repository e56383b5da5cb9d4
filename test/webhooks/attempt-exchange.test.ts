import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { TASKS } from "../../src/platform/jobs.js"
import { makeSender, WebhookSender } from "../../src/webhooks/delivery/send.js"
import { RESPONSE_SNIPPET_BYTES } from "../../src/webhooks/delivery/exchange.js"
import { deliverAttempt, EXCHANGE_RETENTION_MS } from "../../src/webhooks/tasks.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"
import { expectProblem } from "../management/support/problem.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeDashboardSession, makeKey } from "../support/tenancy.js"
import { type Behaviour, createWebhook, type Receiver, sqlRows, startReceiver, WEBHOOK_TEST_ENV } from "./support.js"

// The delivery log per attempt (decisions, "Attempt request and response"): the real
// graphile-worker sends `user.blocked` (blocked through the Management API) to a real
// receiver; GET /v1/webhooks/{id}/deliveries/{deliveryId} shows the request as the receiver got
// it and the response as it answered, or the transport error.

let app: TestApp
let b: Bootstrapped
const receivers: Array<Receiver> = []
const closers: Array<() => void> = []
beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV, worker: true })
  b = await app.bootstrap()
})
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close()
  for (const close of closers.splice(0)) close()
})
afterAll(async () => {
  await app?.close()
})

const receiver = async (script: ReadonlyArray<Behaviour>) => {
  const r = await startReceiver(script)
  receivers.push(r)
  return r
}

interface Delivery {
  id: string
  attempt: number
  status: string
  response_status_code: number | null
  event_type: string
}

/** A user of the bootstrap Environment blocked through the Management API: the worker fans out `user.blocked`. */
const blockAUser = async (n: string) => {
  const created = await app.management("/v1/users", {
    method: "POST",
    body: { environment_id: b.environment_id, email: `blocked-${n}@example.com` },
  })
  expect(created.status, created.text).toBe(201)
  const blocked = await app.management(`/v1/users/${created.json.id}/block?environment_id=${b.environment_id}`, {
    method: "POST",
    body: { reason: "test" },
  })
  expect(blocked.status, blocked.text).toBe(200)
  return created.json.id as string
}

/** The webhook's settled attempts, once `count` of them are (the worker runs on its own). */
const settledAttempts = async (webhookId: string, count: number) => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await app.management(`/v1/webhooks/${webhookId}/deliveries`)
    expect(res.status, res.text).toBe(200)
    const settled = (res.json.data as Array<Delivery>).filter((d) => d.status !== "pending")
    if (settled.length >= count) return settled
    if (Date.now() > deadline) throw new Error(`waited 20 s for ${count} settled attempts: ${res.text}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const detail = (webhookId: string, deliveryId: string, headers?: Record<string, string>) =>
  app.management(`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`, headers ? { headers } : {})

/** A webhook of its own for `user.blocked` (earlier tests' webhooks are disabled so each test sees its own attempts). */
const hookFor = async (url: string) => {
  const existing = await app.management(`/v1/webhooks?environment_id=${b.environment_id}&limit=100`)
  for (const w of existing.json.data as Array<{ id: string; status: string }>) {
    if (w.status === "active")
      await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "disabled" } })
  }
  return createWebhook(app, { environment_id: b.environment_id, url, event_types: ["user.blocked"] })
}

/**
 * Runs the webhook's pending attempt (number `attempt`) now, through the delivery task with a
 * sender of its own (a 500 ms limit; the SSRF guard on or off), and answers its detail.
 */
const sendNextAttempt = async (webhookId: string, attempt: number, options: { allowPrivateTargets: boolean }) => {
  const pending = (await app.management(`/v1/webhooks/${webhookId}/deliveries?status=pending`)).json.data[0] as Delivery
  expect(pending.attempt).toBe(attempt)
  const made = makeSender({ timeoutMs: 500, maxResponseBytes: 64 * 1024, ...options })
  closers.push(made.close)
  await app.run(deliverAttempt(pending.id).pipe(Effect.provideService(WebhookSender, made.sender)))
  return (await detail(webhookId, pending.id)).json
}

describe("a webhook attempt's request and response (GET /v1/webhooks/{id}/deliveries/{deliveryId})", () => {
  it("2xx: the request exactly as the receiver got it (signed envelope, signature headers) and the response's status, headers (no cookies) and body", async () => {
    const r = await receiver([
      {
        status: 200,
        body: '{"received":true}',
        headers: { "content-type": "application/json", "x-receiver-trace": "abc", "set-cookie": "session=secret" },
      },
    ])
    const hook = await hookFor(r.url())
    const userId = await blockAUser("ok")
    const [attempt] = await settledAttempts(hook.id, 1)
    expect(attempt).toMatchObject({ status: "delivered", response_status_code: 200, attempt: 1 })
    const got = r.received[0]!

    const res = await detail(hook.id, attempt!.id)
    expect(res.status, res.text).toBe(200)
    const d = res.json
    // The spec's record fields, unchanged, beside the extensions.
    expect(d).toMatchObject({ id: attempt!.id, webhook_id: hook.id, event_type: "user.blocked", status: "delivered" })
    expect(d.request).toEqual({
      url: r.url(),
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": got.headers["user-agent"],
        "x-auth-event-id": got.headers["x-auth-event-id"],
        "x-auth-timestamp": got.headers["x-auth-timestamp"],
        "x-auth-signature": got.headers["x-auth-signature"],
        "content-length": got.headers["content-length"],
      },
      body: got.rawBody,
    })
    expect(JSON.parse(d.request.body)).toMatchObject({ type: "user.blocked", payload: { userId } })
    // What is shown verifies with the webhook's secret, as the receiver's copy does.
    expect(
      verifyWebhook({
        rawBody: d.request.body,
        headers: d.request.headers,
        secrets: [hook.secret],
        now: Number(d.request.headers["x-auth-timestamp"]) * 1000,
      }),
    ).toMatchObject({ ok: true, eventId: got.headers["x-auth-event-id"] })
    expect(d.response).toMatchObject({
      status_code: 200,
      body: '{"received":true}',
      body_truncated: false,
      headers: { "content-type": "application/json", "x-receiver-trace": "abc" },
    })
    expect(d.response.headers["set-cookie"]).toBeUndefined()
    expect(d.response.duration_ms).toEqual(expect.any(Number))
    expect(d.transport_error).toBeNull()

    // The list keeps the spec's fields only.
    const list = await app.management(`/v1/webhooks/${hook.id}/deliveries`)
    expect(Object.keys(list.json.data[0]).sort()).toEqual(
      [
        "attempt",
        "duration_ms",
        "event_id",
        "event_type",
        "id",
        "occurred_at",
        "response_status_code",
        "status",
        "webhook_id",
      ].sort(),
    )
    // The secret is stored nowhere in the record.
    const [row] = await sqlRows<{ text: string }>(
      app,
      "select row_to_json(d)::text as text from webhook_deliveries d where id = $1",
      [attempt!.id],
    )
    expect(row!.text).not.toContain(hook.secret)
  })

  it("500 with a body longer than 4 KiB: the first 4 KiB (a character cut by the limit is dropped), truncated", async () => {
    // One ASCII byte, then 2-byte characters: the 4096-byte limit falls inside one.
    const long = `a${"é".repeat(3000)}`
    const r = await receiver([{ status: 500, body: long, headers: { "content-type": "text/plain; charset=utf-8" } }])
    const hook = await hookFor(r.url())
    await blockAUser("fivehundred")
    const [attempt] = await settledAttempts(hook.id, 1)
    expect(attempt).toMatchObject({ status: "failed", response_status_code: 500 })
    const res = await detail(hook.id, attempt!.id)
    expect(res.status, res.text).toBe(200)
    expect(res.json.response).toMatchObject({ status_code: 500, body_truncated: true })
    expect(res.json.response.body).toBe(`a${"é".repeat((RESPONSE_SNIPPET_BYTES - 2) / 2)}`)
    expect(Buffer.byteLength(res.json.response.body)).toBe(RESPONSE_SNIPPET_BYTES - 1)
    expect(res.json.request.body).toBe(r.received[0]!.rawBody)
    expect(res.json.transport_error).toBeNull()
  })

  it("no response: connection refused (worker), then a time-out and the SSRF guard (the next attempts), each with its request; the URL is the one each attempt used", async () => {
    // A port nobody listens on any more: connection refused.
    const gone = await startReceiver([{ status: 200 }])
    const refusedUrl = gone.url()
    await gone.close()
    const hook = await hookFor(refusedUrl)
    await blockAUser("refused")
    const [first] = await settledAttempts(hook.id, 1)
    expect(first).toMatchObject({ status: "failed", response_status_code: null, attempt: 1 })
    const refused = (await detail(hook.id, first!.id)).json
    expect(refused.response).toBeNull()
    expect(refused.transport_error).toEqual({ code: "connection_refused", message: expect.any(String) })
    expect(refused.request).toMatchObject({ url: refusedUrl, method: "POST" })
    expect(JSON.parse(refused.request.body)).toMatchObject({ type: "user.blocked" })

    // Attempt 2 goes to a receiver that never answers (a sender with a 500 ms limit).
    const silent = await receiver([{ hold: true }])
    const patched = await app.management(`/v1/webhooks/${hook.id}`, { method: "PATCH", body: { url: silent.url() } })
    expect(patched.status, patched.text).toBe(200)
    const timedOut = await sendNextAttempt(hook.id, 2, { allowPrivateTargets: true })
    expect(timedOut).toMatchObject({ status: "failed", attempt: 2, response: null })
    expect(timedOut.transport_error.code).toBe("timeout")
    expect(timedOut.request.url).toBe(silent.url())
    expect(timedOut.request.body).toBe(silent.received[0]!.rawBody)
    expect(timedOut.request.headers["x-auth-signature"]).toBe(silent.received[0]!.headers["x-auth-signature"])
    // The first attempt still shows the URL it was sent to.
    expect((await detail(hook.id, first!.id)).json.request.url).toBe(refusedUrl)

    // Attempt 3 with the SSRF guard on (production): loopback is blocked, nothing reaches the receiver.
    const blocked = await sendNextAttempt(hook.id, 3, { allowPrivateTargets: false })
    expect(blocked).toMatchObject({ status: "failed", attempt: 3, response: null })
    expect(blocked.transport_error.code).toBe("blocked_address")
    expect(silent.received).toHaveLength(1)
  })

  it("only who may change webhooks reads attempts: a Member, a read-only key and another Workspace are refused; another webhook's attempt is not found", async () => {
    const r = await receiver([{ status: 204 }])
    const hook = await hookFor(r.url())
    await blockAUser("access")
    const [attempt] = await settledAttempts(hook.id, 1)
    const path = `/v1/webhooks/${hook.id}/deliveries/${attempt!.id}`

    const member = await makeDashboardSession(app, {
      email: "member-hooks@example.com",
      workspaceId: b.workspace_id,
      role: "member",
    })
    const asMember = { authorization: `Bearer ${member}`, "x-workspace-id": b.workspace_id }
    // The Member reads the list (webhooks:read), not the request and response.
    expect(
      (await app.request(app.config.managementHost, `/v1/webhooks/${hook.id}/deliveries`, { headers: asMember }))
        .status,
    ).toBe(200)
    expectProblem(await app.request(app.config.managementHost, path, { headers: asMember }), 403, "insufficient_scope")

    const readOnly = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["webhooks:read"] })
    expectProblem(await app.management(path, { key: readOnly }), 403, "insufficient_scope")
    const writer = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["webhooks:write"] })
    expect((await app.management(path, { key: writer })).status).toBe(200)

    const other = await app.bootstrap()
    expectProblem(await app.management(path, { key: other.api_key }), 404, "not_found")

    const sibling = await createWebhook(app, {
      environment_id: b.environment_id,
      url: r.url("/other"),
      event_types: ["user.created"],
    })
    expectProblem(await app.management(`/v1/webhooks/${sibling.id}/deliveries/${attempt!.id}`), 404, "not_found")
    expectProblem(await app.management(`/v1/webhooks/${hook.id}/deliveries/dlv_${"a".repeat(32)}`), 404, "not_found")
  })

  it("retention: housekeeping clears response headers and bodies after 30 days; the record keeps its spec fields", async () => {
    const r = await receiver([{ status: 200, body: "personal data maybe" }])
    const hook = await hookFor(r.url())
    await blockAUser("retention")
    const [attempt] = await settledAttempts(hook.id, 1)
    expect((await detail(hook.id, attempt!.id)).json.response.body).toBe("personal data maybe")

    // The attempt and its event are aged in the database (a TestClock jump would also time out
    // the worker's connections): just inside the 30 days, then just past them.
    const age = (ms: number) =>
      sqlRows(
        app,
        `with d as (update webhook_deliveries set occurred_at = $2::timestamptz where id = $1 returning event_id)
        update event_outbox set occurred_at = $2::timestamptz where id = (select event_id from d) returning id`,
        [attempt!.id, new Date(app.now() - ms).toISOString()],
      )
    await age(EXCHANGE_RETENTION_MS - 60_000)
    await app.run(housekeeping)
    expect((await detail(hook.id, attempt!.id)).json.response.body).toBe("personal data maybe")

    await age(EXCHANGE_RETENTION_MS + 60_000)
    // The outbox keeps an event while its fan-out job exists, and the worker deletes a finished
    // job in a batch a moment after the attempt settled: wait for that, as the daily run would.
    for (;;) {
      const [fanOut] = await sqlRows<{ n: number }>(
        app,
        `select count(*)::int as n from graphile_worker.jobs j join webhook_deliveries d on j.key = $2 || d.event_id
        where d.id = $1`,
        [attempt!.id, `${TASKS.webhookFanout.name}:`],
      )
      if (fanOut!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await app.run(housekeeping)
    const res = await detail(hook.id, attempt!.id)
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({ status: "delivered", response_status_code: 200 })
    expect(res.json.response).toMatchObject({ status_code: 200, headers: null, body: null })
    // The outbox's envelope went with it (30 days): the request keeps its URL and signature, not its body.
    expect(res.json.request.body).toBeNull()
    expect(res.json.request.headers["x-auth-signature"]).toMatch(/^v1=[0-9a-f]{64}$/)
  })
})
