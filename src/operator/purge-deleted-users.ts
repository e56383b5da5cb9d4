import { Effect } from "effect"
import { ConfigInvalid } from "../platform/config-invalid.js"
import type { PurgeArgs } from "./purge-args.js"
import { environmentExists } from "../users/purge/repo.js"
import { purgeDeletedUsers } from "../users/purge/service.js"

/** Runs the purge with the application's services; the JSON report the command prints. */
export const runPurge = Effect.fnUntraced(function* (args: PurgeArgs) {
  if (args.environmentId !== undefined && !(yield* environmentExists(args.environmentId))) {
    return yield* Effect.fail(new ConfigInvalid({ message: `no Environment ${args.environmentId}` }))
  }
  const report = yield* purgeDeletedUsers({
    olderThanMs: args.olderThanMs,
    environmentId: args.environmentId,
    dryRun: args.dryRun,
  })
  return {
    purged: args.dryRun ? 0 : report.userIds.length,
    user_ids: report.userIds,
    audit_records_redacted: report.auditRecordsRedacted,
    failed_user_ids: report.failedUserIds,
    cutoff: report.cutoff.toISOString(),
    environment_id: args.environmentId ?? null,
    dry_run: args.dryRun,
  }
})
