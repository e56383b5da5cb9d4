import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { addJob, TASKS } from "../../src/platform/jobs.js"
import { type TestApp, startApp } from "../support/app.js"
import { type Child, killGroup, startEntry, stopChild, until } from "./support.js"

// graphile-worker shuts its runner down when it cannot complete a job (pool:fatalError: "queue
// is in an inconsistent state"), and after repeated failures that shutdown can hang with the
// job still locked. A real worker process replaces such a runner within a bounded time and
// releases what the old one had locked; a stop that comes while the replacement is starting
// stops it too and leaves nothing locked. The fault is made deterministic with a trigger that
// makes graphile-worker's completion (a DELETE of the job row) fail while a flag is set.

let app: TestApp
let db: pg.Client
let worker: Child | undefined

beforeAll(async () => {
  app = await startApp()
  db = new pg.Client({ connectionString: app.databaseUrl })
  await db.connect()
  await db.query(`create table test_faults (name text primary key)`)
  await db.query(`create function test_fail_job_completion() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from test_faults where name = 'complete') then raise exception 'injected fault: job completion fails'; end if;
      return old;
    end $$`)
  await db.query(`create trigger test_fail_job_completion before delete on graphile_worker._private_jobs
    for each row execute function test_fail_job_completion()`)
}, 60_000)

afterAll(async () => {
  if (worker) await stopChild(worker)
  await db?.end()
  await app?.close()
}, 60_000)

const startWorker = (env: Record<string, string> = {}) =>
  startEntry(
    "src/worker.ts",
    {
      DATABASE_URL: app.databaseUrl,
      MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
      DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-runner-lost-")),
      WORKER_CONCURRENCY: "2",
      ...env,
    },
    /worker: running/,
  )

const faultOn = () => db.query(`insert into test_faults values ('complete') on conflict do nothing`)
const faultOff = () => db.query(`delete from test_faults`)
/** A job that runs in milliseconds (a delivery that does not exist is skipped). */
const quickJob = (n: number) =>
  app.run(addJob(TASKS.webhookDeliver, { deliveryId: `dlv_${String(n).padStart(32, "q")}` }))
const jobRow = async (id: string) =>
  (
    await db.query<{ locked_by: string | null; attempts: number }>(
      `select locked_by, attempts from graphile_worker.jobs where id = $1::bigint`,
      [id],
    )
  ).rows[0]
const lockedJobs = async () => (await db.query(`select id from graphile_worker.jobs where locked_by is not null`)).rows
/**
 * The worker runners (process id and number, as src/jobs/worker.ts names each runner's pool) that
 * hold connections to this test's database: only the worker process started here has runners.
 */
const runnersConnected = async () =>
  (
    await db.query<{ application_name: string }>(
      `select distinct application_name from pg_stat_activity
      where datname = current_database() and application_name like 'authservice-worker % runner %'`,
    )
  ).rows.map((r) => r.application_name)
const heartbeatIds = async () =>
  (await db.query<{ worker_ids: Array<string> }>(`select worker_ids from worker_heartbeats`)).rows.flatMap(
    (r) => r.worker_ids,
  )
const occurrences = (text: string, needle: string) => text.split(needle).length - 1
/** On a failure: what the worker said and what the database was running, for the CI log. */
const reportState = async () => {
  console.log("worker output:", worker?.output().slice(-4000))
  const activity = await db
    .query(`select pid, state, wait_event_type, now() - query_start as running_for, left(query, 120) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`)
    .then((r) => r.rows)
    .catch((e: unknown) => String(e))
  console.log("database activity:", JSON.stringify(activity, null, 1))
}
/** `until`, reporting the worker's output and the database's activity when it times out. */
const untilReported = (what: string, probe: () => Promise<true | undefined>, timeoutMs: number) =>
  until(what, probe, timeoutMs).catch(async (e: unknown) => {
    await reportState()
    throw e
  })

it("a runner that cannot complete a job is replaced: the process stays up, the new runner takes jobs, the old one's locked job is released and run", async () => {
  worker = await startWorker()
  await faultOn()
  const stuck = await quickJob(1)
  await until(
    "the runner to be reported lost",
    async () => (worker!.output().includes("graphile-worker runner lost") ? true : undefined),
    30_000,
  )
  // While the fault lasts the job is run again and again by new runners (with backoff) and left
  // locked; the runner holding it is named in the heartbeat row (lost or not), so another
  // process would release it if this one died.
  await until(
    "the job's holder in the heartbeat row",
    async () =>
      (
        await db.query(
          `select 1 from graphile_worker.jobs j, worker_heartbeats h where j.id = $1::bigint and j.locked_by = any(h.worker_ids)`,
          [stuck],
        )
      ).rows.length > 0
        ? true
        : undefined,
    30_000,
  )
  await faultOff()

  // Within the bounded stop (5 s) or kill (6 s), a new runner; the old runner's job released and run again.
  const recovered = Date.now()
  await until(
    "the stuck job to run again and complete",
    async () => ((await jobRow(stuck)) === undefined ? true : undefined),
    30_000,
  ).catch((e) => {
    console.log("worker output:", worker!.output().slice(-4000))
    throw e
  })
  expect(Date.now() - recovered).toBeLessThan(30_000)
  expect(worker.output()).toContain("graphile-worker runner started again")
  // Every retired runner's pool was ended before its replacement started: of the runners this
  // process started, only the last one has connections (a runner stopped after a fatal error
  // can go on fetching jobs, and a job it locks after its ids were released is run by nobody).
  // (A closed connection leaves pg_stat_activity a moment after the client closes it.)
  await until(
    "one runner's connections",
    async () => ((await runnersConnected()).length === 1 ? true : undefined),
    2_000,
    50,
  ).catch(async (e) => {
    console.log("runners connected:", await runnersConnected())
    throw e
  })
  const next = await quickJob(2)
  await until(
    "the new runner to take a new job",
    async () => ((await jobRow(next)) === undefined ? true : undefined),
    15_000,
  )

  expect(worker.process.exitCode).toBeNull()
  expect(await lockedJobs()).toEqual([])
  // Once released, the lost runners' ids leave the row: the pool and its 2 workers remain.
  await until(
    "the heartbeat row to name only the live runner",
    async () => ((await heartbeatIds()).length === 3 ? true : undefined),
    15_000,
  )
}, 120_000)

