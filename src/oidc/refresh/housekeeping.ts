import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { purgeExpiredGrace } from "./repo.js"

/** Ended families (and their token rows) are kept this long after they end, then deleted. */
const KEEP_ENDED_FAMILIES_MS = 30 * 24 * 3600_000
/** Authorization codes are kept a day past expiry (a late replay still finds and revokes its grant). */
const KEEP_EXPIRED_CODES_MS = 24 * 3600_000

/**
 * The token side's part of housekeeping: sealed winner responses are purged once their
 * 5-second grace window has passed (docs/architecture.md: "purged after the window"); families that
 * ended (revoked, or past their idle or absolute expiry) more than 30 days ago are deleted
 * with their token rows; authorization codes a day past expiry are deleted.
 */
export const sweepTokenSide = Effect.fnUntraced(function* (now: Date) {
  const sql = yield* SqlClient.SqlClient
  const purged = yield* purgeExpiredGrace(now)
  const before = new Date(now.getTime() - KEEP_ENDED_FAMILIES_MS)
  const families = yield* sql<{ id: string }>`delete from refresh_families
    where revoked_at < ${before} or idle_expires_at < ${before} or absolute_expires_at < ${before} returning id`
  const codes = yield* sql<{ code_hash: string }>`delete from authorization_codes
    where expires_at < ${new Date(now.getTime() - KEEP_EXPIRED_CODES_MS)} returning code_hash`
  return { gracePurged: purged.length, familiesDeleted: families.length, codesDeleted: codes.length }
})
