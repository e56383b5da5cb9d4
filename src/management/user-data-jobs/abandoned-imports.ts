import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import type { Actor } from "../../platform/request-context.js"
import { importAuditDetails } from "./import-service.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * An import whose worker task used up its graphile-worker attempts (every run died: a crash, a
 * database error, a defect) would stay `processing` for ever, since no run is left to end it.
 * Housekeeping fails it with `worker_failed` (decisions: "User import at scale"), with the
 * `user_import_job.finished` audit record the task itself writes when it ends a job. The rows
 * the earlier runs committed stay imported and counted.
 */
export const WORKER_FAILED = "worker_failed"

export const failAbandonedImports = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const at = new Date(yield* Clock.currentTimeMillis)
  const audit = yield* Audit
  // The jobs and their audit records in one transaction.
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const ended = yield* repo.failAbandonedImports({
        failureCode: WORKER_FAILED,
        failureMessage: "The import stopped: its worker runs kept failing",
        at,
      })
      for (const job of ended) {
        const actor: Actor = {
          type: job.created_by_type as Actor["type"],
          ...(job.created_by_id ? { id: job.created_by_id } : {}),
        }
        yield* audit.append({
          workspaceId: job.workspace_id,
          environmentId: job.environment_id,
          actor,
          action: "user_import_job.finished",
          subjectType: "user_import_job",
          subjectId: job.id,
          result: "failure",
          details: importAuditDetails(job),
        })
      }
      return ended.length
    }),
  )
}).pipe(withCallSpan("userImport.failAbandoned"))
