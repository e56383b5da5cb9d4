import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { keyOf, RateLimitCounters } from "./counters.js"
import type { CounterHit } from "./repo.js"

/**
 * Leases of rate-limit hits (docs/decisions/rate-limits-and-caches.md, "Leases of hits"). A
 * process reserves a block of a window's hits in the counter row (one grouped upsert,
 * ./counters.ts) and admits requests from it in memory, so a request within its limits waits for
 * no statement. A block is an eighth of what the process last saw left of the limit, at least
 * one hit: far from the limit one upsert admits many requests, near it every hit is reserved
 * alone, as exact as counting each. The row counts every hit reserved by any replica, so no
 * replica admits past the limit; a replica may refuse early by at most the hits other replicas
 * hold unspent (an eighth of what was left, each). A window's count never falls, so a window
 * seen full refuses from memory until it ends.
 */
export class RateLimitLeases extends Context.Service<
  RateLimitLeases,
  {
    /** One hit of `hit`'s window under `limit`: whether it is admitted. Inside a transaction each hit is counted exactly on the transaction's connection. */
    readonly admit: (hit: CounterHit, limit: number) => Effect.Effect<boolean>
    /** `admit` without a fiber, outside any transaction (the listener's answers): a boolean when the lease answers, a promise when a block is reserved first. */
    readonly admitUnsafe: (hit: CounterHit, limit: number) => boolean | Promise<boolean>
  }
>()("rate-limit/RateLimitLeases") {}

/** A block takes this fraction of what is left of the limit. */
const SHARE_OF_WHAT_IS_LEFT = 8

/**
 * Windows leased at once. Past it the least recently used quarter is dropped: a caller admitted
 * from its lease a moment ago stays, however large its block (an Environment's ceiling reserves
 * thousands of hits at once and may not reserve again for a while), while a flood's one-off
 * windows (one per address) go first. A dropped lease's unspent hits stay counted in the row, so
 * a drop can only refuse early, never admit more; dropping the least recently used keeps a flood
 * from wasting a busy lease's block again and again.
 */
const LEASES_KEPT = 10_000

interface Lease {
  /** Hits reserved in the row by this process and not yet admitted. */
  unspent: number
  /** The row's count after this process's last block: every replica together reserved at least this many. */
  seen: number
  /** The block being reserved: other takers wait for it instead of reserving their own. */
  reserving: Promise<void> | undefined
  /** When a request last took from it (a tick of this process's leases): the drop goes by it. */
  used: number
}

export const RateLimitLeasesLive = Layer.effect(
  RateLimitLeases,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const counters = yield* RateLimitCounters
    const leases = new Map<string, Lease>()

    let tick = 0

    // Once every quarter of the bound's new windows: a sort of 10,000 ticks, a few milliseconds.
    const dropLeastRecentlyUsed = () => {
      const ticks = Float64Array.from(leases.values(), (lease) => lease.used).sort()
      const keepFrom = ticks[Math.floor(ticks.length / 4)]!
      for (const [key, lease] of leases) if (lease.used < keepFrom) leases.delete(key)
    }

    const leaseOf = (hit: CounterHit) => {
      const key = keyOf(hit)
      let lease = leases.get(key)
      if (lease === undefined) {
        if (leases.size >= LEASES_KEPT) dropLeastRecentlyUsed()
        lease = { unspent: 0, seen: 0, reserving: undefined, used: 0 }
        leases.set(key, lease)
      }
      return lease
    }

    const reserve = (lease: Lease, hit: CounterHit, limit: number) => {
      const block = Math.max(1, Math.floor((limit - lease.seen) / SHARE_OF_WHAT_IS_LEFT))
      return counters
        .hitUnsafe(hit, block)
        .then((count) => {
          // `count - block` hits were reserved before this block (grouped ones included): only
          // what still fits under the limit is ours to admit.
          lease.unspent += Math.min(block, Math.max(0, limit - (count - block)))
          lease.seen = Math.max(lease.seen, count)
        })
        .finally(() => {
          lease.reserving = undefined
        })
    }

    // Each reservation either leaves hits unspent or shows the window full, so the retry ends.
    const take = (lease: Lease, hit: CounterHit, limit: number): boolean | Promise<boolean> => {
      lease.used = ++tick
      if (lease.unspent > 0) {
        lease.unspent -= 1
        return true
      }
      if (lease.seen >= limit) return false
      lease.reserving ??= reserve(lease, hit, limit)
      return lease.reserving.then(() => take(lease, hit, limit))
    }

    const admitUnsafe = (hit: CounterHit, limit: number) => take(leaseOf(hit), hit, limit)

    return {
      admit: (hit, limit) =>
        Effect.flatMap(Effect.serviceOption(sql.transactionService), (transaction) => {
          // A block reserved in a transaction that then rolls back would be admitted from but
          // not counted: there every hit is counted alone, on the transaction's connection.
          if (Option.isSome(transaction)) return Effect.map(counters.hit(hit), (count) => count <= limit)
          const admitted = admitUnsafe(hit, limit)
          return typeof admitted === "boolean" ? Effect.succeed(admitted) : Effect.promise(() => admitted)
        }),
      admitUnsafe,
    }
  }),
)
