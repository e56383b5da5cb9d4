import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface JobOptions {
  /** When the job becomes due; computed from Effect Clock by the caller. */
  readonly runAt?: Date | undefined
  readonly maxAttempts?: number | undefined
  readonly jobKey?: string | undefined
}

/**
 * Enqueues a graphile-worker job on the caller's connection: inside `sql.withTransaction`
 * the job exists if and only if the transaction commits.
 */
export const addJob = (task: string, payload: unknown, options: JobOptions = {}) =>
  SqlClient.SqlClient.use((sql) =>
    sql<{ id: string }>`select (graphile_worker.add_job(
      identifier => ${task},
      payload => ${JSON.stringify(payload)}::json,
      run_at => ${options.runAt ?? null}::timestamptz,
      max_attempts => ${options.maxAttempts ?? 25}::int,
      job_key => ${options.jobKey ?? null}::text
    )).id::text as id`).pipe(Effect.map((rows) => rows[0]!.id), Effect.orDie)
