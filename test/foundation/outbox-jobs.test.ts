import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addJob, TASKS } from "../../src/platform/jobs.js"
import { Events } from "../../src/platform/events/service.js"
import { EVENT_TYPES, EventPayloads, maskEmail, strict } from "../../src/platform/events/schema.js"
import { Audit } from "../../src/platform/audit.js"
import { type TestApp, startApp } from "../support/app.js"

let app: TestApp
beforeAll(async () => {
  app = await startApp({ worker: true })
})
afterAll(async () => {
  await app?.close()
})

const USER = `usr_${"a".repeat(32)}`
const SESSION = `ses_${"b".repeat(32)}`

const jobCount = (task: string) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{
        n: number
      }>`select count(*)::int as n from graphile_worker.jobs where task_identifier = ${task}`
      return rows[0]!.n
    }),
  )

const rollback = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.andThen(effect, Effect.fail("roll back" as const))).pipe(Effect.ignore)
  })

describe("jobs are enqueued inside the caller's transaction", () => {
  it("a job enqueued in a transaction that rolls back never exists", async () => {
    await app.run(rollback(addJob(TASKS.housekeeping, { probe: "rolled-back" })))
    expect(await jobCount("housekeeping")).toBe(0)
  })

  it("a job enqueued in a committed transaction runs (the worker takes and completes it)", async () => {
    await app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(addJob(TASKS.housekeeping, { probe: "committed" }))
      }),
    )
    expect(await jobCount("housekeeping")).toBeGreaterThanOrEqual(0)
    const deadline = Date.now() + 15_000
    while ((await jobCount("housekeeping")) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(await jobCount("housekeeping")).toBe(0)
  })
})

describe("domain events go to the outbox inside the caller's transaction", () => {
  const emit = (workspaceId: string) =>
    Effect.gen(function* () {
      const events = yield* Events
      return yield* events.emit({
        type: "user.blocked",
        workspaceId,
        environmentId: "env_x",
        payload: { userId: USER, reason: "admin_action" },
      })
    })
  const outbox = (workspaceId: string) =>
    app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{
          envelope: Record<string, unknown>
        }>`select envelope from event_outbox where workspace_id = ${workspaceId}`
      }),
    )

  it("an event emitted in a rolled-back transaction is not in the outbox", async () => {
    await app.run(rollback(emit("wsp_rolledback")))
    expect(await outbox("wsp_rolledback")).toHaveLength(0)
  })

  it("a committed event has exactly the spec's envelope", async () => {
    const envelope = await app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql.withTransaction(emit("wsp_committed"))
      }),
    )
    const [row] = await outbox("wsp_committed")
    expect(row!.envelope).toEqual(envelope)
    expect(Object.keys(row!.envelope).sort()).toEqual([
      "environmentId",
      "eventId",
      "occurredAt",
      "payload",
      "trace",
      "type",
      "version",
      "workspaceId",
    ])
    expect(row!.envelope["eventId"]).toMatch(/^evt_[a-z2-7]{32}$/)
    expect(row!.envelope["occurredAt"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(row!.envelope["version"]).toBe(1)
  })

  it("refuses a payload that breaks its schema (a programming error: the emit dies)", async () => {
    const result = app.run(
      Effect.gen(function* () {
        const events = yield* Events
        return yield* events.emit({
          type: "user.blocked",
          workspaceId: "wsp_bad",
          payload: { userId: USER, reason: "admin_action", extra: 1 } as never,
        })
      }),
    )
    await expect(result).rejects.toThrow()
    expect(await outbox("wsp_bad")).toHaveLength(0)
  })
})

describe("the 14 payload schemas", () => {
  const valid: Record<string, Record<string, unknown>> = {
    "user.created": { userId: USER, method: "email_otp", maskedEmail: maskEmail("alice@example.com") },
    "user.updated": { userId: USER, changedFields: ["name"] },
    "user.deleted": { userId: USER, reason: "user_request" },
    "user.blocked": { userId: USER, reason: "abuse_detection" },
    "identity.linked": { userId: USER, identityId: `idn_${"c".repeat(32)}`, provider: "google" },
    "identity.unlinked": { userId: USER, identityId: `idn_${"c".repeat(32)}`, provider: "github" },
    "passkey.created": {
      userId: USER,
      passkeyId: `psk_${"d".repeat(32)}`,
      aaguid: "00000000-0000-0000-0000-000000000000",
      backedUp: true,
    },
    "passkey.deleted": { userId: USER, passkeyId: `psk_${"d".repeat(32)}` },
    "session.created": {
      userId: USER,
      sessionId: SESSION,
      method: "passkey",
      clientId: `cli_${"e".repeat(32)}`,
      ipPrefixHash: "a".repeat(64),
    },
    "session.revoked": { userId: USER, sessionId: SESSION, reason: "refresh_token_reuse" },
    "login.succeeded": { userId: USER, sessionId: SESSION, method: "refresh_token" },
    "login.failed": { method: "email_otp", reason: "invalid_code", maskedEmail: "a***@e***.com" },
    "email.delivery.bounced": {
      deliveryId: `dlv_${"f".repeat(32)}`,
      recipientHash: "A".repeat(43),
      bounceType: "hard",
    },
    "mau.threshold_reached": { billingMonth: "2026-11", thresholdPercent: 95, currentMau: 28500, freeTierLimit: 30000 },
  }

  it("covers exactly the 14 event types", () => {
    expect([...EVENT_TYPES].sort()).toEqual(Object.keys(valid).sort())
  })

  for (const type of EVENT_TYPES) {
    it(`${type}: accepts a valid payload and refuses an additional property`, () => {
      const schema = EventPayloads[type] as unknown as Schema.Codec<unknown, unknown>
      expect(() => Schema.decodeUnknownSync(schema)(valid[type], strict)).not.toThrow()
      expect(() => Schema.decodeUnknownSync(schema)({ ...valid[type], extra: "x" }, strict)).toThrow()
    })
  }

  it("masked emails never carry the full address", () => {
    expect(maskEmail("alice@example.com")).toBe("a***@e***.com")
    expect(() =>
      Schema.decodeUnknownSync(EventPayloads["user.created"])({
        userId: USER,
        method: "email_otp",
        maskedEmail: "alice@example.com",
      }),
    ).toThrow()
  })
})

describe("audit events", () => {
  it("are append-only: the database refuses UPDATE and DELETE", async () => {
    const id = await app.run(
      Effect.gen(function* () {
        const audit = yield* Audit
        return yield* audit.append({ workspaceId: "wsp_audit", actor: { type: "system" }, action: "test.appended" })
      }),
    )
    const attempt = (statement: "update" | "delete") =>
      app.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const run =
            statement === "update"
              ? sql`update audit_events set action = 'changed' where id = ${id}`
              : sql`delete from audit_events where id = ${id}`
          return yield* run.pipe(
            Effect.flip,
            Effect.map((e) => JSON.stringify(e) + String((e as { cause?: unknown }).cause)),
          )
        }),
      )
    expect(await attempt("update")).toMatch(/audit_events_append_only/)
    expect(await attempt("delete")).toMatch(/audit_events_append_only/)
    const rows = await app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ action: string }>`select action from audit_events where id = ${id}`
      }),
    )
    expect(rows).toEqual([{ action: "test.appended" }])
  })
})
