import { Effect } from "effect"
import { runMigrations } from "graphile-worker"
import pg from "pg"
import { workerLogger } from "./worker-logger.js"

/**
 * graphile-worker's `add_jobs` (every job we enqueue goes through it) is PL/pgSQL whose statements
 * read the `specs` array parameter; Postgres then judges a custom plan cheaper than the generic
 * one on every call and plans its four statements again each time: about 0.4 ms of planning per
 * call, two thirds of its cost (docs/decisions/performance.md, "Enqueuing a job"). A generic plan
 * gives the same rows (a plan never changes a result) and is made once per connection. Set
 * after every graphile-worker migration: an upgrade that replaces the function clears it.
 */
const ADD_JOBS = `"graphile_worker".add_jobs("graphile_worker".job_spec[], boolean)`
export const ADD_JOBS_PLAN_SETTING = "plan_cache_mode=force_generic_plan"
const INSUFFICIENT_PRIVILEGE = "42501"

/**
 * Sets it when it is not set, under a transaction-scoped advisory lock: two processes migrating at
 * once would otherwise update the function's catalog row together, and one would fail.
 */
const useGenericPlansInAddJobs = async (client: pg.PoolClient) => {
  await client.query("begin")
  try {
    await client.query("select pg_advisory_xact_lock(hashtext('authservice: add_jobs plan setting'))")
    const { rows } = await client.query<{ set: boolean }>(
      `select coalesce($1 = any(proconfig), false) as set from pg_proc where oid = '${ADD_JOBS}'::regprocedure`,
      [ADD_JOBS_PLAN_SETTING],
    )
    if (!rows[0]?.set) await client.query(`alter function ${ADD_JOBS} set plan_cache_mode = force_generic_plan`)
    await client.query("commit")
  } catch (e) {
    await client.query("rollback").catch(() => {})
    throw e
  }
}

/** Installs or upgrades graphile-worker's schema, so `add_job` works before any worker has started. */
export const installWorkerSchema = (url: string) =>
  Effect.promise(async () => {
    const pgPool = new pg.Pool({ connectionString: url, max: 1 })
    pgPool.on("error", () => {}).on("connect", (client) => client.on("error", () => {}))
    try {
      await runMigrations({ pgPool, logger: workerLogger })
      const client = await pgPool.connect()
      try {
        await useGenericPlansInAddJobs(client)
      } catch (e) {
        // A role that may migrate but does not own graphile-worker's functions: jobs are
        // enqueued as before, only slower; a speed setting does not stop the migration.
        if ((e as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw e
        workerLogger.warn(`add_jobs keeps planning on every call: ${(e as Error).message}`)
      } finally {
        client.release()
      }
    } finally {
      await pgPool.end()
    }
  })
