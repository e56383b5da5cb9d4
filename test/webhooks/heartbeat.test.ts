import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, beforeAll, expect, it } from "vitest"
import { beat, releaseStaleWorkers } from "../../src/jobs/heartbeat.js"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { addJob, TASKS } from "../../src/platform/jobs.js"
import { type TestApp, startApp } from "../support/app.js"
import { sqlRows } from "./support.js"

// graphile-worker frees a dead worker's locked jobs only after 4 hours; the heartbeat sweep
// releases them once the worker's process has been silent for the stale time. Silence is
// measured in the database's clock, never a process's (the processes run on several hosts):
// here a process falls silent by having its last beat aged in the database.

let app: TestApp
beforeAll(async () => {
  app = await startApp()
})
afterAll(async () => {
  await app?.close()
})

const lockedBy = async (jobId: string) =>
  (
    await sqlRows<{ locked_by: string | null }>(
      app,
      "select locked_by from graphile_worker.jobs where id = $1::bigint",
      [jobId],
    )
  )[0]!.locked_by

const lockedJob = async (owner: string) => {
  const id = await app.run(addJob(TASKS.webhookDeliver, { deliveryId: `dlv_${"z".repeat(32)}` }))
  await sqlRows(
    app,
    "update graphile_worker._private_jobs set locked_by = $1, locked_at = now(), attempts = 1 where id = $2::bigint",
    [owner, id],
  )
  return id
}

/** The process has been silent this long, by the database's clock. */
const silentFor = (processId: string, seconds: number) =>
  sqlRows(
    app,
    "update worker_heartbeats set beat_at = now() - make_interval(secs => $2::float8) where process_id = $1",
    [processId, seconds],
  )

/** Runs an Effect on a host whose clock is `offsetMs` away from the database's. */
const onHostWithClockOff = <A, E>(offsetMs: number, effect: Effect.Effect<A, E, any>) =>
  app.run(
    Effect.gen(function* () {
      const clock = yield* TestClock.make()
      yield* clock.setTime(Date.now() + offsetMs)
      return yield* Effect.provideService(effect, Clock.Clock, clock)
    }).pipe(Effect.scoped),
  )

it("releases exactly the jobs of processes silent longer than the stale time, and forgets them", async () => {
  const deadJob = await lockedJob("pool-dead")
  const aliveJob = await lockedJob("pool-alive")
  await app.run(beat("wkp_dead", ["pool-dead", "worker-dead-1"]))
  await app.run(beat("wkp_alive", ["pool-alive"]))
  await silentFor("wkp_dead", 31)
  await silentFor("wkp_alive", 11)

  expect(await app.run(releaseStaleWorkers(30_000))).toEqual(["pool-dead", "worker-dead-1"])
  expect(await lockedBy(deadJob)).toBeNull()
  expect(await lockedBy(aliveJob)).toBe("pool-alive")
  expect(
    (await sqlRows<{ process_id: string }>(app, "select process_id from worker_heartbeats")).map((r) => r.process_id),
  ).toEqual(["wkp_alive"])
  // A second sweep has nothing left to do.
  expect(await app.run(releaseStaleWorkers(30_000))).toEqual([])

  // Housekeeping sweeps with the default stale time (30 s) too.
  await silentFor("wkp_alive", 30.5)
  await app.run(housekeeping)
  expect(await lockedBy(aliveJob)).toBeNull()
  expect(await sqlRows(app, "select 1 from worker_heartbeats")).toHaveLength(0)
})

it("a beat refreshes the row (a process that beats is never released)", async () => {
  const job = await lockedJob("pool-steady")
  for (let i = 0; i < 5; i++) {
    await silentFor("wkp_steady", 25)
    await app.run(beat("wkp_steady", ["pool-steady"]))
    expect(await app.run(releaseStaleWorkers(30_000))).toEqual([])
  }
  expect(await lockedBy(job)).toBe("pool-steady")
})

it("a process's host clock does not matter: one an hour behind is not released while it beats, one an hour ahead is released 30 s after it stops", async () => {
  const behindJob = await lockedJob("pool-behind")
  const aheadJob = await lockedJob("pool-ahead")
  await onHostWithClockOff(-3600_000, beat("wkp_behind", ["pool-behind"]))
  await onHostWithClockOff(3600_000, beat("wkp_ahead", ["pool-ahead"]))
  // Swept from hosts whose clocks are off the other way.
  expect(await onHostWithClockOff(3600_000, releaseStaleWorkers(30_000))).toEqual([])
  expect(await lockedBy(behindJob)).toBe("pool-behind")
  await silentFor("wkp_ahead", 31)
  expect(await onHostWithClockOff(-3600_000, releaseStaleWorkers(30_000))).toEqual(["pool-ahead"])
  expect(await lockedBy(aheadJob)).toBeNull()
  expect(await lockedBy(behindJob)).toBe("pool-behind")
})
