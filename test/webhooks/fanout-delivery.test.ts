import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Events } from "../../src/platform/events/service.js"
import { Tenancy } from "../../src/tenancy/service.js"
import { makeSender, WebhookSender } from "../../src/webhooks/delivery/send.js"
import { type AttemptReport, fanOut, fanOutAndDeliver, POSTPONED_PRIORITY } from "../../src/webhooks/tasks.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  type Behaviour,
  countRows,
  createWebhook,
  type Receiver,
  sqlRows,
  startReceiver,
  WEBHOOK_TEST_ENV,
} from "./support.js"

// The fan-out job sends its event's first attempts itself (one job per event), settles the
// final outcomes in one statement, and never lets one receiver hold more than its share of
// sends: an attempt to a receiver whose slots are full is deferred to a job of its own.

let app: TestApp
let b: Bootstrapped
const receivers: Array<Receiver> = []
const closers: Array<() => void> = []
beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
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

const sender = (options: { timeoutMs?: number; maxInFlightPerTarget?: number } = {}) => {
  const made = makeSender({
    timeoutMs: options.timeoutMs ?? 2_000,
    maxResponseBytes: 64 * 1024,
    allowPrivateTargets: true,
    maxInFlightPerTarget: options.maxInFlightPerTarget,
  })
  closers.push(made.close)
  return made.sender
}

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
          name: "fanout",
        }),
      )).id
    }),
  )

let users = 0
const emitUserCreated = (environmentId: string) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      const c = "abcdefghijklmnopqrstuvwxyz"[users++ % 26]!
      return yield* sql.withTransaction(
        events.emit({
          type: "user.created",
          workspaceId: b.workspace_id,
          environmentId,
          actor: { type: "system" },
          payload: { userId: `usr_${c.repeat(32)}`, method: "email_otp" },
        }),
      )
    }),
  )

const deliverEvent = (eventId: string, withSender: WebhookSender["Service"]) =>
  app.run(fanOutAndDeliver(eventId).pipe(Effect.provideService(WebhookSender, withSender))) as Promise<
    ReadonlyArray<AttemptReport>
  >

