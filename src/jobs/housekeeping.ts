import { Clock, Effect } from "effect"
import { LOGIN_RETENTION_MS, sweepLogin } from "../login/housekeeping.js"
import { deleteEndedChallenges as deleteEmailChangeChallenges } from "../me/email-change/repo.js"
import { sweepTokenSide } from "../oidc/refresh/housekeeping.js"
import { sweepPasskeys } from "../passkeys/housekeeping.js"
import { sweepExpiredSessions } from "../sessions/housekeeping.js"
import { sweepSocial } from "../social/housekeeping.js"
import { deleteExpiredKeys } from "../platform/keys/repo.js"
import { pruneDeliveries, pruneDeliveryExchanges } from "../webhooks/tasks.js"
import { pruneIdempotencyRecords } from "../management/conventions/idempotency-retention.js"
import { pruneOutbox } from "../platform/events/retention.js"
import { pruneCheckoutSessions, pruneEvents as pruneStripeEvents } from "../billing/repo.js"
import { pruneDeliveries as pruneMailDeliveries } from "../bounces/repo.js"
import { failAbandonedImports } from "../management/user-data-jobs/abandoned-imports.js"
import { DEFAULT_HEARTBEAT, releaseStaleWorkers } from "./heartbeat.js"
import { withCallSpan } from "../platform/observability/span.js"

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
  // Email change challenges hold the user's id and another address: kept a day past their
  // 5 minutes for investigation, like login challenges, then deleted.
  const emailChange = yield* deleteEmailChangeChallenges(new Date(now.getTime() - LOGIN_RETENTION_MS))
  if (emailChange > 0) yield* Effect.logInfo("housekeeping: deleted email change challenges", { count: emailChange })
  const tokenSide = yield* sweepTokenSide(now)
  if (tokenSide.gracePurged + tokenSide.familiesDeleted + tokenSide.codesDeleted > 0)
    yield* Effect.logInfo("housekeeping: token side", tokenSide)
  const sessions = yield* sweepExpiredSessions(now)
  if (sessions > 0) yield* Effect.logInfo("housekeeping: ended expired login sessions", { count: sessions })
  const passkeys = yield* sweepPasskeys(now)
  if (passkeys.challengesDeleted > 0) yield* Effect.logInfo("housekeeping: WebAuthn challenges", passkeys)
  const socialStates = yield* sweepSocial(now)
  if (socialStates > 0) yield* Effect.logInfo("housekeeping: deleted social login states", { count: socialStates })
  const deliveries = yield* pruneDeliveries
  if (deliveries > 0)
    yield* Effect.logInfo("housekeeping: deleted webhook delivery records older than 90 days", { count: deliveries })
  const exchanges = yield* pruneDeliveryExchanges
  if (exchanges > 0)
    yield* Effect.logInfo("housekeeping: cleared webhook response headers and bodies older than 30 days", {
      count: exchanges,
    })
  const idempotency = yield* pruneIdempotencyRecords
  if (idempotency > 0)
    yield* Effect.logInfo("housekeeping: deleted expired idempotency records", { count: idempotency })
  const outbox = yield* pruneOutbox
  if (outbox > 0) yield* Effect.logInfo("housekeeping: deleted outbox events past retention", { count: outbox })
  // Stripe retries an event for up to 3 days; its id is kept 30 days for deduplication.
  const stripeEvents = yield* pruneStripeEvents(new Date(now.getTime() - 30 * 24 * 3600_000))
  if (stripeEvents > 0)
    yield* Effect.logInfo("housekeeping: forgot Stripe event ids older than 30 days", { count: stripeEvents })
  // A checkout session completes before it expires and Stripe retries the event for 3 days.
  const checkouts = yield* pruneCheckoutSessions(new Date(now.getTime() - 30 * 24 * 3600_000))
  if (checkouts > 0)
    yield* Effect.logInfo("housekeeping: forgot checkout sessions expired over 30 days ago", { count: checkouts })
  // Bounces arrive within days of a send; delivery records (and their bounces) go after 30.
  const mail = yield* pruneMailDeliveries(new Date(now.getTime() - 30 * 24 * 3600_000))
  if (mail > 0) yield* Effect.logInfo("housekeeping: deleted mail delivery records older than 30 days", { count: mail })
  const abandoned = yield* failAbandonedImports
  if (abandoned > 0)
    yield* Effect.logWarning("housekeeping: failed user imports whose worker task used up its attempts", {
      count: abandoned,
    })
  // Every worker process also does this on each heartbeat; here it covers a pool whose
  // processes all died and came back.
  const released = yield* releaseStaleWorkers(DEFAULT_HEARTBEAT.staleAfterMs)
  if (released.length > 0)
    yield* Effect.logWarning("housekeeping: released the jobs of workers that stopped beating", {
      worker_ids: released,
    })
}).pipe(Effect.orDie, withCallSpan("jobs.housekeeping"))
