import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Jobs by state at `now`: locked (running), due (waiting for a worker), scheduled (later), dead (out of attempts). */
export const queueStates = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ state: string; n: number }>`
  select case
      when locked_at is not null then 'locked'
      when attempts >= max_attempts then 'dead'
      when run_at <= ${now} then 'due'
      else 'scheduled'
    end as state, count(*)::int as n
  from graphile_worker._private_jobs group by 1`,
  )

/** For each task with due, unlocked jobs: seconds since the oldest of them became due (delivery lag). */
export const queueLag = (now: Date) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ task: string; lag: number }>`
  select t.identifier as task, extract(epoch from (${now}::timestamptz - min(j.run_at)))::float8 as lag
  from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
  where j.is_available and j.run_at <= ${now}
  group by t.identifier`,
  )

/** The service's SQL-pool connections to this database (every replica; application_name authservice), by state. */
export const sqlConnections = SqlClient.SqlClient.use(
  (sql) => sql<{ state: string; n: number }>`
  select coalesce(state, 'unknown') as state, count(*)::int as n
  from pg_stat_activity where datname = current_database() and application_name = 'authservice'
  group by 1`,
)

export const readGauges = (now: Date) => Effect.all([queueStates(now), queueLag(now), sqlConnections])
