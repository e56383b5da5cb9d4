import { base32 } from "./base32.js"
import { randomBytesPooled } from "./random-pool.js"

/**
 * Request ids (spec: `req_` + the request id; ours has the shape of every other id, 32
 * characters of [a-z2-7]) must be unique, not secret; drawn from the pooled CSPRNG (docs/decisions/performance.md:
 * a request id per answer, on the listener's fastest paths too).
 */
export const newRequestId = (): string => `req_${base32(randomBytesPooled(20))}`