describe("the fan-out job", () => {
  it("sends every first attempt of its event itself, signed, with no job per delivery; a re-run sends nothing again", async () => {
    const r = await receiver([{ status: 204 }])
    const env = await freshEnvironment()
    const hooks = await Promise.all(
      [0, 1, 2].map((i) =>
        createWebhook(app, { environment_id: env, url: r.url(`/hook/${i}`), event_types: ["user.created"] }),
      ),
    )
    const envelope = await emitUserCreated(env)
    const s = sender()

    const reports = await deliverEvent(envelope.eventId, s)
    expect(reports.map((x) => [x.attempt, x.verdict.status])).toEqual([
      [1, "delivered"],
      [1, "delivered"],
      [1, "delivered"],
    ])
    expect(r.received).toHaveLength(3)
    for (const req of r.received) {
      const hook = hooks[Number(req.path.split("/").pop())]!
      expect(
        verifyWebhook({ headers: req.headers, rawBody: req.rawBody, secrets: hook.secret, now: app.now() }).ok,
      ).toBe(true)
    }
    const rows = await sqlRows<{ webhook_id: string; attempt: number; status: string; response_status_code: number }>(
      app,
      "select webhook_id, attempt, status, response_status_code from webhook_deliveries where event_id = $1 order by webhook_id",
      [envelope.eventId],
    )
    expect(rows).toEqual(
      hooks
        .map((h) => h.id)
        .sort()
        .map((webhook_id) => ({ webhook_id, attempt: 1, status: "delivered", response_status_code: 204 })),
    )
    expect(await countRows(app, "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.deliver'")).toBe(
      0,
    )

    // A duplicate run of the job (at least once): nothing is created or sent again.
    expect(await deliverEvent(envelope.eventId, s)).toEqual([])
    expect(r.received).toHaveLength(3)
  })

  it("an event with more subscriptions than the fan-out statement has ids for: every one gets its record and its send, once", async () => {
    const r = await receiver([{ status: 204 }])
    const env = await freshEnvironment()
    const hooks = await Promise.all(
      [0, 1, 2, 3, 4, 5, 6].map((i) =>
        createWebhook(app, { environment_id: env, url: r.url(`/hook/${i}`), event_types: ["user.created"] }),
      ),
    )
    const envelope = await emitUserCreated(env)
    const s = sender({ maxInFlightPerTarget: 16 })

    const reports = await deliverEvent(envelope.eventId, s)
    expect(reports.map((x) => [x.attempt, x.verdict.status])).toEqual(hooks.map(() => [1, "delivered"]))
    expect(r.received.map((req) => req.path).sort()).toEqual(hooks.map((_, i) => `/hook/${i}`).sort())
    for (const req of r.received) {
      const hook = hooks[Number(req.path.split("/").pop())]!
      expect(
        verifyWebhook({ headers: req.headers, rawBody: req.rawBody, secrets: hook.secret, now: app.now() }).ok,
      ).toBe(true)
    }
    const rows = await sqlRows<{ id: string; webhook_id: string; status: string }>(
      app,
      "select id, webhook_id, status from webhook_deliveries where event_id = $1 order by webhook_id",
      [envelope.eventId],
    )
    expect(rows.map((x) => [x.webhook_id, x.status])).toEqual(
      hooks
        .map((h) => h.id)
        .sort()
        .map((id) => [id, "delivered"]),
    )
    expect(new Set(reports.map((x) => x.deliveryId))).toEqual(new Set(rows.map((x) => x.id)))

    expect(await deliverEvent(envelope.eventId, s)).toEqual([])
    expect(r.received).toHaveLength(hooks.length)
  })

  it("re-run after its worker died mid-way: sends only the first attempts still pending", async () => {
    const r = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const hooks = await Promise.all(
      [0, 1].map((i) =>
        createWebhook(app, { environment_id: env, url: r.url(`/hook/${i}`), event_types: ["user.created"] }),
      ),
    )
    const envelope = await emitUserCreated(env)
    // The dead run created both records and settled one before it died.
    const created = await app.run(fanOut(envelope.eventId))
    expect(created).toHaveLength(2)
    await sqlRows(app, "update webhook_deliveries set status = 'delivered', response_status_code = 200 where id = $1", [
      created[0],
    ])

    const reports = await deliverEvent(envelope.eventId, sender())
    expect(reports.map((x) => [x.deliveryId, x.verdict.status])).toEqual([[created[1], "delivered"]])
    expect(r.received).toHaveLength(1)
    expect(await countRows(app, "select 1 from webhook_deliveries where event_id = $1", [envelope.eventId])).toBe(
      hooks.length,
    )
  })

  it("re-run after every subscription was disabled or deleted: the pending first attempts end exhausted, unsent (none stays pending)", async () => {
    const r = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const [disabled, deleted] = await Promise.all(
      [0, 1].map((i) =>
        createWebhook(app, { environment_id: env, url: r.url(`/hook/${i}`), event_types: ["user.created"] }),
      ),
    )
    const envelope = await emitUserCreated(env)
    // The dead run recorded both first attempts; then one webhook was disabled, the other deleted.
    expect(await app.run(fanOut(envelope.eventId))).toHaveLength(2)
    expect(
      (await app.management(`/v1/webhooks/${disabled!.id}`, { method: "PATCH", body: { status: "disabled" } })).status,
    ).toBe(200)
    expect((await app.management(`/v1/webhooks/${deleted!.id}`, { method: "DELETE" })).status).toBe(200)

    const reports = await deliverEvent(envelope.eventId, sender())
    expect(reports.map((x) => x.verdict).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { status: "exhausted", why: "webhook_deleted" },
      { status: "exhausted", why: "webhook_disabled" },
    ])
    const records = await sqlRows<{
      webhook_id: string
      status: string
      failure_reason: string
      response_status_code: number | null
    }>(
      app,
      "select webhook_id, status, failure_reason, response_status_code from webhook_deliveries where event_id = $1 order by webhook_id",
      [envelope.eventId],
    )
    expect(records).toEqual(
      [
        {
          webhook_id: disabled!.id,
          status: "exhausted",
          failure_reason: "webhook_disabled",
          response_status_code: null,
        },
        { webhook_id: deleted!.id, status: "exhausted", failure_reason: "webhook_deleted", response_status_code: null },
      ].sort((a, b) => a.webhook_id.localeCompare(b.webhook_id)),
    )
    expect(r.received).toHaveLength(0)
  })

  it("re-run after the subscriptions changed: a new subscription gets its attempt and the earlier pending one is still settled", async () => {
    const r = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const before = await createWebhook(app, {
      environment_id: env,
      url: r.url("/before"),
      event_types: ["user.created"],
    })
    const envelope = await emitUserCreated(env)
    const [earlier] = await app.run(fanOut(envelope.eventId))
    expect(
      (await app.management(`/v1/webhooks/${before.id}`, { method: "PATCH", body: { status: "disabled" } })).status,
    ).toBe(200)
    await createWebhook(app, { environment_id: env, url: r.url("/after"), event_types: ["user.created"] })

    const reports = await deliverEvent(envelope.eventId, sender())
    expect(reports.find((x) => x.deliveryId === earlier)!.verdict).toEqual({
      status: "exhausted",
      why: "webhook_disabled",
    })
    expect(
      await countRows(app, "select 1 from webhook_deliveries where event_id = $1 and status = 'pending'", [
        envelope.eventId,
      ]),
    ).toBe(0)
    expect(r.received.map((x) => x.path)).toEqual(["/after"])
  })

  it("a failed first attempt gets its retry record and job; final outcomes are settled, exhausted ones too", async () => {
    const ok = await receiver([{ status: 200 }])
    const down = await receiver([{ status: 503 }])
    const gone = await receiver([{ status: 410 }])
    const env = await freshEnvironment()
    const [hOk, hDown, hGone] = await Promise.all(
      [ok, down, gone].map((x) =>
        createWebhook(app, { environment_id: env, url: x.url(), event_types: ["user.created"] }),
      ),
    )
    const envelope = await emitUserCreated(env)
    const reports = await deliverEvent(envelope.eventId, sender())
    const byWebhook = new Map(
      (
        await sqlRows<{ id: string; webhook_id: string }>(
          app,
          "select id, webhook_id from webhook_deliveries where event_id = $1 and attempt = 1",
          [envelope.eventId],
        )
      ).map((x) => [x.webhook_id, x.id]),
    )
    const statusOf = (webhookId: string) =>
      reports.find((x) => x.deliveryId === byWebhook.get(webhookId))!.verdict.status
    expect([statusOf(hOk!.id), statusOf(hDown!.id), statusOf(hGone!.id)]).toEqual(["delivered", "failed", "exhausted"])
    const retry = reports.find((x) => x.deliveryId === byWebhook.get(hDown!.id))!
    expect(
      await countRows(app, "select 1 from graphile_worker.jobs where key = $1", [
        `webhooks.deliver:${retry.nextDeliveryId}`,
      ]),
    ).toBe(1)
    const records = await sqlRows<{ webhook_id: string; attempt: number; status: string }>(
      app,
      "select webhook_id, attempt, status from webhook_deliveries where event_id = $1 order by webhook_id, attempt",
      [envelope.eventId],
    )
    expect(records).toEqual(
      [
        { webhook_id: hOk!.id, attempt: 1, status: "delivered" },
        { webhook_id: hDown!.id, attempt: 1, status: "failed" },
        { webhook_id: hDown!.id, attempt: 2, status: "pending" },
        { webhook_id: hGone!.id, attempt: 1, status: "exhausted" },
      ].sort((x, y) => x.webhook_id.localeCompare(y.webhook_id) || x.attempt - y.attempt),
    )
  })
})

