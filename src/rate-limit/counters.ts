import { Cause, Context, Effect, Exit, Layer, Option, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { type CounterHit, hitMany } from "./repo.js"

/**
 * The hits of this process's rate-limit counters, committed in groups (docs/decisions/performance.md,
 * "Rate-limit counters in one statement per group"). Every token, introspection and login request
 * counts two or more windows, and every request of an Environment shares its ceiling's row: one
 * upsert per hit made the counters most of a token request's statements and put every request
 * of the Environment in line for one row lock. Here a hit waits, as before, until its count is
 * committed and gets its own exact count; hits that arrive while a group's statement runs go
 * together in the next one (one statement, each row updated once by the sum of its hits, rows
 * locked in one order so two replicas' groups cannot deadlock). With no concurrency a group is
 * one hit: the same statement count and latency as before. The limits that admit requests come
 * here only to reserve a lease's block of hits (./leases.ts); the failure counts and `take` count
 * each hit here.
 */
export class RateLimitCounters extends Context.Service<
  RateLimitCounters,
  {
    /** Adds one hit to a fixed window and returns the window's count with it (committed). */
    readonly hit: (hit: CounterHit) => Effect.Effect<number>
    /**
     * Adds `hits` (default 1) without a fiber, outside any transaction (the leases of
     * ./leases.ts): the same groups; the count returned includes this call's hits and every
     * hit grouped before them.
     */
    readonly hitUnsafe: (hit: CounterHit, hits?: number) => Promise<number>
  }
>()("rate-limit/RateLimitCounters") {}

interface Waiting {
  readonly hit: CounterHit
  readonly hits: number
  readonly done: (count: number) => void
  readonly fail: (defect: unknown) => void
}

const sumOf = (waiting: ReadonlyArray<Waiting>) => waiting.reduce((sum, w) => sum + w.hits, 0)

export const keyOf = (h: { environmentId: string; bucket: string; subject: string; windowStart: Date }) =>
  `${h.environmentId}\u0000${h.bucket}\u0000${h.subject}\u0000${h.windowStart.getTime()}`

/** One group: the sum per window in one statement, then each caller's own count in arrival order. */
const commitGroup = Effect.fnUntraced(function* (group: ReadonlyArray<Waiting>) {
  const byWindow = new Map<string, Array<Waiting>>()
  for (const w of group) {
    const key = keyOf(w.hit)
    const list = byWindow.get(key)
    if (list === undefined) byWindow.set(key, [w])
    else list.push(w)
  }
  const exit = yield* Effect.exit(
    hitMany([...byWindow.values()].map((waiting) => ({ ...waiting[0]!.hit, hits: sumOf(waiting) }))),
  )
  if (Exit.isFailure(exit)) {
    const defect = Cause.squash(exit.cause)
    for (const w of group) w.fail(defect)
    return
  }
  const totals = new Map(exit.value.map((row) => [keyOf(row), row.hits]))
  for (const [key, waiting] of byWindow) {
    let count = totals.get(key)! - sumOf(waiting)
    for (const w of waiting) {
      count += w.hits
      w.done(count)
    }
  }
})

export const RateLimitCountersLive = Layer.effect(
  RateLimitCounters,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.unbounded<Waiting>()
    yield* Queue.takeAll(queue).pipe(
      Effect.flatMap(commitGroup),
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.forever,
      Effect.forkScoped,
    )
    const grouped = (hit: CounterHit) =>
      Effect.callback<number>((resume) => {
        Queue.offerUnsafe(queue, {
          hit,
          hits: 1,
          done: (count) => resume(Effect.succeed(count)),
          fail: (defect) => resume(Effect.die(defect)),
        })
      })
    const hitUnsafe = (hit: CounterHit, hits = 1) =>
      new Promise<number>((done, fail) => {
        Queue.offerUnsafe(queue, { hit, hits, done, fail })
      })
    // Inside a transaction the hit runs on the transaction's connection, as it did before
    // grouping: a group's statement needs a pooled connection, and transactions waiting for
    // their group while holding every connection would wait for ever.
    const inTransaction = (hit: CounterHit) =>
      Effect.map(
        Effect.provideService(hitMany([{ ...hit, hits: 1 }]), SqlClient.SqlClient, sql),
        (rows) => rows[0]!.hits,
      )
    return {
      hit: (hit) =>
        Effect.flatMap(Effect.serviceOption(sql.transactionService), (transaction) =>
          Option.isSome(transaction) ? inTransaction(hit) : grouped(hit),
        ),
      hitUnsafe,
    }
  }),
)
