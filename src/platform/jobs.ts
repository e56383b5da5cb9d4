import { Effect, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { currentTraceparent } from "./observability/trace-context.js"

// The graphile-worker tasks of the service, declared once, and the one way to enqueue them.
// Every `graphile_worker.add_job(s)` of src/ is written here: features enqueue with `addJob`
// or `addJobs` (statements of their own, on the caller's connection: inside its transaction)
// or put `addJobCall` inside a statement that must enqueue atomically with its change (the
// outbox); the worker registers exactly these tasks (src/jobs/tasks.ts, typed from TASKS).

/**
 * graphile-worker's own attempts at a job: they cover crashes and database failures, not a
 * task's business failures (a webhook's HTTP failures are scheduled by src/webhooks/schedule.ts).
 */
const DEFAULT_MAX_ATTEMPTS = 25

/** A graphile-worker task: its identifier, the schema of its payload, graphile-worker's attempts. */
export interface Task<Name extends string = string, Payload extends Schema.Top = Schema.Top> {
  readonly name: Name
  readonly payload: Payload
  readonly maxAttempts: number
}

export const task = <const Name extends string, Payload extends Schema.Top>(
  name: Name,
  payload: Payload,
  maxAttempts = DEFAULT_MAX_ATTEMPTS,
): Task<Name, Payload> => ({ name, payload, maxAttempts })

/** A cron task's payload is graphile-worker's own (`_cron`); the tasks do not read it. */
const CronPayload = Schema.Unknown

/** Every task of the worker, by what it does. */
export const TASKS = {
  /** The webhook fan-out of one outbox event (src/webhooks/tasks.ts), enqueued with the event. */
  webhookFanout: task("webhooks.fanout", Schema.Struct({ eventId: Schema.String })),
  /** One webhook delivery attempt, enqueued with its attempt record. */
  webhookDeliver: task("webhooks.deliver", Schema.Struct({ deliveryId: Schema.String })),
  /**
   * The mail of a login code (src/login/email-otp/mail-job.ts): the code and the address travel
   * sealed. Mail is useless after the code's 5 minutes: few retries, close together.
   */
  sendLoginCode: task(
    "send_login_code",
    Schema.Struct({
      environment_id: Schema.String,
      challenge_id: Schema.String,
      generation: Schema.Number,
      sealed: Schema.String,
    }),
    3,
  ),
  /** The notice to the old address of an email change (src/me/email-change/notice-job.ts); addresses travel sealed. */
  sendEmailChangeNotice: task(
    "send_email_change_notice",
    Schema.Struct({
      environment_id: Schema.String,
      user_id: Schema.String,
      security_version: Schema.Number,
      sealed: Schema.String,
    }),
    10,
  ),
  /** A large CSV user import, streamed in batches (src/management/user-data-jobs/import-task.ts). */
  userImport: task("user_import.run", Schema.Struct({ jobId: Schema.String }), 10),
  // Cron tasks (src/jobs/tasks.ts `crontab`): one attempt; the next tick runs them again.
  housekeeping: task("housekeeping", CronPayload, 1),
  userExportsPurge: task("user_exports_purge", CronPayload, 1),
  usersPurgeDeleted: task("users_purge_deleted", CronPayload, 1),
} as const

export type TaskName = (typeof TASKS)[keyof typeof TASKS]["name"]

/** What a task is enqueued with: its schema's encoded side (graphile-worker stores JSON). */
export type PayloadOf<T extends Task> = T["payload"]["Encoded"]

/** The job key of one job of `task` about `id` (`webhooks.deliver:<dlv id>`): one job per thing. */
export const jobKey = (task: Task, id: string) => `${task.name}:${id}`

/** The job key in SQL, for an id that is a column or expression of the statement. */
export const jobKeySql = (sql: SqlClient.SqlClient, task: Task, id: Statement.Fragment) =>
  sql`${`${task.name}:`}::text || ${id}`

/** The parts of a job that a statement computes (SQL expressions). */
export interface JobSql {
  readonly payload: Statement.Fragment
  readonly runAt: Statement.Fragment
  readonly jobKey: Statement.Fragment
  /**
   * The `traceparent` of the span that queues the job (`currentTraceparent`), stored in the
   * payload: the job's span is then a child of it, in the same trace (docs/decisions/observability.md).
   */
  readonly traceparent?: string | undefined
}

/** The payload expression with the queuing span's `traceparent` added (as is without one). */
const tracedPayload = (sql: SqlClient.SqlClient, payload: Statement.Fragment, traceparent: string | undefined) =>
  traceparent === undefined
    ? payload
    : sql`((${payload})::jsonb || jsonb_build_object('traceparent', ${traceparent}::text))::json`

/** `graphile_worker.add_job(...)` of one job of `task`, to put inside a statement; returns the job row. */
export const addJobCall = (sql: SqlClient.SqlClient, task: Task, job: JobSql) => sql`graphile_worker.add_job(
      identifier => ${task.name}::text,
      payload => ${tracedPayload(sql, job.payload, job.traceparent)},
      run_at => ${job.runAt},
      max_attempts => ${task.maxAttempts}::int,
      job_key => ${job.jobKey}
    )`

/** The jobs of one `addJobs` statement: one per row of `from`, over whose columns the job's expressions range. */
export interface JobsSql extends JobSql {
  /** graphile-worker's priority (lower runs first). */
  readonly priority: Statement.Fragment
  readonly from: Statement.Fragment
  /**
   * Common table expressions put before the statement (`name as (...)`), which `from` may read:
   * a change and the jobs it calls for in one autocommit statement, one round trip.
   */
  readonly with?: Statement.Fragment | undefined
}

/** Enqueues one job of `task` per row, in one statement (`graphile_worker.add_jobs`); returns how many. */
export const addJobs = (task: Task, jobs: (sql: SqlClient.SqlClient) => JobsSql) =>
  Effect.flatMap(currentTraceparent, (traceparent) =>
    SqlClient.SqlClient.use((sql) => {
      const j = jobs(sql)
      return sql<{
        n: number
      }>`${j.with === undefined ? sql`` : sql`with ${j.with} `}select count(*)::int as n from graphile_worker.add_jobs(array(
      select row(${task.name}::text, ${tracedPayload(sql, j.payload, j.traceparent ?? traceparent)}, null, ${j.runAt}, ${task.maxAttempts}::smallint,
        ${j.jobKey}, ${j.priority}, null)::graphile_worker.job_spec
      from ${j.from}))`
    }),
  ).pipe(Effect.map((rows) => rows[0]?.n ?? 0))

export interface JobOptions {
  /** When the job becomes due; computed from Effect Clock by the caller. */
  readonly runAt?: Date | undefined
  readonly jobKey?: string | undefined
  /** CTEs to run in the same statement (e.g. the audit record of what queued the job, `Audit.cte`): one round trip. */
  readonly with?: Statement.Fragment | undefined
}

/**
 * Enqueues a graphile-worker job on the caller's connection: inside `sql.withTransaction`
 * the job exists if and only if the transaction commits.
 */
export const addJob = <T extends Task>(task: T, payload: PayloadOf<T>, options: JobOptions = {}) =>
  Effect.flatMap(currentTraceparent, (traceparent) =>
    SqlClient.SqlClient.use(
      (sql) =>
        sql<{ id: string }>`${options.with === undefined ? sql`` : sql`with ${options.with} `}select (${addJobCall(
          sql,
          task,
          {
            payload: sql`${JSON.stringify(payload)}::json`,
            runAt: sql`${options.runAt ?? null}::timestamptz`,
            jobKey: sql`${options.jobKey ?? null}::text`,
            traceparent,
          },
        )}).id::text as id`,
    ),
  ).pipe(
    Effect.map((rows) => rows[0]!.id),
    Effect.orDie,
  )
