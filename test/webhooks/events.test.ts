import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EVENT_TYPES, type EventType } from "../../src/platform/events/schema.js"
import { Events } from "../../src/platform/events/service.js"
import { CurrentRequest } from "../../src/platform/request-context.js"
import { Tenancy } from "../../src/tenancy/service.js"
import { fanOut } from "../../src/webhooks/tasks.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { countRows, createWebhook, sqlRows, WEBHOOK_TEST_ENV } from "./support.js"

// Spec, Events: Envelope (no field outside the list), Payloads (no additional properties);
// an event is appended in the transaction of the change it reports, and the webhook
// fan-out is enqueued in that same transaction.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const id = (prefix: string, c = "a") => `${prefix}_${c.repeat(32)}`

/** One valid payload per type (spec table "Payloads"). */
const SAMPLE_PAYLOADS: Record<EventType, Record<string, unknown>> = {
  "user.created": { userId: id("usr"), method: "email_otp", maskedEmail: "a***@e***.com" },
  "user.updated": { userId: id("usr"), changedFields: ["name"] },
  "user.deleted": { userId: id("usr"), reason: "admin_action" },
  "user.blocked": { userId: id("usr"), reason: "abuse_detection" },
  "identity.linked": { userId: id("usr"), identityId: id("idn"), provider: "github" },
  "identity.unlinked": { userId: id("usr"), identityId: id("idn"), provider: "github" },
  "passkey.created": {
    userId: id("usr"),
    passkeyId: id("psk"),
    aaguid: "00000000-0000-0000-0000-000000000000",
    backedUp: true,
  },
  "passkey.deleted": { userId: id("usr"), passkeyId: id("psk") },
  "session.created": {
    userId: id("usr"),
    sessionId: id("ses"),
    method: "passkey",
    clientId: id("cli"),
    ipPrefixHash: "f".repeat(64),
  },
  "session.revoked": { userId: id("usr"), sessionId: id("ses"), reason: "user_logout" },
  "login.succeeded": { userId: id("usr"), sessionId: id("ses"), method: "refresh_token" },
  "login.failed": { method: "email_otp", reason: "invalid_code", maskedEmail: "a***@e***.com" },
  "email.delivery.bounced": { deliveryId: id("dlv"), recipientHash: "A".repeat(43), bounceType: "hard" },
  "mau.threshold_reached": { billingMonth: "2025-06", thresholdPercent: 80, currentMau: 24000, freeTierLimit: 30000 },
}

const emit = (
  type: EventType,
  payload: Record<string, unknown>,
  options: { environmentId?: string | undefined; rollback?: boolean } = {},
) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const envelope = yield* events.emit({
            type,
            workspaceId: b.workspace_id,
            environmentId: "environmentId" in options ? options.environmentId : b.environment_id,
            actor: { type: "system" },
            payload: payload as never,
          })
          if (options.rollback) return yield* Effect.fail("roll back" as const)
          return envelope
        }),
      )
    }).pipe(Effect.provideService(CurrentRequest, { requestId: "req_test", correlationId: "corr-1" })),
  )

const outboxCount = () => countRows(app, "select 1 from event_outbox where workspace_id = $1", [b.workspace_id])
const fanoutJobs = (eventId?: string) =>
  countRows(
    app,
    eventId
      ? "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.fanout' and key = $1"
      : "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.fanout'",
    eventId ? [`webhooks.fanout:${eventId}`] : [],
  )

describe("payload schemas", () => {
  it("there are 14 subscribable types and each sample is valid", async () => {
    expect(EVENT_TYPES).toHaveLength(14)
    for (const type of EVENT_TYPES) {
      const envelope = await emit(type, SAMPLE_PAYLOADS[type])
      expect(envelope.type).toBe(type)
    }
  })

  it.each(EVENT_TYPES)("%s refuses an additional payload property and stores nothing", async (type) => {
    const before = await outboxCount()
    await expect(emit(type, { ...SAMPLE_PAYLOADS[type], extra: "nope" })).rejects.toThrow()
    expect(await outboxCount()).toBe(before)
  })

  it("refuses payloads that break a field rule (full email as maskedEmail, raw IP hash, bad month)", async () => {
    const before = await outboxCount()
    await expect(
      emit("user.created", { userId: id("usr"), method: "email_otp", maskedEmail: "alice@example.com" }),
    ).rejects.toThrow()
    await expect(
      emit("login.failed", { method: "email_otp", reason: "invalid_code", ipPrefixHash: "10.0.0.0" }),
    ).rejects.toThrow()
    await expect(
      emit("mau.threshold_reached", { billingMonth: "2025-13", thresholdPercent: 80, currentMau: 1, freeTierLimit: 1 }),
    ).rejects.toThrow()
    await expect(emit("user.updated", { userId: id("usr"), changedFields: [] })).rejects.toThrow()
    expect(await outboxCount()).toBe(before)
  })
})

