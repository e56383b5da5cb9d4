import { Effect } from "effect"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { Config, type RateLimits } from "../platform/config.js"
import { CurrentRequest } from "../platform/request-context.js"
import type { AddressLimits } from "./limits.js"
import { consumePerAddress } from "./service.js"

const MINUTE = 60_000

/**
 * A write limit family with the lockout-proof shape of the login limits: per client address
 * (IPv4 address, IPv6 /64), then the /56 and /48 around an IPv6 address (10x and 20x the
 * address's number, the ratio of the login defaults 60/600/1200), then a per-Environment
 * ceiling far above, each counted only when every narrower one let the request through.
 * `by` names what the address budget is split by, if anything (`client`: one budget per
 * client and address).
 */
const family = (name: string, perMinute: number, ceilingPerMinute: number, by?: "client"): AddressLimits => {
  const prefix = by === undefined ? name : `${name}:${by}+`
  const sep = by === undefined ? ":" : ""
  return {
    address: { bucket: `${prefix}${sep}ip`, limit: perMinute, windowMs: MINUTE },
    network56: { bucket: `${prefix}${sep}ipv6/56`, limit: perMinute * 10, windowMs: MINUTE },
    network48: { bucket: `${prefix}${sep}ipv6/48`, limit: perMinute * 20, windowMs: MINUTE },
    ceiling: { bucket: `${name}:environment`, limit: ceilingPerMinute, windowMs: MINUTE },
  }
}

/**
 * The limits of writes that anyone can send cheaply (docs/decisions/rate-limits-and-caches.md, "Write limits: every
 * cheap-to-send write is counted per address"). Numbers from `RATE_LIMIT_*`.
 */
export const writeLimits = (r: RateLimits) => ({
  /** Social login start: stores a state and makes an outbound request to the provider. */
  socialStart: family("social_start", r.socialStartPerMinute, r.socialStartCeilingPerMinute),
  /** Passkey registration/authentication options (transaction routes and /me): store a challenge. */
  passkeyOptions: family("passkey_options", r.passkeyOptionsPerMinute, r.passkeyOptionsCeilingPerMinute),
  /** Every /me route that is not a GET. */
  meWrites: family("me_write", r.meWritesPerMinute, r.meWritesCeilingPerMinute),
  /** /oauth2/token, per client and address. */
  token: family("token", r.tokenPerMinute, r.tokenCeilingPerMinute, "client"),
  /** /oauth2/revoke, per client and address (the token endpoint's numbers: the same callers). */
  revoke: family("revoke", r.tokenPerMinute, r.tokenCeilingPerMinute, "client"),
  /** /oauth2/introspect, per caller (client or API key) and address. */
  introspect: family("introspect", r.introspectPerMinute, r.introspectCeilingPerMinute, "client"),
})

export type WriteLimitName = keyof ReturnType<typeof writeLimits>

/**
 * Counts the current request against a write limit family of the current Environment,
 * from the request's client address; 429 `rate_limited` (naming the limit) when one is full.
 * Call it first in the handler: a refused request changes nothing.
 */
export const limitWrite = Effect.fnUntraced(function* (name: WriteLimitName, key?: string) {
  const config = yield* Config
  const env = yield* CurrentEnvironment
  const request = yield* CurrentRequest
  yield* consumePerAddress(env.record.id, writeLimits(config.rateLimits)[name], request?.ip, key)
})
