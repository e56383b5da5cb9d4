import type { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { SEND_LOGIN_CODE_TASK, sendLoginCode } from "../login/email-otp/mail-job.js"
import { webhookTasks } from "../webhooks/tasks.js"
import { housekeeping } from "./housekeeping.js"

/** Every graphile-worker task, by identifier. Payloads are validated by each task. */
export const tasks: Record<string, (payload: unknown) => Effect.Effect<void, never, SqlClient.SqlClient | any>> = {
  housekeeping: () => housekeeping,
  ...webhookTasks,
  [SEND_LOGIN_CODE_TASK]: sendLoginCode,
}

/** graphile-worker crontab: housekeeping every 5 minutes. */
export const crontab = "*/5 * * * * housekeeping ?max=1"
