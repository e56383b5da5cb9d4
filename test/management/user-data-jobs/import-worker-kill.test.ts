import { createServer, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type TestApp, startApp } from "../../support/app.js"
import { type Child, killGroup, startEntry, stopChild, until } from "../../faults/support.js"
import { query } from "../support/db.js"

// Re-run safety of a large CSV import with real worker processes (docs/decisions/user-import-export.md): the worker
// running user_import.run is SIGKILLed in the middle of the file; another worker process
// takes the job over once the dead one's heartbeat is stale (src/jobs/heartbeat.ts, 30 s)
// and resumes after the committed batches. No user, event or row error is doubled.

let app: TestApp
let source: Server
const workers: Array<Child> = []
let hits = 0
let held: ServerResponse | undefined

const ROWS = 20_000
const body = (() => {
  const lines = ["email,name"]
  for (let i = 1; i <= ROWS; i++)
    lines.push(
      i === 500 ? "kill-499@example.com,Repeated" : `kill-${i}@example.com,Imported user number ${i} of the file`,
    )
  return Buffer.from(lines.join("\n") + "\n")
})()

beforeAll(async () => {
  app = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  source = createServer((_req, res) => {
    hits++
    res.writeHead(200, { "content-type": "text/csv" })
    // Request 1: the POST's head; 2: worker A's counting pass; 3: worker A's import pass,
    // held after 8,000 rows (worker A dies there); then worker B's two passes, served whole.
    if (hits === 3) {
      res.write(body.subarray(0, body.indexOf("\nkill-8001@") + 1))
      held = res
      return
    }
    res.end(body)
  })
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
}, 60_000)

afterAll(async () => {
  held?.destroy()
  await Promise.all(workers.map(stopChild))
  source?.closeAllConnections()
  source?.close()
  await app?.close()
}, 60_000)

const startWorker = (name: string) =>
  startEntry(
    "src/worker.ts",
    {
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WORKER_CONCURRENCY: "2",
      DATA_DIR: `/tmp/authservice-import-kill-${name}-${process.pid}`,
    },
    /worker: running/,
  )

describe("a worker SIGKILLed in the middle of an import", () => {
  it("another worker process resumes the job after the committed batches: each user, event and row error once", async () => {
    const w = await app.bootstrap()
    const workerA = await startWorker("a")
    workers.push(workerA)
    const url = `http://127.0.0.1:${(source.address() as AddressInfo).port}/users.csv`
    const res = await app.management("/v1/user-import-jobs", {
      method: "POST",
      body: { environment_id: w.environment_id, format: "csv", source_url: url },
      key: w.api_key,
    })
    expect(res.json.status).toBe("processing")
    const job = (): Promise<any> =>
      app.management(`/v1/user-import-jobs/${res.json.id}`, { key: w.api_key }).then((r) => r.json)
    const before = await until(
      "worker A to commit batches",
      async () => {
        const j = await job()
        return j.imported_count >= 3000 ? j : undefined
      },
      90_000,
    )
    killGroup(workerA, "SIGKILL")
    await workerA.exited
    held?.destroy()
    const [{ rows_done: committed }] = (await query<{ rows_done: number }>(
      app,
      "select rows_done from user_import_jobs where id = $1",
      [res.json.id],
    )) as [{ rows_done: number }]
    expect(committed).toBeGreaterThanOrEqual(before.imported_count)
    expect(committed % 1000).toBe(0)
    // Nothing moves while no worker runs.
    expect((await job()).status).toBe("processing")

    workers.push(await startWorker("b"))
    const ended = await until(
      "worker B to finish the job",
      async () => {
        const j = await job()
        return j.status === "processing" ? undefined : j
      },
      120_000,
      250,
    )
    expect(ended).toMatchObject({
      status: "completed",
      total_rows: ROWS,
      imported_count: ROWS - 1,
      skipped_count: 1,
      failed_count: 0,
      error_count: 1,
    })
    expect(hits).toBe(5)
    const [totals] = await query<{
      users: number
      distinct_emails: number
      events: number
      errors: number
      runs: number
    }>(
      app,
      `select
        (select count(*)::int from users where environment_id = $1) as users,
        (select count(distinct email_normalized)::int from users where environment_id = $1) as distinct_emails,
        (select count(*)::int from event_outbox where environment_id = $1 and type = 'user.created') as events,
        (select count(*)::int from user_import_job_errors where job_id = $2) as errors,
        (select runs from user_import_jobs where id = $2) as runs`,
      [w.environment_id, res.json.id],
    )
    expect(totals).toEqual({ users: ROWS - 1, distinct_emails: ROWS - 1, events: ROWS - 1, errors: 1, runs: 2 })
  }, 240_000)
})
