import { Effect } from "effect"
import pg from "pg"
import { beforeAll, expect, inject, it } from "vitest"
import { ADD_JOBS_PLAN_SETTING, installWorkerSchema } from "../../src/platform/worker-schema.js"
import { scratchDatabase } from "../support/template.js"

// graphile-worker's add_jobs plans its statements once per connection (a generic plan) instead of
// on every call (src/platform/worker-schema.ts): set by every migration of graphile-worker's
// schema, again after an upgrade cleared it, and by two migrating processes at once; a migrating
// role that does not own the function migrates without it.

let url: string

const query = async <T extends pg.QueryResultRow>(text: string, values: Array<unknown> = []) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end()
  }
}

const addJobsSettings = async () =>
  (
    await query<{ proconfig: Array<string> | null }>(
      `select proconfig from pg_proc where oid = '"graphile_worker".add_jobs("graphile_worker".job_spec[], boolean)'::regprocedure`,
    )
  )[0]!.proconfig

/** What a graphile-worker upgrade does to the function: replaced, its settings gone. */
const clearSetting = () =>
  query(`alter function "graphile_worker".add_jobs("graphile_worker".job_spec[], boolean) reset all`)

beforeAll(async () => {
  url = (await scratchDatabase(inject("serverUrl"), inject("templateDb"), "addjobs")).url
})

it("installing graphile-worker's schema makes add_jobs use generic plans, and jobs are still added", async () => {
  await Effect.runPromise(installWorkerSchema(url))
  expect(await addJobsSettings()).toEqual([ADD_JOBS_PLAN_SETTING])

  // A generic plan gives the same rows: jobs are added, one per spec, and a job key still replaces.
  await query(`select graphile_worker.add_job('probe', json_build_object('n', 1), job_key := 'probe:1')`)
  await query(`select graphile_worker.add_job('probe', json_build_object('n', 2), job_key := 'probe:1')`)
  await query(
    `select * from graphile_worker.add_jobs(array[
      row('probe', '{"n":3}'::json, null, null, null, null, null, null)::graphile_worker.job_spec,
      row('probe', '{"n":4}'::json, null, null, null, null, null, null)::graphile_worker.job_spec])`,
  )
  expect(
    (
      await query<{ payload: { n: number }; key: string | null }>(
        "select payload, key from graphile_worker._private_jobs order by id",
      )
    ).map((r) => [r.payload.n, r.key]),
  ).toEqual([
    [2, "probe:1"],
    [3, null],
    [4, null],
  ])
})

it("a migration after an upgrade cleared the setting sets it again; a second one changes nothing", async () => {
  await clearSetting()
  expect(await addJobsSettings()).toBeNull()
  await Effect.runPromise(installWorkerSchema(url))
  expect(await addJobsSettings()).toEqual([ADD_JOBS_PLAN_SETTING])
  await Effect.runPromise(installWorkerSchema(url))
  expect(await addJobsSettings()).toEqual([ADD_JOBS_PLAN_SETTING])
})

it("two processes migrating at once both succeed and leave it set", async () => {
  for (let round = 0; round < 3; round++) {
    await clearSetting()
    await Promise.all([Effect.runPromise(installWorkerSchema(url)), Effect.runPromise(installWorkerSchema(url))])
    expect(await addJobsSettings()).toEqual([ADD_JOBS_PLAN_SETTING])
  }
})

it("a migrating role that does not own graphile-worker's functions migrates all the same, without the setting", async () => {
  const role = `authservice_not_owner_${process.pid}`
  await query(`drop role if exists ${role}`)
  await query(`create role ${role} login password 'not-owner'`)
  try {
    await query(`grant usage on schema graphile_worker to ${role}`)
    await query(`grant select on all tables in schema graphile_worker to ${role}`)
    await clearSetting()
    const asRole = new URL(url)
    asRole.username = role
    asRole.password = "not-owner"
    await Effect.runPromise(installWorkerSchema(asRole.toString()))
    expect(await addJobsSettings()).toBeNull()
  } finally {
    await query(`drop owned by ${role}`)
    await query(`drop role ${role}`)
  }
})
