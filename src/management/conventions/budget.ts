import { Effect } from "effect"
import { consumeAdvertised, consumeCallerBudget } from "../../rate-limit/advertised.js"
import type { Limit } from "../../rate-limit/limits.js"
import { Config } from "../../platform/config.js"
import type { Caller } from "../auth/caller.js"

const MINUTE = 60_000

/**
 * Every Management API caller's budget (docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send
 * write is counted per address", Management): per API key, and per Dashboard user (all of a
 * user's sessions share one budget, so signing in again buys nothing), per minute.
 * Counted once the caller is authenticated; every answer to it then carries the RateLimit
 * fields, and past the budget it is 429 `rate_limited` with Retry-After.
 */
export const consumeManagementBudget = Effect.fnUntraced(function* (caller: Caller) {
  const config = yield* Config
  const limit: Limit = { bucket: "management:caller", limit: config.rateLimits.managementPerMinute, windowMs: MINUTE }
  const subject =
    caller.kind === "api_key" ? `api_key:${caller.actor.id ?? ""}` : `dashboard:${caller.platformUserId ?? ""}`
  yield* consumeCallerBudget(limit, subject)
})

/**
 * `POST /webhooks/{id}/test` sends a request to the receiver at once: a tighter budget per
 * webhook on top of the caller's, so no key (or set of keys) can turn a webhook into a flood.
 */
export const consumeWebhookTestBudget = Effect.fnUntraced(function* (environmentId: string, webhookId: string) {
  const config = yield* Config
  yield* consumeAdvertised(
    environmentId,
    { bucket: "webhook_test:webhook", limit: config.rateLimits.webhookTestPerMinute, windowMs: MINUTE },
    webhookId,
  )
})