it("a stop that comes while the replacement runner is starting stops it too: the process exits and leaves nothing locked", async () => {
  worker ??= await startWorker()
  // Hold graphile-worker's migrations table: a new runner's start waits on it (its first query).
  const holder = new pg.Client({ connectionString: app.databaseUrl })
  await holder.connect()
  try {
    await holder.query("begin")
    await holder.query("lock table graphile_worker.migrations in access exclusive mode")
    const before = occurrences(worker.output(), "graphile-worker runner lost")
    await faultOn()
    const stuck = await quickJob(3)
    await until(
      "the runner to be reported lost",
      async () => (occurrences(worker!.output(), "graphile-worker runner lost") > before ? true : undefined),
      30_000,
    )
    await until(
      "the replacement to be starting (waiting on the lock)",
      async () =>
        (
          await db.query(
            `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%migrations%' and pid <> pg_backend_pid()`,
          )
        ).rows.length > 0
          ? true
          : undefined,
      30_000,
    )

    killGroup(worker, "SIGTERM")
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    await faultOff()
    await holder.query("rollback")
    const stopping = Date.now()
    await until(
      "the worker to exit",
      async () => (worker!.process.exitCode !== null || worker!.process.signalCode !== null ? true : undefined),
      20_000,
    ).catch((e) => {
      console.log("worker output:", worker!.output().slice(-4000))
      throw e
    })
    expect(Date.now() - stopping).toBeLessThan(20_000)
    expect(worker.process.exitCode).toBe(0)
    // The lost runner's job is not left locked for graphile-worker's 4 hours, and the process forgot its row.
    expect(await lockedJobs()).toEqual([])
    expect((await jobRow(stuck))?.locked_by ?? null).toBeNull()
    expect(await heartbeatIds()).toEqual([])
  } finally {
    await holder.end().catch(() => {})
  }
}, 120_000)

it("a job fetch that failed retires the runner at the next heartbeat that succeeds (the database may still run that fetch and lock a job no task runs)", async () => {
  if (worker) await stopChild(worker)
  // graphile-worker's fetch is bounded by node-postgres's query_timeout (the statement bound,
  // here 1 s), which gives up on the client only: a database that still holds the statement
  // (frozen, or waiting for a lock as here) runs it later, and a job it locks then is locked
  // under the runner's id with no task of this process running it, for graphile-worker's 4
  // hours. The worker cannot know whether that happened, so a failed fetch retires its runner as
  // a failed heartbeat does: replaced, and its jobs released once it is stopped.
  // The case before leaves its stuck job queued (released, runnable). A runner that takes it just
  // as the lock below is taken cannot complete it: a fatal pool error retires that runner for
  // another reason, and its replacement, started after the lock, has no failed fetch (CI saw it).
  await db.query("delete from graphile_worker._private_jobs")
  worker = await startWorker({ DATABASE_STATEMENT_TIMEOUT_MS: "1000" })
  const holder = new pg.Client({ connectionString: app.databaseUrl })
  await holder.connect()
  try {
    await holder.query("begin")
    await holder.query("lock table graphile_worker._private_jobs in exclusive mode")
    await until(
      "a job fetch waiting on the lock past the worker's 1 s bound",
      async () =>
        (
          await db.query(
            `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%_private_jobs%'
              and now() - query_start > interval '1500 milliseconds'`,
          )
        ).rows.length > 0
          ? true
          : undefined,
      30_000,
    )
    // The worker's own word that a fetch failed, not the time alone.
    await untilReported(
      "the worker to report the failed fetch",
      async () => (worker!.output().includes("a job fetch failed") ? true : undefined),
      30_000,
    )
    await holder.query("commit")
  } finally {
    await holder.end().catch(() => {})
  }
  await untilReported(
    "the runner to be retired after the failed fetch",
    async () => (worker!.output().includes("the database is back after a failed job fetch") ? true : undefined),
    20_000,
  )
  // The replacement runner starts after the old one has stopped, a moment after the line above.
  await until(
    "the replacement runner to start",
    async () => (worker!.output().includes("graphile-worker runner started again") ? true : undefined),
    20_000,
  )
  const next = await quickJob(4)
  await until(
    "the new runner to run a new job",
    async () => ((await jobRow(next)) === undefined ? true : undefined),
    20_000,
  )
  await until("no job left locked", async () => ((await lockedJobs()).length === 0 ? true : undefined), 20_000)
  expect(worker.process.exitCode).toBeNull()
}, 120_000)
