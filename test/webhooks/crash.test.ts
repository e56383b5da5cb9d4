import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, expect, it } from "vitest"
import { Events } from "../../src/platform/events/service.js"
import { verifyWebhook } from "../../src/webhooks/verifier.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createWebhook, type Receiver, sqlRows, startReceiver, WEBHOOK_TEST_ENV } from "./support.js"

// A worker killed with SIGKILL in the middle of a delivery loses nothing: its locked job is
// released by a sibling once its heartbeat is stale (graphile-worker alone would wait 4 hours)
// and the same attempt is sent again. Real worker processes, a real receiver; every wait
// polls with a deadline.

let app: TestApp
let b: Bootstrapped
let receiver: Receiver
const children: Array<ChildProcess> = []

beforeAll(async () => {
  app = await startApp({ env: WEBHOOK_TEST_ENV })
  b = await app.bootstrap()
  // The first request is held open (the worker is killed while waiting); later ones get 200.
  receiver = await startReceiver([{ hold: true }, { status: 200 }])
})
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) killGroup(child, "SIGKILL")
  await receiver?.close()
  await app?.close()
})

/** Each child runs in its own process group (npx -> tsx -> node): the group is signalled, by its id. */
const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // already gone
  }
}

const startWorker = (name: string) => {
  const child = spawn("npx", ["tsx", "test/webhooks/worker-child.ts"], {
    cwd: process.cwd(),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      DATA_DIR: mkdtempSync(join(tmpdir(), `authservice-${name}-`)),
      LOG_REQUESTS: "false",
      NODE_ENV: "test",
    },
  })
  children.push(child)
  let output = ""
  child.stdout!.on("data", (c: Buffer) => {
    output += c.toString()
  })
  child.stderr!.on("data", (c: Buffer) => {
    output += c.toString()
  })
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()))
  return { child, output: () => output, exited }
}

const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

it("a SIGKILLed worker's in-flight attempt is completed by another worker after the heartbeat-based release; no event is lost", async () => {
  const webhook = await createWebhook(app, {
    environment_id: b.environment_id,
    url: receiver.url(),
    event_types: ["user.created"],
  })
  const eventIds = await app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const events = yield* Events
      const ids: Array<string> = []
      for (const c of ["a", "b", "c"]) {
        const envelope = yield* sql.withTransaction(
          events.emit({
            type: "user.created",
            workspaceId: b.workspace_id,
            environmentId: b.environment_id,
            payload: { userId: `usr_${c.repeat(32)}`, method: "email_otp" },
          }),
        )
        ids.push(envelope.eventId)
      }
      return ids
    }),
  )

  const first = startWorker("a")
  const held = await until("the first delivery to reach the receiver", async () => receiver.received[0], 60_000).catch(
    async (e) => {
      console.log("diagnostics: first worker output:", first.output())
      console.log(
        await sqlRows(
          app,
          "select id, key, task_identifier, locked_by, attempts, run_at, last_error from graphile_worker.jobs",
        ),
      )
      throw e
    },
  )
  const heldEventId = held.headers["x-auth-event-id"] as string
  expect(eventIds).toContain(heldEventId)
  // The attempt is in flight: recorded pending, sent by its event's fan-out job, which is
  // locked by the worker about to die.
  const [inFlight] = await sqlRows<{ id: string; status: string }>(
    app,
    "select id, status from webhook_deliveries where event_id = $1",
    [heldEventId],
  )
  expect(inFlight!.status).toBe("pending")
  const [lock] = await sqlRows<{ locked_by: string | null; attempts: number }>(
    app,
    "select locked_by, attempts from graphile_worker.jobs where key = $1",
    [`webhooks.fanout:${heldEventId}`],
  )
  expect(lock!.locked_by).not.toBeNull()

  killGroup(first.child, "SIGKILL")
  await first.exited

  const second = startWorker("b")
  try {
    await until(
      "every event to be delivered",
      async () => {
        const rows = await sqlRows<{ event_id: string }>(
          app,
          "select event_id from webhook_deliveries where webhook_id = $1 and status = 'delivered'",
          [webhook.id],
        )
        return rows.length === 3 ? rows : undefined
      },
      60_000,
    )
  } catch (e) {
    console.log("diagnostics: first worker output:", first.output(), "second worker output:", second.output())
    console.log(await sqlRows(app, "select * from webhook_deliveries"))
    console.log(await sqlRows(app, "select * from worker_heartbeats"))
    console.log(
      await sqlRows(
        app,
        "select id, key, task_identifier, locked_by, attempts, run_at, last_error from graphile_worker.jobs",
      ),
    )
    throw e
  }

  // Exactly one attempt record per event (the killed attempt was retried as itself), all delivered.
  const records = await sqlRows<{ event_id: string; attempt: number; status: string; response_status_code: number }>(
    app,
    "select event_id, attempt, status, response_status_code from webhook_deliveries where webhook_id = $1 order by event_id",
    [webhook.id],
  )
  expect(records).toEqual(
    [...eventIds].sort().map((event_id) => ({ event_id, attempt: 1, status: "delivered", response_status_code: 200 })),
  )
  // The held event reached the receiver twice (at least once), every event at least once, each signed.
  const seen = receiver.received.map((r) => r.headers["x-auth-event-id"])
  expect(seen.filter((id) => id === heldEventId).length).toBeGreaterThanOrEqual(2)
  for (const id of eventIds) expect(seen).toContain(id)
  for (const r of receiver.received) {
    expect(
      verifyWebhook({
        headers: r.headers,
        rawBody: r.rawBody,
        secrets: webhook.secret,
        now: Number(r.headers["x-auth-timestamp"]) * 1000,
      }).ok,
    ).toBe(true)
  }
  // Released through the heartbeat sweep, not graphile-worker's 4-hour timeout.
  expect(second.output()).toContain("released the jobs of workers that stopped beating")
  const beats = await sqlRows<{ process_id: string }>(app, "select process_id from worker_heartbeats")
  expect(beats).toHaveLength(1)

  // A clean stop removes the process's row (the group's exit is signalled before the worker's own cleanup ends: poll).
  killGroup(second.child, "SIGTERM")
  await second.exited
  await until(
    "the stopped worker to remove its heartbeat",
    async () => ((await sqlRows(app, "select 1 from worker_heartbeats")).length === 0 ? true : undefined),
    20_000,
  )
}, 150_000)
