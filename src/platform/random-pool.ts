import { randomFillSync } from "node:crypto"

/**
 * CSPRNG bytes drawn from a pooled buffer refilled 4 KiB at a time, not one OpenSSL call per
 * value (docs/decisions/performance.md: a token response draws five or six random values; one `randomBytes` call
 * cost about 1.9 us, a pooled draw 0.1 us). Every byte is handed out once; a caller gets its
 * own copy, so nothing it keeps aliases the pool.
 */
const POOL_BYTES = 4096
/** Draws above this size go straight to the CSPRNG. */
const MAX_POOLED = 256
const pool = Buffer.alloc(POOL_BYTES)
let offset = POOL_BYTES

export const randomBytesPooled = (size: number): Buffer => {
  if (size > MAX_POOLED) return randomFillSync(Buffer.alloc(size))
  if (offset + size > POOL_BYTES) {
    randomFillSync(pool)
    offset = 0
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + size))
  // Drawn bytes are wiped from the pool at once: what stays in memory is only what is still to come.
  pool.fill(0, offset, offset + size)
  offset += size
  return bytes
}
