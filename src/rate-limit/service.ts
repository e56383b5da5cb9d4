import { Clock, Effect } from "effect"
import { RateLimited } from "../http/errors.js"
import { Crypto, type makeCrypto } from "../platform/crypto.js"
import { HmacDataKeys } from "../platform/hmac-data-keys.js"
import { countWith } from "../platform/observability/metrics.js"
import { ipv6Networks } from "../platform/ip-prefix.js"
import { type AddressLimits, addressSubject, type Limit } from "./limits.js"
import { RateLimitCounters } from "./counters.js"
import { RateLimitLeases } from "./leases.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../platform/observability/span.js"

/** The 429 of `limit` (counted in the refusals metric by bucket). */
export const refuse = (limit: Limit, retryAfterSeconds: number) =>
  countWith((m) => m.rateLimited.inc({ bucket: limit.bucket })).pipe(
    Effect.andThen(new RateLimited({ retryAfterSeconds, limit: limit.bucket })),
  )

export const windowOf = (now: number, windowMs: number) => {
  const start = Math.floor(now / windowMs) * windowMs
  return {
    windowStart: new Date(start),
    windowEnd: new Date(start + windowMs),
    retryAfterSeconds: Math.ceil((start + windowMs - now) / 1000),
  }
}

/**
 * Counters never hold a raw email or IP address: the subject is an HMAC under a master-key
 * pepper (a window lasts at most an hour: after a master-key rotation counters start afresh).
 */
const subjectOf = (crypto: ReturnType<typeof makeCrypto>, limit: { readonly bucket: string }, subject: string) =>
  crypto.hmac("rate-limit", `${limit.bucket}\u0000${subject}`).toString("base64url")

export const count = Effect.fnUntraced(function* (environmentId: string, limit: Limit, subject: string) {
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const w = windowOf(now, limit.windowMs)
  const counters = yield* RateLimitCounters
  const hits = yield* counters.hit({
    environmentId,
    bucket: limit.bucket,
    subject: subjectOf(crypto, limit, subject),
    ...w,
  })
  return { hits, retryAfterSeconds: w.retryAfterSeconds }
})

/**
 * Admits one hit or refuses it with 429 `rate_limited` (with `Retry-After`: the end of the
 * window) when the window's `limit` hits are taken, through this process's lease of the window
 * (./leases.ts). What the lease reserved is committed on its own, whether the request then
 * succeeds or not (call it outside the business transaction).
 */
export const consume = (environmentId: string, limit: Limit, subject: string) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    const w = windowOf(now, limit.windowMs)
    const leases = yield* RateLimitLeases
    const admitted = yield* leases.admit(
      { environmentId, bucket: limit.bucket, subject: subjectOf(crypto, limit, subject), ...w },
      limit.limit,
    )
    if (!admitted) return yield* refuse(limit, w.retryAfterSeconds)
  }).pipe(withCallSpan("RateLimit.consume", { attributes: { bucket: limit.bucket } }))

/** One limit of a chain and the subject it counts. */
export interface Step {
  readonly limit: Limit
  readonly subject: string
}

/**
 * Admits a chain of limits, narrowest first, and refuses at the first that is full: a request
 * refused by a narrower limit takes nothing of the wider ones (call it outside the business
 * transaction). Each step takes from this process's lease of its window (./leases.ts): a hot
 * row (the Environment's ceiling) is updated once per block of hits, not once per request.
 */
export const consumeAll = Effect.fnUntraced(function* (environmentId: string, steps: ReadonlyArray<Step>) {
  for (const step of steps) yield* consume(environmentId, step.limit, step.subject)
})

/** Subjects whose HMAC the listener's counter keeps (cleared when full). */
const SUBJECT_MEMORY = 4_096

/**
 * `consumeAll` without a fiber, for the listener's answers from memory (src/oidc/introspect/from-memory.ts):
 * the same hits, in the same order, from the same leases, under the same Clock. The counter
 * resolves true when every step was within its limit and false at the first that was not (that
 * request's 429 is the application's to give); it rejects when a reservation failed.
 */
export const makeChainCounter = Effect.gen(function* () {
  const crypto = yield* Crypto
  const clock = yield* Clock.Clock
  const leases = yield* RateLimitLeases
  // The same few callers (a resource server's client and address) ask again and again: their
  // subjects' HMACs are kept (two per request were 6% of the listener's CPU), under the key that
  // made them, so a master-key switch makes new ones.
  const subjects = new Map<string, string>()
  const subjectFor = (limit: Limit, subject: string) => {
    const key = `${crypto.sealingKeyId()}\u0000${limit.bucket}\u0000${subject}`
    let hmac = subjects.get(key)
    if (hmac === undefined) {
      if (subjects.size >= SUBJECT_MEMORY) subjects.clear()
      hmac = subjectOf(crypto, limit, subject)
      subjects.set(key, hmac)
    }
    return hmac
  }
  return async (environmentId: string, steps: ReadonlyArray<Step>) => {
    for (const step of steps) {
      const w = windowOf(clock.currentTimeMillisUnsafe(), step.limit.windowMs)
      const hit = {
        environmentId,
        bucket: step.limit.bucket,
        subject: subjectFor(step.limit, step.subject),
        windowStart: w.windowStart,
        windowEnd: w.windowEnd,
      }
      const taken = leases.admitUnsafe(hit, step.limit.limit)
      if (!(typeof taken === "boolean" ? taken : await taken)) return false
    }
    return true
  }
})

