import { Effect } from "effect"
import { deleteStaleChallenges } from "./challenges/repo.js"

/**
 * Housekeeping sweep: WebAuthn challenges that expired or were consumed have no further use
 * (a consumed row is never read again; an expired one is refused), so they are deleted.
 */
export const sweepPasskeys = (now: Date) =>
  deleteStaleChallenges(now).pipe(Effect.map((rows) => ({ challengesDeleted: rows.length })))
