import { Effect } from "effect"
import { sendLoginCode } from "../login/email-otp/mail-job.js"
import { sendEmailChangeNotice } from "../me/email-change/notice-job.js"
import { deliverTask, fanOutTask } from "../webhooks/tasks.js"
import { housekeeping } from "./housekeeping.js"
import { purgeExpiredExports } from "../management/user-data-jobs/export-service.js"
import { runImportTask } from "../management/user-data-jobs/import-task.js"
import { TASKS, type TaskName } from "../platform/jobs.js"
import { purgeDeletedUsers } from "../users/purge/service.js"

/**
 * How the worker runs a task: graphile-worker hands the job's JSON payload, each task
 * validates it against its schema in TASKS (src/platform/jobs.ts) and fails only by dying
 * (graphile-worker then retries up to the task's attempts).
 */
type TaskRun<R> = (payload: unknown) => Effect.Effect<void, never, R>

const runs = {
  [TASKS.housekeeping.name]: () => housekeeping,
  [TASKS.webhookFanout.name]: fanOutTask,
  [TASKS.webhookDeliver.name]: deliverTask,
  [TASKS.sendLoginCode.name]: sendLoginCode,
  [TASKS.sendEmailChangeNotice.name]: sendEmailChangeNotice,
  // A large CSV import, streamed in batches (decisions: "User import at scale").
  [TASKS.userImport.name]: runImportTask,
  // Export artifacts past their 15-minute download window are wiped.
  [TASKS.userExportsPurge.name]: () => Effect.asVoid(purgeExpiredExports),
  // Users pending deletion past USER_DELETION_RETENTION_DAYS are purged (docs/decisions/billing-bounces-retention.md).
  [TASKS.usersPurgeDeleted.name]: () =>
    Effect.flatMap(purgeDeletedUsers(), (r) =>
      r.userIds.length + r.failedUserIds.length === 0
        ? Effect.void
        : Effect.logInfo("purged users pending deletion", {
            count: r.userIds.length,
            audit_records_redacted: r.auditRecordsRedacted,
            failed: r.failedUserIds.length,
          }),
    ),
} satisfies { readonly [Name in TaskName]: TaskRun<unknown> }

/** The services the tasks run with (the application layer provides them to the worker). */
export type TaskServices = Effect.Services<ReturnType<(typeof runs)[TaskName]>>

/** Every graphile-worker task, by identifier: exactly the tasks of TASKS. */
export const tasks: { readonly [Name in TaskName]: TaskRun<TaskServices> } = runs

const cron = (schedule: string, task: (typeof TASKS)[keyof typeof TASKS]) =>
  `${schedule} ${task.name} ?max=${task.maxAttempts}`

/** graphile-worker crontab: housekeeping and the export purge every 5 minutes, the deleted-user purge hourly. */
export const crontab = [
  cron("*/5 * * * *", TASKS.housekeeping),
  cron("*/5 * * * *", TASKS.userExportsPurge),
  cron("17 * * * *", TASKS.usersPurgeDeleted),
].join("\n")
