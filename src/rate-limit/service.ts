import { Clock, Effect } from "effect"
import { RateLimited } from "../http/errors.js"
import { Crypto, type makeCrypto } from "../platform/crypto.js"
import { HmacDataKeys } from "../platform/hmac-data-keys.js"
import { countWith } from "../platform/observability/metrics.js"
import { ipv6Networks } from "../platform/ip-prefix.js"
import { type AddressLimits, addressSubject, type Limit } from "./limits.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../platform/observability/span.js"

/** The 429 of `limit` (counted in the refusals metric by bucket). */
export const refuse = (limit: Limit, retryAfterSeconds: number) =>
  countWith((m) => m.rateLimited.inc({ bucket: limit.bucket })).pipe(Effect.andThen(new RateLimited({ retryAfterSeconds, limit: limit.bucket })))

export const windowOf = (now: number, windowMs: number) => {
  const start = Math.floor(now / windowMs) * windowMs
  return { windowStart: new Date(start), windowEnd: new Date(start + windowMs), retryAfterSeconds: Math.ceil((start + windowMs - now) / 1000) }
}

/**
 * Counters never hold a raw email or IP address: the subject is an HMAC under a master-key
 * pepper (a window lasts at most an hour: after a master-key rotation counters start afresh).
 */
const subjectOf = (crypto: ReturnType<typeof makeCrypto>, limit: { readonly bucket: string }, subject: string) =>
  crypto.hmac("rate-limit", `${limit.bucket}\u0000${subject}`).toString("base64url")

export const count = (environmentId: string, limit: Limit, subject: string) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const w = windowOf(now, limit.windowMs)
  const hits = yield* repo.hit({ environmentId, bucket: limit.bucket, subject: subjectOf(crypto, limit, subject), ...w })
  return { hits, retryAfterSeconds: w.retryAfterSeconds }
})

/**
 * Counts one hit and refuses it with 429 `rate_limited` (with `Retry-After`: the end of the
 * window) when the window already holds `limit` hits. The count commits on its own, even
 * when the request is refused (call it outside the business transaction).
 */
export const consume = (environmentId: string, limit: Limit, subject: string) => Effect.gen(function* () {
  const counted = yield* count(environmentId, limit, subject)
  if (counted.hits > limit.limit) return yield* refuse(limit, counted.retryAfterSeconds)
}).pipe(withCallSpan("RateLimit.consume", { attributes: { bucket: limit.bucket } }))

/**
 * Counts one hit per client address (`addressSubject`: IPv4 address, IPv6 /64) and, for IPv6,
 * per /56 and per /48 around it, then against the family's per-Environment ceiling when it has
 * one, refusing at the first that is full: a request refused by a narrower limit is not
 * counted by the wider ones. `key` (a client id) splits every address budget by it, so one
 * address holds one budget per key (the token endpoint: thousands of one client's users
 * behind one NAT do not share their budget with another client's).
 */
export const consumePerAddress = (environmentId: string, limits: AddressLimits, ip: string | undefined, key?: string) => Effect.gen(function* () {
  const keyed = (subject: string) => key === undefined ? subject : `${key}\u0000${subject}`
  yield* consume(environmentId, limits.address, keyed(addressSubject(ip)))
  const networks = ipv6Networks(ip)
  if (networks !== undefined) {
    yield* consume(environmentId, limits.network56, keyed(networks.net56))
    yield* consume(environmentId, limits.network48, keyed(networks.net48))
  }
  if (limits.ceiling !== undefined) yield* consume(environmentId, limits.ceiling, ENVIRONMENT_SUBJECT)
})

/** The subject of a per-Environment ceiling: the counter row is already per Environment. */
const ENVIRONMENT_SUBJECT = "environment"

/** Counts one hit and says whether it was within the limit (for limits that withhold something instead of refusing). */
export const take = (environmentId: string, limit: Limit, subject: string) =>
  Effect.map(count(environmentId, limit, subject), (counted) => counted.hits <= limit.limit)

/** Whether the window is already full, without counting; `refusal` is the 429 to give if so. */
export const exhausted = (environmentId: string, limit: Limit, subject: string) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const w = windowOf(now, limit.windowMs)
  const hits = yield* repo.peek({ environmentId, bucket: limit.bucket, subject: subjectOf(crypto, limit, subject), windowStart: w.windowStart })
  return hits >= limit.limit ? new RateLimited({ retryAfterSeconds: w.retryAfterSeconds, limit: limit.bucket }) : undefined
})

/** Refuses when the window is already full, without counting (for limits on failures only). */
export const ensureNotExhausted = (environmentId: string, limit: Limit, subject: string) =>
  Effect.flatMap(exhausted(environmentId, limit, subject), (refusal) =>
    refusal === undefined ? Effect.void : refuse(limit, refusal.retryAfterSeconds ?? 1))

/** Counts one hit without refusing anything (e.g. a wrong OTP, counted after the fact). */
export const record = (environmentId: string, limit: Limit, subject: string) => Effect.asVoid(count(environmentId, limit, subject))

/**
 * A fact kept for `ttlMs` (e.g. "this address has signed in as this email", 30 days). Its
 * subject is HMAC'd like a counter's, but under the `rate-limit-memory` HMAC data key
 * (src/platform/hmac-data-keys.ts): a memory outlives master-key rotations, a window does not
 * need to.
 */
export interface Memory {
  readonly bucket: string
  readonly ttlMs: number
}

const memorySubject = (memory: Memory, subject: string) => Effect.gen(function* () {
  const keys = yield* HmacDataKeys
  return (yield* keys.hmac("rate-limit-memory", "rate-limit-memory", `${memory.bucket}\u0000${subject}`)).toString("base64url")
})

export const remember = (environmentId: string, memory: Memory, subject: string) => Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  yield* repo.remember({ environmentId, bucket: memory.bucket, subject: yield* memorySubject(memory, subject), until: new Date(now + memory.ttlMs) })
})

export const isRemembered = (environmentId: string, memory: Memory, subject: string) => Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.remembered({ environmentId, bucket: memory.bucket, subject: yield* memorySubject(memory, subject), now: new Date(now) })
})
