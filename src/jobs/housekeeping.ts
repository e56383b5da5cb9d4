import { Clock, Effect } from "effect"
import { sweepLogin } from "../login/housekeeping.js"
import { sweepTokenSide } from "../oidc/refresh/housekeeping.js"
import { sweepPasskeys } from "../passkeys/housekeeping.js"
import { sweepExpiredSessions } from "../sessions/housekeeping.js"
import { sweepSocial } from "../social/housekeeping.js"
import { deleteExpiredKeys } from "../platform/keys/repo.js"
import { pruneDeliveries } from "../webhooks/tasks.js"
import { DEFAULT_HEARTBEAT, releaseStaleWorkers } from "./heartbeat.js"

/**
 * Periodic clean-up, run by the worker's crontab. Each capability adds its own sweep
 * (expired transactions, codes, challenges, delivery history).
 */
export const housekeeping = Effect.gen(function* () {
  const now = new Date(yield* Clock.currentTimeMillis)
  const keys = yield* deleteExpiredKeys(now)
  if (keys.length > 0) yield* Effect.logInfo("housekeeping: deleted expired signing keys", { count: keys.length })
  const login = yield* sweepLogin(now)
  if (login.expired + login.deleted > 0) yield* Effect.logInfo("housekeeping: login transactions", login)
  const tokenSide = yield* sweepTokenSide(now)
  if (tokenSide.gracePurged + tokenSide.familiesDeleted + tokenSide.codesDeleted > 0) yield* Effect.logInfo("housekeeping: token side", tokenSide)
  const sessions = yield* sweepExpiredSessions(now)
  if (sessions > 0) yield* Effect.logInfo("housekeeping: ended expired login sessions", { count: sessions })
  const passkeys = yield* sweepPasskeys(now)
  if (passkeys.challengesDeleted > 0) yield* Effect.logInfo("housekeeping: WebAuthn challenges", passkeys)
  const socialStates = yield* sweepSocial(now)
  if (socialStates > 0) yield* Effect.logInfo("housekeeping: deleted social login states", { count: socialStates })
  const deliveries = yield* pruneDeliveries
  if (deliveries > 0) yield* Effect.logInfo("housekeeping: deleted webhook delivery records older than 90 days", { count: deliveries })
  // Every worker process also does this on each heartbeat; here it covers a pool whose
  // processes all died and came back.
  const released = yield* releaseStaleWorkers(DEFAULT_HEARTBEAT.staleAfterMs)
  if (released.length > 0) yield* Effect.logWarning("housekeeping: released the jobs of workers that stopped beating", { worker_ids: released })
}).pipe(Effect.orDie, Effect.withSpan("jobs.housekeeping"))
