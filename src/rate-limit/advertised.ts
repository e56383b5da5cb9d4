import { Clock, Effect } from "effect"
import { CurrentRequest } from "../platform/request-context.js"
import type { Limit } from "./limits.js"
import * as repo from "./repo.js"
import { count, refuse, windowOf } from "./service.js"

/*
 * Budgets that a caller is told about on every answer, with the header fields of
 * draft-ietf-httpapi-ratelimit-headers-11 (RateLimit header fields for HTTP, May 2026):
 * `RateLimit-Policy: "name";q=<quota>;w=<window seconds>` and
 * `RateLimit: "name";r=<remaining>;t=<seconds until the window resets>`, each a Structured
 * Fields List (RFC 9651) with one member per budget that applied, and `Retry-After` on the 429.
 */

const appendMember = (headers: Record<string, string>, name: string, member: string) => {
  headers[name] = headers[name] === undefined ? member : `${headers[name]}, ${member}`
}

/** Adds a budget's policy and state to the current request's answer (src/http/app.ts writes them). */
const advertise = (limit: Limit, hits: number, resetSeconds: number) =>
  Effect.map(CurrentRequest, (request) => {
    if (request?.responseHeaders === undefined) return
    const policy = JSON.stringify(limit.bucket)
    appendMember(
      request.responseHeaders,
      "ratelimit-policy",
      `${policy};q=${limit.limit};w=${Math.round(limit.windowMs / 1000)}`,
    )
    appendMember(
      request.responseHeaders,
      "ratelimit",
      `${policy};r=${Math.max(0, limit.limit - hits)};t=${resetSeconds}`,
    )
  })

/** Counts one hit of a per-Environment budget, tells the caller where it stands, and refuses past it. */
export const consumeAdvertised = Effect.fnUntraced(function* (environmentId: string, limit: Limit, subject: string) {
  const counted = yield* count(environmentId, limit, subject)
  yield* advertise(limit, counted.hits, counted.retryAfterSeconds)
  if (counted.hits > limit.limit) return yield* refuse(limit, counted.retryAfterSeconds)
})

/** The same for a budget of a caller that is not per Environment (sql/0170: a Management API key or Dashboard user). */
export const consumeCallerBudget = Effect.fnUntraced(function* (limit: Limit, subject: string) {
  const w = windowOf(yield* Clock.currentTimeMillis, limit.windowMs)
  const hits = yield* repo.hitCaller({
    bucket: limit.bucket,
    subject,
    windowStart: w.windowStart,
    windowEnd: w.windowEnd,
  })
  yield* advertise(limit, hits, w.retryAfterSeconds)
  if (hits > limit.limit) return yield* refuse(limit, w.retryAfterSeconds)
})
