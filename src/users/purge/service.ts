import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { recipientHashes } from "../../bounces/recipient.js"
import { Config } from "../../platform/config.js"
import { Crypto } from "../../platform/crypto.js"
import * as repo from "./repo.js"

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
}

/**
 * Purges users that have been `pending_deletion` (DELETE /v1/users/{id}, DELETE /me) for
 * the retention period (decisions, "Purge of deleted users"): their personal data and every
 * credential, session, grant and challenge are deleted with the user row, and the personal
 * parts of their audit records are redacted (audit records themselves are kept). Each batch
 * is one transaction over rows locked SKIP LOCKED, so concurrent purges never collide; a
 * `user.purged` audit record (actor system, no personal data) is written per user.
 */
export const purgeDeletedUsers = (options: PurgeOptions = {}) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const config = yield* Config
  const audit = yield* Audit
  const crypto = yield* Crypto
  const olderThanMs = options.olderThanMs ?? config.providers.userDeletionRetentionDays * DAY_MS
  const cutoff = new Date((yield* Clock.currentTimeMillis) - olderThanMs)
  if (options.dryRun) return { cutoff, userIds: yield* repo.countDueUsers(cutoff, options.environmentId), auditRecordsRedacted: 0 }
  const userIds: Array<string> = []
  let auditRecordsRedacted = 0
  for (;;) {
    const batch = yield* sql.withTransaction(Effect.gen(function* () {
      const due = yield* repo.lockDueUsers(cutoff, options.environmentId, BATCH)
      for (const user of due) {
        auditRecordsRedacted += yield* repo.redactAuditRecords(user)
        yield* repo.deleteUserData(user, (yield* recipientHashes(user.workspace_id, user.email)).all)
        yield* audit.append({
          workspaceId: user.workspace_id, environmentId: user.environment_id, actor: { type: "system" },
          action: "user.purged", subjectType: "user", subjectId: user.id,
          details: { deleted_at: user.deleted_at.toISOString(), older_than_days: olderThanMs / DAY_MS },
        })
      }
      return due.map((u) => u.id)
    }))
    userIds.push(...batch)
    if (batch.length < BATCH) break
  }
  return { cutoff, userIds, auditRecordsRedacted } satisfies PurgeReport
}).pipe(Effect.orDie, Effect.withSpan("users.purgeDeletedUsers"))
