import { randomBytes } from "node:crypto"
import { base32 } from "./base32.js"

/**
 * Request ids (spec: `req_` + the request id; ours has the shape of every other id, 32
 * characters of [a-z2-7]) must be unique, not secret: they are drawn from a pooled buffer of
 * CSPRNG bytes refilled 4 KiB at a time, not one OpenSSL call per request (issue 13: a
 * request id per answer, on the listener's fastest paths too).
 */
const POOL_BYTES = 4096
const ID_BYTES = 20
let pool = randomBytes(POOL_BYTES)
let offset = 0

export const newRequestId = (): string => {
  if (offset + ID_BYTES > POOL_BYTES) {
    pool = randomBytes(POOL_BYTES)
    offset = 0
  }
  const id = `req_${base32(pool.subarray(offset, offset + ID_BYTES))}`
  offset += ID_BYTES
  return id
}
