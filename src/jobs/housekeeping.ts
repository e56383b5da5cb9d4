import { Clock, Effect } from "effect"
import { deleteExpiredKeys } from "../platform/keys/repo.js"

/**
 * Periodic clean-up, run by the worker's crontab. Each capability adds its own sweep
 * (expired transactions, codes, challenges, delivery history).
 */
export const housekeeping = Effect.gen(function* () {
  const now = new Date(yield* Clock.currentTimeMillis)
  const keys = yield* deleteExpiredKeys(now)
  if (keys.length > 0) yield* Effect.logInfo("housekeeping: deleted expired signing keys", { count: keys.length })
}).pipe(Effect.orDie, Effect.withSpan("jobs.housekeeping"))