describe("bounded concurrency per receiver", () => {
  it("a receiver whose slots are full gets the attempt later, in a job of its own and not counted as a send; other receivers are served at once", async () => {
    const slow = await receiver([{ hold: true }])
    const fast = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const hSlow = await createWebhook(app, { environment_id: env, url: slow.url(), event_types: ["user.created"] })
    await createWebhook(app, { environment_id: env, url: fast.url(), event_types: ["user.created"] })
    const s = sender({ maxInFlightPerTarget: 1, timeoutMs: 5_000 })

    // The first event takes the slow receiver's only slot and holds it.
    const first = await emitUserCreated(env)
    const arrived = slow.next()
    const firstRun = deliverEvent(first.eventId, s)
    await arrived
    expect(s.slots.inFlight(new URL(slow.url()).origin)).toBe(1)

    // Meanwhile a second event: the fast receiver gets it at once; the slow one's attempt is deferred.
    const second = await emitUserCreated(env)
    const reports = await deliverEvent(second.eventId, s)
    const [slowRecord] = await sqlRows<{ id: string; attempt: number; status: string; scheduled_at: Date }>(
      app,
      "select id, attempt, status, scheduled_at from webhook_deliveries where event_id = $1 and webhook_id = $2",
      [second.eventId, hSlow.id],
    )
    const deferred = reports.find((x) => x.deliveryId === slowRecord!.id)!
    expect(deferred.verdict.status).toBe("deferred")
    const runAt = (deferred.verdict as { runAt: Date }).runAt.getTime()
    expect(runAt - app.now()).toBeGreaterThanOrEqual(500)
    expect(runAt - app.now()).toBeLessThan(1_500)
    expect(slowRecord).toMatchObject({ attempt: 1, status: "pending" })
    expect(slowRecord!.scheduled_at.getTime()).toBe(runAt)
    const [job] = await sqlRows<{ run_at: Date }>(app, "select run_at from graphile_worker.jobs where key = $1", [
      `webhooks.deliver:${slowRecord!.id}`,
    ])
    expect(job!.run_at.getTime()).toBe(runAt)
    expect(reports.filter((x) => x.verdict.status === "delivered")).toHaveLength(1)
    expect(fast.received.map((x) => x.headers["x-auth-event-id"]).sort()).toEqual(
      [first.eventId, second.eventId].sort(),
    )
    expect(slow.received).toHaveLength(1) // the deferred attempt was not sent

    // The held send times out and frees the slot: a failed send, retried as the policy says.
    const firstReports = await firstRun
    expect(firstReports.map((x) => x.verdict.status).sort()).toEqual(["delivered", "failed"])
    expect(s.slots.inFlight(new URL(slow.url()).origin)).toBe(0)
  }, 30_000)

  it("postponements of a receiver that stays busy grow with the time it stays busy (1 s, 2 s, 4 s: doubling, jittered) and queue behind due jobs; its answer resets them", async () => {
    const slow = await receiver([{ status: 200, afterMs: 1_500 }])
    const env = await freshEnvironment()
    const hook = await createWebhook(app, { environment_id: env, url: slow.url(), event_types: ["user.created"] })
    const s = sender({ maxInFlightPerTarget: 1, timeoutMs: 5_000 })
    const postponed = async () => {
      const event = await emitUserCreated(env)
      const [report] = await deliverEvent(event.eventId, s)
      expect(report!.verdict.status).toBe("deferred")
      const [job] = await sqlRows<{ run_at: Date; priority: number }>(
        app,
        "select run_at, priority from graphile_worker.jobs where key = $1",
        [`webhooks.deliver:${report!.deliveryId}`],
      )
      // Not a send: still attempt 1, pending.
      expect(
        await sqlRows(app, "select attempt, status from webhook_deliveries where id = $1", [report!.deliveryId]),
      ).toEqual([{ attempt: 1, status: "pending" }])
      expect(job!.priority).toBe(POSTPONED_PRIORITY)
      return job!.run_at.getTime() - app.now()
    }

    // The first event's send holds the only slot for 1.5 s.
    const first = deliverEvent((await emitUserCreated(env)).eventId, s)
    await slow.next()
    // Attempts that find it busy at one moment share the first step, however many they are.
    const burst = [await postponed(), await postponed(), await postponed()]
    for (const gap of burst) {
      expect(gap).toBeGreaterThanOrEqual(500)
      expect(gap).toBeLessThan(1_000)
    }
    // Still busy a whole step later: the next step; and the one after that.
    await app.advance("1 second")
    const second = await postponed()
    expect(second).toBeGreaterThanOrEqual(1_000)
    expect(second).toBeLessThan(2_000)
    await app.advance("2 seconds")
    const later = await postponed()
    expect(later).toBeGreaterThanOrEqual(2_000)
    expect(later).toBeLessThan(4_000)
    expect((await first).map((x) => x.verdict.status)).toEqual(["delivered"])

    // It answered: the next send takes the slot again, and the one after is postponed by the first step again.
    const third = deliverEvent((await emitUserCreated(env)).eventId, s)
    await slow.next()
    const reset = await postponed()
    expect(reset).toBeGreaterThanOrEqual(500)
    expect(reset).toBeLessThan(1_000)
    expect((await third).map((x) => x.verdict.status)).toEqual(["delivered"])
    expect(
      await countRows(app, "select 1 from webhook_deliveries where webhook_id = $1 and attempt > 1", [hook.id]),
    ).toBe(0)
  }, 30_000)

  it("a send that fails after taking its receiver's slot (a secret that cannot be opened) gives the slot back", async () => {
    const r = await receiver([{ status: 200 }])
    const env = await freshEnvironment()
    const hook = await createWebhook(app, { environment_id: env, url: r.url(), event_types: ["user.created"] })
    const envelope = await emitUserCreated(env)
    // A sealed secret bound to another row: opening it fails between taking the slot and sending.
    const [other] = await sqlRows<{ secret_sealed: string }>(
      app,
      "select secret_sealed from webhooks where id <> $1 and secret_sealed is not null limit 1",
      [hook.id],
    )
    await sqlRows(app, "update webhooks set secret_sealed = $1 where id = $2", [other!.secret_sealed, hook.id])
    const s = sender({ maxInFlightPerTarget: 1 })
    await expect(deliverEvent(envelope.eventId, s)).rejects.toBeDefined()
    expect(s.slots.inFlight(new URL(r.url()).origin)).toBe(0)
    expect(r.received).toHaveLength(0)
  })
})
