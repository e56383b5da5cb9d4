import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { Events } from "../../src/platform/events/service.js"
import { WebhookSender } from "../../src/webhooks/delivery/send.js"
import { deliverAttempt, fanOut } from "../../src/webhooks/tasks.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  countRows,
  createWebhook,
  fastSender,
  type Receiver,
  sqlRows,
  startReceiver,
  WEBHOOK_TEST_ENV,
} from "../webhooks/support.js"

// Housekeeping prunes idempotency records past their 24 hours (each holds a sealed response,
// here a webhook secret) and outbox events past 30 days, except those that undelivered
// fan-out still needs (docs/decisions/billing-bounces-retention.md, "Outbox retention").

let app: TestApp
let env: Bootstrapped
let receiver: Receiver
const { sender, close: closeSender } = fastSender(2_000)

beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
  env = await app.bootstrap()
  receiver = await startReceiver([{ status: 200 }])
})
afterAll(async () => {
  closeSender()
  await receiver?.close()
  await app?.close()
})

const runHousekeeping = () => app.run(housekeeping)
const idempotencyRows = () =>
  sqlRows<{ key: string; response_sealed: string | null }>(
    app,
    "select key, response_sealed from idempotency_keys where workspace_id = $1 order by key",
    [env.workspace_id],
  )

describe("idempotency records", () => {
  it("are deleted 24 hours after the first request, with their sealed responses; younger ones stay and still replay", async () => {
    const body = { environment_id: env.environment_id, url: receiver.url("/old"), event_types: ["passkey.created"] }
    const first = await app.management("/v1/webhooks", {
      method: "POST",
      body,
      headers: { "idempotency-key": "old-key" },
    })
    expect(first.status).toBe(201)
    await app.advance("23 hours")
    const youngBody = { ...body, url: receiver.url("/young") }
    const young = await app.management("/v1/webhooks", {
      method: "POST",
      body: youngBody,
      headers: { "idempotency-key": "young-key" },
    })
    expect(young.status).toBe(201)
    await runHousekeeping() // nothing is due yet
    expect((await idempotencyRows()).map((r) => r.key)).toEqual(["old-key", "young-key"])

    await app.advance("1 hour")
    await runHousekeeping()
    const rows = await idempotencyRows()
    expect(rows.map((r) => r.key)).toEqual(["young-key"])
    const replay = await app.management("/v1/webhooks", {
      method: "POST",
      body: youngBody,
      headers: { "idempotency-key": "young-key" },
    })
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect(replay.json.secret).toBe(young.json.secret)
    // The pruned key is simply new again: a fresh webhook with a fresh secret.
    const again = await app.management("/v1/webhooks", {
      method: "POST",
      body,
      headers: { "idempotency-key": "old-key" },
    })
    expect(again.status).toBe(201)
    expect(again.headers["idempotent-replayed"]).toBeUndefined()
    expect(again.json.id).not.toBe(first.json.id)
  })
})

describe("event outbox", () => {
  const emit = (type: "user.created" | "user.deleted", userChar: string) =>
    app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const events = yield* Events
        const userId = `usr_${userChar.repeat(32)}`
        return yield* sql.withTransaction(
          type === "user.created"
            ? events.emit({
                type,
                workspaceId: env.workspace_id,
                environmentId: env.environment_id,
                payload: { userId, method: "email_otp" },
              })
            : events.emit({
                type,
                workspaceId: env.workspace_id,
                environmentId: env.environment_id,
                payload: { userId, reason: "admin_action" },
              }),
        )
      }),
    )
  /** What the worker does after a task returns: the job row goes (graphile_worker.complete_jobs). */
  const completeJob = (key: string) =>
    sqlRows(
      app,
      "select count(*)::int as n from graphile_worker.complete_jobs(array(select id from graphile_worker.jobs where key = $1))",
      [key],
    )
  const inOutbox = (eventId: string) => countRows(app, "select 1 from event_outbox where id = $1", [eventId])

  it("events older than 30 days go, unless a fan-out job is still queued or an attempt is pending or failed", async () => {
    await createWebhook(app, {
      environment_id: env.environment_id,
      url: receiver.url("/deleted"),
      event_types: ["user.deleted"],
    })
    const unsubscribed = await emit("user.created", "a") // nobody subscribed: no job, nothing to deliver
    const queued = await emit("user.deleted", "b") // fan-out job never ran (workers down)
    const pending = await emit("user.deleted", "c") // fanned out, attempt still scheduled
    const delivered = await emit("user.deleted", "d") // fanned out and delivered
    for (const e of [pending, delivered]) {
      await app.run(fanOut(e.eventId))
      await completeJob(`webhooks.fanout:${e.eventId}`)
    }
    const [deliveredAttempt] = await sqlRows<{ id: string }>(
      app,
      "select id from webhook_deliveries where event_id = $1",
      [delivered.eventId],
    )
    const report = await app.run(
      deliverAttempt(deliveredAttempt!.id).pipe(Effect.provideService(WebhookSender, sender)),
    )
    expect(report.verdict.status).toBe("delivered")
    await completeJob(`webhooks.deliver:${deliveredAttempt!.id}`)

    await app.advance("29 days")
    const recent = await emit("user.created", "e")
    await runHousekeeping()
    for (const e of [unsubscribed, queued, pending, delivered, recent]) expect(await inOutbox(e.eventId)).toBe(1)

    await app.advance("1 day")
    await app.advance("1 second") // 30 days and a second after they occurred
    await runHousekeeping()
    expect(await inOutbox(unsubscribed.eventId)).toBe(0)
    expect(await inOutbox(delivered.eventId)).toBe(0)
    expect(await inOutbox(queued.eventId)).toBe(1)
    expect(await inOutbox(pending.eventId)).toBe(1)
    expect(await inOutbox(recent.eventId)).toBe(1)
    // delivery history keeps its own 90 days: the delivered record is still listed
    expect(await countRows(app, "select 1 from webhook_deliveries where event_id = $1", [delivered.eventId])).toBe(1)

    // The kept events still serve their fan-out and delivery; once settled they go too.
    await app.run(fanOut(queued.eventId))
    await completeJob(`webhooks.fanout:${queued.eventId}`)
    for (const e of [queued, pending]) {
      const [a] = await sqlRows<{ id: string }>(app, "select id from webhook_deliveries where event_id = $1", [
        e.eventId,
      ])
      expect(
        (await app.run(deliverAttempt(a!.id).pipe(Effect.provideService(WebhookSender, sender)))).verdict.status,
      ).toBe("delivered")
      await completeJob(`webhooks.deliver:${a!.id}`)
    }
    await runHousekeeping()
    expect(await inOutbox(queued.eventId)).toBe(0)
    expect(await inOutbox(pending.eventId)).toBe(0)
    expect(await inOutbox(recent.eventId)).toBe(1)
  })
})
