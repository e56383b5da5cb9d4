import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, expect, it } from "vitest"
import { housekeeping } from "../../../src/jobs/housekeeping.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { query } from "../support/db.js"
import { workspaceAuditRows } from "../support/records.js"

// An import whose worker task used up its graphile-worker attempts (every run died) has no run
// left to end it: housekeeping fails it (`worker_failed`) instead of leaving it `processing`
// for ever. An import whose task is still queued, retrying or running keeps going. No worker
// runs here: the job states are set as graphile-worker leaves them.

let app: TestApp
let b: Bootstrapped
let source: Server
// More than the 1 MiB imported inside the request: the job is handed to the worker task.
const body = Buffer.from(
  [
    "email,name",
    ...Array.from({ length: 20_000 }, (_, i) => `abandoned-${i}@example.com,Imported user number ${i} of the file`),
  ].join("\n") + "\n",
)

beforeAll(async () => {
  app = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  b = await app.bootstrap()
  source = createServer((_req, res) => res.writeHead(200, { "content-type": "text/csv" }).end(body))
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
})
afterAll(async () => {
  source?.closeAllConnections()
  source?.close()
  await app?.close()
})

const startImport = async () => {
  const res = await app.management("/v1/user-import-jobs", {
    method: "POST",
    body: {
      environment_id: b.environment_id,
      format: "csv",
      source_url: `http://127.0.0.1:${(source.address() as AddressInfo).port}/users.csv`,
    },
  })
  expect(res.status, res.text).toBe(201)
  expect(res.json.status).toBe("processing")
  return res.json.id as string
}

/** Sets the import's graphile-worker job as graphile-worker leaves it. */
const setTaskJob = (importId: string, state: { attempts: "used" | "left"; locked: boolean }) =>
  query(
    app,
    `update graphile_worker._private_jobs set attempts = case when $2 then max_attempts else 1 end,
     locked_at = case when $3 then now() else null end, locked_by = case when $3 then 'pool-somewhere' else null end,
     last_error = 'the run died'
   where key = 'user_import.run:' || $1::text`,
    [importId, state.attempts === "used", state.locked],
  )

const statusOf = async (id: string) => (await app.management(`/v1/user-import-jobs/${id}`)).json

it("housekeeping fails an import whose worker task used its attempts or is gone, and only those", async () => {
  const usedUp = await startImport()
  const lastRunning = await startImport()
  const retrying = await startImport()
  const gone = await startImport()
  await setTaskJob(usedUp, { attempts: "used", locked: false })
  await setTaskJob(lastRunning, { attempts: "used", locked: true })
  await setTaskJob(retrying, { attempts: "left", locked: false })
  await query(app, `delete from graphile_worker._private_jobs where key = 'user_import.run:' || $1::text`, [gone])

  await app.run(housekeeping)
  for (const id of [usedUp, gone]) {
    const job = await statusOf(id)
    expect(job).toMatchObject({
      status: "failed",
      completed_at: expect.any(String),
      error: expect.objectContaining({ code: "worker_failed" }),
    })
    const [row] = await query<{ source_url_sealed: string | null }>(
      app,
      "select source_url_sealed from user_import_jobs where id = $1",
      [id],
    )
    expect(row!.source_url_sealed).toBeNull()
  }
  // Still queued or retrying, or running its last attempt: left to the worker.
  for (const id of [lastRunning, retrying]) expect((await statusOf(id)).status).toBe("processing")
  const finished = await workspaceAuditRows(app, b.workspace_id, "user_import_job.finished")
  expect(finished.map((r) => r.subject_id).sort()).toEqual([usedUp, gone].sort())
  expect(
    finished.every(
      (r) => r.result === "failure" && r.actor_type === "api_key" && r.details.failure_code === "worker_failed",
    ),
  ).toBe(true)

  // The last run died too (its lock released by the heartbeat sweep): the next housekeeping ends it.
  await setTaskJob(lastRunning, { attempts: "used", locked: false })
  await app.run(housekeeping)
  expect((await statusOf(lastRunning)).status).toBe("failed")
  expect((await statusOf(retrying)).status).toBe("processing")
  // Once ended, nothing more happens to it.
  await app.run(housekeeping)
  expect(await workspaceAuditRows(app, b.workspace_id, "user_import_job.finished")).toHaveLength(3)
})
