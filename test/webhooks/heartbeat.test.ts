import { afterAll, beforeAll, expect, it } from "vitest"
import { beat, releaseStaleWorkers } from "../../src/jobs/heartbeat.js"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { addJob } from "../../src/platform/jobs.js"
import { type TestApp, startApp } from "../support/app.js"
import { sqlRows } from "./support.js"

// graphile-worker frees a dead worker's locked jobs only after 4 hours; the heartbeat sweep
// releases them once the worker's process has been silent for the stale time (TestClock).

let app: TestApp
beforeAll(async () => { app = await startApp() })
afterAll(async () => { await app?.close() })

const lockedBy = async (jobId: string) =>
  (await sqlRows<{ locked_by: string | null }>(app, "select locked_by from graphile_worker.jobs where id = $1::bigint", [jobId]))[0]!.locked_by

const lockedJob = async (owner: string) => {
  const id = await app.run(addJob("webhooks.deliver", { deliveryId: `dlv_${"z".repeat(32)}` }))
  await sqlRows(app, "update graphile_worker._private_jobs set locked_by = $1, locked_at = now(), attempts = 1 where id = $2::bigint", [owner, id])
  return id
}

it("releases exactly the jobs of processes whose last beat is older than the stale time, and forgets them", async () => {
  const deadJob = await lockedJob("pool-dead")
  const aliveJob = await lockedJob("pool-alive")
  await app.run(beat("wkp_dead", ["pool-dead", "worker-dead-1"]))
  await app.advance("20 seconds")
  await app.run(beat("wkp_alive", ["pool-alive"]))
  await app.advance("11 seconds") // dead: 31 s silent; alive: 11 s

  expect(await app.run(releaseStaleWorkers(30_000))).toEqual(["pool-dead", "worker-dead-1"])
  expect(await lockedBy(deadJob)).toBeNull()
  expect(await lockedBy(aliveJob)).toBe("pool-alive")
  expect((await sqlRows<{ process_id: string }>(app, "select process_id from worker_heartbeats")).map((r) => r.process_id)).toEqual(["wkp_alive"])
  // A second sweep has nothing left to do.
  expect(await app.run(releaseStaleWorkers(30_000))).toEqual([])

  // Housekeeping sweeps with the default stale time (30 s) too.
  await app.advance("30 seconds")
  await app.run(housekeeping)
  expect(await lockedBy(aliveJob)).toBeNull()
  expect(await sqlRows(app, "select 1 from worker_heartbeats")).toHaveLength(0)
})

it("a beat refreshes the row (a process that beats is never released)", async () => {
  const job = await lockedJob("pool-steady")
  for (let i = 0; i < 5; i++) {
    await app.run(beat("wkp_steady", ["pool-steady"]))
    await app.advance("10 seconds")
    expect(await app.run(releaseStaleWorkers(30_000))).toEqual([])
  }
  expect(await lockedBy(job)).toBe("pool-steady")
})
