import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { recipientHashes } from "../../bounces/recipient.js"
import { Config } from "../../platform/config.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

const DAY_MS = 24 * 3600_000
const BATCH = 50

export interface PurgeOptions {
  /** Purge users pending deletion for at least this long; default: USER_DELETION_RETENTION_DAYS. */
  readonly olderThanMs?: number | undefined
  readonly environmentId?: string | undefined
  /** Report what would be purged, change nothing. */
  readonly dryRun?: boolean | undefined
}

export interface PurgeReport {
  readonly cutoff: Date
  readonly userIds: ReadonlyArray<string>
  readonly auditRecordsRedacted: number
  /** Users whose purge failed (logged): they stay pending deletion and are tried again next run. */
  readonly failedUserIds: ReadonlyArray<string>
}

/**
 * One user: audit records redacted, everything of the user deleted, `user.purged` appended.
 * Run in a savepoint of the batch, so a failure undoes this user's part only.
 */
const purgeUser = Effect.fnUntraced(function* (user: repo.DueUser, olderThanMs: number) {
  const audit = yield* Audit
  const redacted = yield* repo.redactAuditRecords(user)
  yield* repo.deleteUserData(user, (yield* recipientHashes(user.workspace_id, user.email)).all)
  yield* audit.append({
    workspaceId: user.workspace_id,
    environmentId: user.environment_id,
    actor: { type: "system" },
    action: "user.purged",
    subjectType: "user",
    subjectId: user.id,
    details: { deleted_at: user.deleted_at.toISOString(), older_than_days: olderThanMs / DAY_MS },
  })
  return redacted
})

/**
 * Purges users that have been `pending_deletion` (DELETE /v1/users/{id}, DELETE /me) for
 * the retention period (decisions, "Purge of deleted users"): their personal data and every
 * credential, session, grant and challenge are deleted with the user row, and the personal
 * parts of their audit records are redacted (audit records themselves are kept). Each batch
 * is one transaction over rows locked SKIP LOCKED, so concurrent purges never collide; a
 * `user.purged` audit record (actor system, no personal data) is written per user. Each user
 * is purged in its own savepoint: a user whose data cannot be deleted (a row the purge does
 * not know yet still refers to it) is rolled back alone, logged, reported and skipped for the
 * rest of the run, so it never stalls the users behind it (batches go oldest first).
 */
export const purgeDeletedUsers = (options: PurgeOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* Config
    const olderThanMs = options.olderThanMs ?? config.providers.userDeletionRetentionDays * DAY_MS
    const cutoff = new Date((yield* Clock.currentTimeMillis) - olderThanMs)
    if (options.dryRun) {
      return {
        cutoff,
        userIds: yield* repo.countDueUsers(cutoff, options.environmentId),
        auditRecordsRedacted: 0,
        failedUserIds: [],
      } satisfies PurgeReport
    }
    const userIds: Array<string> = []
    const failedUserIds: Array<string> = []
    let auditRecordsRedacted = 0
    for (;;) {
      const batch = yield* sql.withTransaction(
        Effect.gen(function* () {
          const due = yield* repo.lockDueUsers(cutoff, options.environmentId, failedUserIds, BATCH)
          const purged: Array<string> = []
          const failed: Array<string> = []
          let redacted = 0
          for (const user of due) {
            // A nested withTransaction is a savepoint: a failure rolls back this user only.
            const outcome = yield* sql.withTransaction(purgeUser(user, olderThanMs)).pipe(
              Effect.map((n) => ({ ok: true as const, redacted: n })),
              Effect.catchTag("SqlError", (e) =>
                Effect.as(
                  Effect.logError(
                    "purge: a user pending deletion could not be purged; it stays pending and is retried next run",
                    {
                      // the driver's message names the statement's constraint (e.g. the foreign key), never row data
                      user_id: user.id,
                      environment_id: user.environment_id,
                      cause: e.reason.cause instanceof Error ? e.reason.cause.message : e.message,
                    },
                  ),
                  { ok: false as const },
                ),
              ),
            )
            if (outcome.ok) {
              purged.push(user.id)
              redacted += outcome.redacted
            } else failed.push(user.id)
          }
          return { taken: due.length, purged, failed, redacted }
        }),
      )
      // Counted once the batch committed.
      userIds.push(...batch.purged)
      failedUserIds.push(...batch.failed)
      auditRecordsRedacted += batch.redacted
      if (batch.taken < BATCH) break
    }
    return { cutoff, userIds, auditRecordsRedacted, failedUserIds } satisfies PurgeReport
  }).pipe(Effect.orDie, withCallSpan("users.purgeDeletedUsers"))
