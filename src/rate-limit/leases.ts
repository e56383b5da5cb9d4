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
 * Windows leased at once. Past it the least recently reserved quarter is dropped: a busy caller
 * reserves again every block and stays, while a flood's one-off windows (one per address) go
 * first. A dropped lease's unspent hits stay counted in the row, so a drop can only refuse early,
 * never admit more.
 */
const LEASES_KEPT = 10_000

interface Lease {
  readonly key: string
  /** Hits reserved in the row by this process and not yet admitted. */
  unspent: number
  /** The row's count after this process's last block: every replica together reserved at least this many. */
  seen: number
  /** The block being reserved: other takers wait for it instead of reserving their own. */
  reserving: Promise<void> | undefined
}

export const RateLimitLeasesLive = Layer.effect(
  RateLimitLeases,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const counters = yield* RateLimitCounters
    const leases = new Map<string, Lease>()

    const leaseOf = (hit: CounterHit) => {
      const key = keyOf(hit)
      let lease = leases.get(key)
      if (lease === undefined) {
        if (leases.size >= LEASES_KEPT) {
          // The map is in order of last reservation (ended windows are among the oldest).
          for (const oldest of leases.keys()) {
            leases.delete(oldest)
            if (leases.size <= LEASES_KEPT * 0.75) break
          }
        }
        lease = { key, unspent: 0, seen: 0, reserving: undefined }
        leases.set(key, lease)
      }
      return lease
    }

    const reserve = (lease: Lease, hit: CounterHit, limit: number) => {
      // Most recently reserved last: the drop above takes from the front.
      if (leases.get(lease.key) === lease) {
        leases.delete(lease.key)
        leases.set(lease.key, lease)
      }
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