describe("envelope", () => {
  it("has exactly the spec's fields: evt_ id, version 1, UTC occurredAt ending in Z, actor, strict payload, trace", async () => {
    const envelope = await emit("user.blocked", { userId: id("usr"), reason: "admin_action" })
    const [row] = await sqlRows<{ envelope: Record<string, unknown> }>(
      app,
      "select envelope from event_outbox where id = $1",
      [envelope.eventId],
    )
    const stored = row!.envelope
    expect(Object.keys(stored).sort()).toEqual([
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
    expect(stored["eventId"]).toMatch(/^evt_[a-z2-7]{32}$/)
    expect(stored["version"]).toBe(1)
    expect(stored["occurredAt"]).toBe(new Date(app.now()).toISOString())
    expect(stored["occurredAt"]).toMatch(/Z$/)
    expect(stored).toMatchObject({
      type: "user.blocked",
      workspaceId: b.workspace_id,
      environmentId: b.environment_id,
      actor: { type: "system" },
      payload: { userId: id("usr"), reason: "admin_action" },
      trace: { requestId: "req_test", correlationId: "corr-1" },
    })
  })
})

describe("outbox and fan-out job in the emitting transaction", () => {
  it("a rolled-back transaction leaves no event and no fan-out job", async () => {
    await createWebhook(app, {
      environment_id: b.environment_id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["user.deleted"],
    })
    const [events, jobs] = [await outboxCount(), await fanoutJobs()]
    await expect(emit("user.deleted", SAMPLE_PAYLOADS["user.deleted"], { rollback: true })).rejects.toBeDefined()
    expect(await outboxCount()).toBe(events)
    expect(await fanoutJobs()).toBe(jobs)
    // the same emission committed: one event, one fan-out job
    const envelope = await emit("user.deleted", SAMPLE_PAYLOADS["user.deleted"])
    expect(await outboxCount()).toBe(events + 1)
    expect(await fanoutJobs(envelope.eventId)).toBe(1)
  })

  it("no fan-out job when no active subscription wants the type (other type, disabled, deleted, other Environment)", async () => {
    const w = await createWebhook(app, {
      environment_id: b.environment_id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["passkey.deleted"],
    })
    expect(await fanoutJobs((await emit("passkey.created", SAMPLE_PAYLOADS["passkey.created"])).eventId)).toBe(0)
    await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "disabled" } })
    expect(await fanoutJobs((await emit("passkey.deleted", SAMPLE_PAYLOADS["passkey.deleted"])).eventId)).toBe(0)
    await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "active" } })
    expect(await fanoutJobs((await emit("passkey.deleted", SAMPLE_PAYLOADS["passkey.deleted"])).eventId)).toBe(1)
    await app.management(`/v1/webhooks/${w.id}`, { method: "DELETE" })
    expect(await fanoutJobs((await emit("passkey.deleted", SAMPLE_PAYLOADS["passkey.deleted"])).eventId)).toBe(0)
  })

  it("fans out to every active subscription of the type in the event's Environment, once", async () => {
    const other = await app.run(
      Effect.gen(function* () {
        const tenancy = yield* Tenancy
        const sql = yield* SqlClient.SqlClient
        return (yield* sql.withTransaction(
          tenancy.createEnvironment({
            workspaceId: b.workspace_id,
            projectId: b.project_id,
            type: "test",
            name: "other",
          }),
        )).id
      }),
    )
    const url = "http://127.0.0.1:9/hook"
    const a1 = await createWebhook(app, {
      environment_id: b.environment_id,
      url,
      event_types: ["identity.linked", "user.created"],
    })
    const a2 = await createWebhook(app, { environment_id: b.environment_id, url, event_types: ["identity.linked"] })
    await createWebhook(app, { environment_id: b.environment_id, url, event_types: ["identity.unlinked"] })
    const disabled = await createWebhook(app, {
      environment_id: b.environment_id,
      url,
      event_types: ["identity.linked"],
    })
    await app.management(`/v1/webhooks/${disabled.id}`, { method: "PATCH", body: { status: "disabled" } })
    const elsewhere = await createWebhook(app, { environment_id: other, url, event_types: ["identity.linked"] })

    const envelope = await emit("identity.linked", SAMPLE_PAYLOADS["identity.linked"])
    const created = await app.run(fanOut(envelope.eventId))
    expect(created).toHaveLength(2)
    const rows = await sqlRows<{ webhook_id: string; attempt: number; status: string; event_type: string }>(
      app,
      "select webhook_id, attempt, status, event_type from webhook_deliveries where event_id = $1 order by webhook_id",
      [envelope.eventId],
    )
    expect(rows).toEqual(
      [a1.id, a2.id]
        .sort()
        .map((webhook_id) => ({ webhook_id, attempt: 1, status: "pending", event_type: "identity.linked" })),
    )
    // The fan-out job sends its first attempts itself: no job per delivery.
    const jobs = await countRows(
      app,
      "select 1 from graphile_worker.jobs where task_identifier = 'webhooks.deliver' and key = any($1)",
      [created.map((d) => `webhooks.deliver:${d}`)],
    )
    expect(jobs).toBe(0)
    // at least once, never twice: a re-run of the fan-out creates nothing
    expect(await app.run(fanOut(envelope.eventId))).toEqual([])
    expect(await countRows(app, "select 1 from webhook_deliveries where event_id = $1", [envelope.eventId])).toBe(2)
    expect(rows.map((r) => r.webhook_id)).not.toContain(elsewhere.id)

    // A Workspace-level event (no Environment) reaches the subscribers of every Environment.
    const m1 = await createWebhook(app, {
      environment_id: b.environment_id,
      url,
      event_types: ["mau.threshold_reached"],
    })
    const m2 = await createWebhook(app, { environment_id: other, url, event_types: ["mau.threshold_reached"] })
    const mau = await emit("mau.threshold_reached", SAMPLE_PAYLOADS["mau.threshold_reached"], {
      environmentId: undefined,
    })
    expect(mau).not.toHaveProperty("environmentId")
    await app.run(fanOut(mau.eventId))
    const mauRows = await sqlRows<{ webhook_id: string; environment_id: string }>(
      app,
      "select webhook_id, environment_id from webhook_deliveries where event_id = $1 order by webhook_id",
      [mau.eventId],
    )
    expect(mauRows).toEqual(
      [
        { webhook_id: m1.id, environment_id: b.environment_id },
        { webhook_id: m2.id, environment_id: other },
      ].sort((x, y) => x.webhook_id.localeCompare(y.webhook_id)),
    )
  })
})
