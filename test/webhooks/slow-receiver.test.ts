import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, expect, it } from "vitest"
import { Events } from "../../src/platform/events/service.js"
import { POSTPONED_PRIORITY } from "../../src/webhooks/tasks.js"
import { type Child, startEntry, stopChild, until } from "../faults/support.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createWebhook, type Receiver, sqlRows, startReceiver, WEBHOOK_TEST_ENV } from "./support.js"

// docs/decisions/worker-at-scale.md: one slow receiver cannot starve the others, whatever its backlog. A real worker
// process (graphile-worker, 4 job slots, 1 send in flight per receiver) faces a backlog of
// 200 events, each for a receiver that never answers and a healthy one: the healthy receiver
// gets every event (about 1.5 s measured on a quiet machine; the bound is 25 s because CI runs this beside
// browser tests on two cores, and the fix's rule is also checked without a clock below) while the hanging one's attempts wait (postponed, not sent,
// not counted as sends). The healthy receiver's first answer is slow, so the burst also
// postpones some of its attempts: they come back within a second (postponements grow with the
// time a receiver stays busy, not per attempt; per attempt, 185 of 200 arrived in 25 s).
// Before the first fix every fan-out with the hanging subscriber held a job
// slot for 250 ms and the postponed attempts, due every second ahead of the new fan-outs,
// crowded the healthy receiver out.

const EVENTS = 200
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
let app: TestApp
let b: Bootstrapped
let hanging: Receiver
let healthy: Receiver
let worker: Child | undefined

beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
  b = await app.bootstrap()
  hanging = await startReceiver([{ hold: true }])
  // Its first answer takes 600 ms, as a loaded receiver (or test machine) may: the fan-outs of the
  // burst meanwhile find it busy past the prompt window, and their attempts to it are postponed.
  healthy = await startReceiver([{ status: 204, afterMs: 600 }, { status: 204 }])
})
afterAll(async () => {
  // The receivers first: the held send then ends at once and the worker stops without waiting for its time-out.
  await hanging?.close()
  await healthy?.close()
  if (worker) await stopChild(worker)
  await app?.close()
}, 60_000)

it("a receiver that hangs with a backlog of 200 events does not hold back a healthy receiver of the same events", async () => {
  const slowHook = await createWebhook(app, {
    environment_id: b.environment_id,
    url: hanging.url(),
    event_types: ["user.created"],
  })
  const healthyHook = await createWebhook(app, {
    environment_id: b.environment_id,
    url: healthy.url(),
    event_types: ["user.created"],
  })
  const envelopes = await app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      return yield* sql.withTransaction(
        events.emitMany(
          Array.from({ length: EVENTS }, (_, i) => ({
            type: "user.created" as const,
            workspaceId: b.workspace_id,
            environmentId: b.environment_id,
            actor: { type: "system" as const },
            payload: {
              userId: `usr_${BASE32[i >> 5]}${BASE32[i & 31]}${"a".repeat(30)}`,
              method: "email_otp" as const,
            },
          })),
        ),
      )
    }),
  )
  const eventIds = new Set(envelopes.map((e) => e.eventId))
  expect(eventIds.size).toBe(EVENTS)

  worker = await startEntry(
    "src/worker.ts",
    {
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
      DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-slow-receiver-")),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WORKER_CONCURRENCY: "4",
      WEBHOOK_MAX_IN_FLIGHT_PER_TARGET: "1",
    },
    /worker: running/,
  )
  const started = Date.now()
  await until(
    "every event at the healthy receiver",
    async () => {
      const seen = new Set(healthy.received.map((r) => r.headers["x-auth-event-id"] as string))
      return [...eventIds].every((id) => seen.has(id)) ? true : undefined
    },
    25_000,
    100,
  ).catch(async (e) => {
    console.log(
      "healthy received",
      new Set(healthy.received.map((r) => r.headers["x-auth-event-id"])).size,
      "of",
      EVENTS,
      "hanging received",
      hanging.received.length,
    )
    console.log(
      await sqlRows(
        app,
        "select task_identifier, priority, locked_by is not null as locked, count(*)::int from graphile_worker.jobs group by 1, 2, 3",
      ),
    )
    console.log("worker output:", worker!.output().slice(-3000))
    throw e
  })
  expect(Date.now() - started).toBeLessThan(25_000)

  // The hanging receiver holds its one slot per send for the 10-second send time-out: it got at
  // most a couple of sends; its other attempts wait, postponed, still attempt 1 and pending.
  expect(hanging.received.length).toBeLessThanOrEqual(3)
  const slow = await sqlRows<{ attempt: number; status: string; n: number }>(
    app,
    "select attempt, status, count(*)::int as n from webhook_deliveries where webhook_id = $1 group by 1, 2 order by 1, 2",
    [slowHook.id],
  )
  const pendingFirst = slow.find((r) => r.attempt === 1 && r.status === "pending")?.n ?? 0
  expect(pendingFirst).toBeGreaterThanOrEqual(EVENTS - 3)
  expect(slow.every((r) => r.attempt <= 2)).toBe(true)
  const postponedJobs = await sqlRows<{ priority: number; n: number }>(
    app,
    `select j.priority, count(*)::int as n from graphile_worker.jobs j join webhook_deliveries d on j.key = 'webhooks.deliver:' || d.id
      where d.webhook_id = $1 and d.attempt = 1 group by 1`,
    [slowHook.id],
  )
  expect(postponedJobs.map((r) => r.priority)).toEqual([POSTPONED_PRIORITY])
  // The healthy attempts are recorded delivered (a fan-out settles its event's outcomes together,
  // so the few whose job also holds the hanging send are settled when that send times out).
  const healthyRecords = await sqlRows<{ status: string; attempt: number }>(
    app,
    "select status, attempt from webhook_deliveries where webhook_id = $1",
    [healthyHook.id],
  )
  expect(healthyRecords).toHaveLength(EVENTS)
  expect(healthyRecords.filter((r) => r.status === "delivered" && r.attempt === 1).length).toBeGreaterThanOrEqual(
    EVENTS - 3,
  )
}, 60_000)
