import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { SEND_LOGIN_CODE_TASK, sendLoginCode } from "../login/email-otp/mail-job.js"
import { SEND_EMAIL_CHANGE_NOTICE_TASK, sendEmailChangeNotice } from "../me/email-change/notice-job.js"
import { webhookTasks } from "../webhooks/tasks.js"
import { housekeeping } from "./housekeeping.js"
import { purgeExpiredExports } from "../management/user-data-jobs/export-service.js"
import { USER_IMPORT_TASK } from "../management/user-data-jobs/import-service.js"
import { runImportTask } from "../management/user-data-jobs/import-task.js"
import { purgeDeletedUsers } from "../users/purge/service.js"

/** Every graphile-worker task, by identifier. Payloads are validated by each task. */
export const tasks: Record<string, (payload: unknown) => Effect.Effect<void, never, SqlClient.SqlClient | any>> = {
  housekeeping: () => housekeeping,
  ...webhookTasks,
  [SEND_LOGIN_CODE_TASK]: sendLoginCode,
  [SEND_EMAIL_CHANGE_NOTICE_TASK]: sendEmailChangeNotice,
  // A large CSV import, streamed in batches (decisions: "User import at scale").
  [USER_IMPORT_TASK]: runImportTask,
  // Export artifacts past their 15-minute download window are wiped.
  user_exports_purge: () => Effect.asVoid(purgeExpiredExports),
  // Users pending deletion past USER_DELETION_RETENTION_DAYS are purged (decisions, issue 11).
  users_purge_deleted: () => Effect.flatMap(purgeDeletedUsers(), (r) => r.userIds.length + r.failedUserIds.length === 0 ? Effect.void
    : Effect.logInfo("purged users pending deletion", {
      count: r.userIds.length, audit_records_redacted: r.auditRecordsRedacted, failed: r.failedUserIds.length,
    })),
}

/** graphile-worker crontab: housekeeping and the export purge every 5 minutes, the deleted-user purge hourly. */
export const crontab = "*/5 * * * * housekeeping ?max=1\n*/5 * * * * user_exports_purge ?max=1\n17 * * * * users_purge_deleted ?max=1"