/**
 * The chain of a limit per client address (`addressSubject`: IPv4 address, IPv6 /64) and, for
 * IPv6, per /56 and per /48 around it, then the family's per-Environment ceiling when it has
 * one. `key` (a client id) splits every address budget by it, so one address holds one budget
 * per key (the token endpoint: thousands of one client's users behind one NAT do not share
 * their budget with another client's).
 */
export const addressSteps = (limits: AddressLimits, ip: string | undefined, key?: string): ReadonlyArray<Step> => {
  const keyed = (subject: string) => (key === undefined ? subject : `${key}\u0000${subject}`)
  const steps: Array<Step> = [{ limit: limits.address, subject: keyed(addressSubject(ip)) }]
  const networks = ipv6Networks(ip)
  if (networks !== undefined) {
    steps.push({ limit: limits.network56, subject: keyed(networks.net56) })
    steps.push({ limit: limits.network48, subject: keyed(networks.net48) })
  }
  if (limits.ceiling !== undefined) steps.push({ limit: limits.ceiling, subject: ENVIRONMENT_SUBJECT })
  return steps
}

/** `addressSteps` counted and refused as one chain (`consumeAll`). */
export const consumePerAddress = (environmentId: string, limits: AddressLimits, ip: string | undefined, key?: string) =>
  consumeAll(environmentId, addressSteps(limits, ip, key))

/** The subject of a per-Environment ceiling: the counter row is already per Environment. */
const ENVIRONMENT_SUBJECT = "environment"

/** Counts one hit and says whether it was within the limit (for limits that withhold something instead of refusing). */
export const take = (environmentId: string, limit: Limit, subject: string) =>
  Effect.map(count(environmentId, limit, subject), (counted) => counted.hits <= limit.limit)

/** Whether the window is already full, without counting; `refusal` is the 429 to give if so. */
export const exhausted = Effect.fnUntraced(function* (environmentId: string, limit: Limit, subject: string) {
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const w = windowOf(now, limit.windowMs)
  const hits = yield* repo.peek({
    environmentId,
    bucket: limit.bucket,
    subject: subjectOf(crypto, limit, subject),
    windowStart: w.windowStart,
  })
  return hits >= limit.limit
    ? new RateLimited({ retryAfterSeconds: w.retryAfterSeconds, limit: limit.bucket })
    : undefined
})

/** `exhausted` of several limits in one round trip, in order. */
export const exhaustedAll = Effect.fnUntraced(function* (environmentId: string, steps: ReadonlyArray<Step>) {
  const crypto = yield* Crypto
  const now = yield* Clock.currentTimeMillis
  const windows = steps.map((s) => windowOf(now, s.limit.windowMs))
  const hits = yield* repo.peekAll(
    environmentId,
    steps.map((s, i) => ({
      bucket: s.limit.bucket,
      subject: subjectOf(crypto, s.limit, s.subject),
      windowStart: windows[i]!.windowStart,
    })),
  )
  return steps.map((s, i) =>
    hits[i]! >= s.limit.limit
      ? new RateLimited({ retryAfterSeconds: windows[i]!.retryAfterSeconds, limit: s.limit.bucket })
      : undefined,
  )
})

/** Refuses when the window is already full, without counting (for limits on failures only). */
export const ensureNotExhausted = (environmentId: string, limit: Limit, subject: string) =>
  Effect.flatMap(exhausted(environmentId, limit, subject), (refusal) =>
    refusal === undefined ? Effect.void : refuse(limit, refusal.retryAfterSeconds ?? 1),
  )

/** Counts one hit without refusing anything (e.g. a wrong OTP, counted after the fact). */
export const record = (environmentId: string, limit: Limit, subject: string) =>
  Effect.asVoid(count(environmentId, limit, subject))

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

const memorySubject = Effect.fnUntraced(function* (memory: Memory, subject: string) {
  const keys = yield* HmacDataKeys
  return (yield* keys.hmac("rate-limit-memory", "rate-limit-memory", `${memory.bucket}\u0000${subject}`)).toString(
    "base64url",
  )
})

export const remember = Effect.fnUntraced(function* (environmentId: string, memory: Memory, subject: string) {
  const now = yield* Clock.currentTimeMillis
  yield* repo.remember({
    environmentId,
    bucket: memory.bucket,
    subject: yield* memorySubject(memory, subject),
    until: new Date(now + memory.ttlMs),
  })
})

export const isRemembered = Effect.fnUntraced(function* (environmentId: string, memory: Memory, subject: string) {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.remembered({
    environmentId,
    bucket: memory.bucket,
    subject: yield* memorySubject(memory, subject),
    now: new Date(now),
  })
})
