import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RateLimitLeasesLive } from "../../src/rate-limit/leases.js"
import type { Limit } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"

// Admission limits take hits from a per-process lease of the window (src/rate-limit/leases.ts):
// a block of an eighth of what is left, reserved in the counter row; near the limit one hit at a
// time. No replica admits past the limit; a window seen full refuses without a statement.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(() => app?.close())

const limit = (bucket: string, max: number): Limit => ({ bucket, limit: max, windowMs: 60_000 })

const storedHits = async (bucket: string) => {
  const rows = await app.run(
    SqlClient.SqlClient.use(
      (sql) =>
        sql<{ hits: number | null }>`select sum(hits)::int as hits from rate_limit_counters
          where environment_id = ${b.environment_id} and bucket = ${bucket}`,
    ),
  )
  return rows[0]!.hits ?? 0
}

/** `n` concurrent admissions: "allowed" or the failure's tag, each. */
const admissions = (l: Limit, n: number, subject = "subject") =>
  Effect.all(
    Array.from({ length: n }, () =>
      Effect.match(rateLimit.consume(b.environment_id, l, subject), {
        onFailure: (e) => e._tag,
        onSuccess: () => "allowed",
      }),
    ),
    { concurrency: "unbounded" },
  )

const allowed = (answers: ReadonlyArray<string>) => answers.filter((a) => a === "allowed").length

/** One admission each in `n` one-off windows of `bucket` (a limit of 1; subjects `from`..): a flood's new addresses. */
const oneOffWindows = (bucket: string, from: number, n: number) =>
  Effect.forEach(
    Array.from({ length: n }, (_, i) => from + i),
    (i) => Effect.exit(rateLimit.consume(b.environment_id, limit(bucket, 1), `${bucket}-${i}`)),
    { concurrency: 100 },
  )

/** Another replica: leases of its own over the same counters. */
const asAnotherReplica = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, Layer.fresh(RateLimitLeasesLive))

describe("rate-limit leases", () => {
  it("one block at a time, an eighth of what is left: 200 concurrent admissions of a limit of 1,000 reserve 125 + 109 hits", async () => {
    const l = limit("lease:blocks", 1_000)
    const answers = await app.run(admissions(l, 200))
    expect(allowed(answers)).toBe(200)
    // The first block (1000 / 8) admits 125; the other 75 wait for the next, (1000 - 125) / 8.
    expect(await storedHits(l.bucket)).toBe(125 + 109)
  })

  it("near the limit every hit is reserved alone: a limit of 10 admits exactly 10 of 30 concurrent, and the row holds 10", async () => {
    const l = limit("lease:exact", 10)
    const answers = await app.run(admissions(l, 30))
    expect(allowed(answers)).toBe(10)
    expect(answers.filter((a) => a === "RateLimited")).toHaveLength(20)
    expect(await storedHits(l.bucket)).toBe(10)
  })

  it("two replicas together never admit past the limit, and spend every hit of it", async () => {
    const l = limit("lease:replicas", 100)
    const [first, second] = await app.run(
      Effect.all([admissions(l, 150), asAnotherReplica(admissions(l, 150))], { concurrency: "unbounded" }),
    )
    expect(allowed(first!) + allowed(second!)).toBe(100)
    expect(await storedHits(l.bucket)).toBeGreaterThanOrEqual(100)
  })

  it("a replica refuses early by at most what another holds unspent, and that one still admits it", async () => {
    const l = limit("lease:early", 100)
    // The first replica admits one hit from a block of 12 (100 / 8): 11 stay unspent there.
    expect(allowed(await app.run(asAnotherReplica(admissions(l, 1))))).toBe(1)
    // Fetched again, so the first replica is the one held by the running application.
    expect(allowed(await app.run(admissions(l, 1)))).toBe(1)
    const rest = await app.run(admissions(l, 200))
    // 100 - 12 (the other replica's block) - 1 = 87 more here; the other replica's 11 are lost
    // to this one, never admitted twice.
    expect(allowed(rest)).toBe(87)
    expect(await storedHits(l.bucket)).toBe(100)
  })

  it("a window seen full refuses from memory: no statement, even with the counter table locked", async () => {
    const l = limit("lease:full", 3)
    expect(allowed(await app.run(admissions(l, 4)))).toBe(3)
    const db = new pg.Client({ connectionString: app.databaseUrl })
    await db.connect()
    try {
      await db.query("begin")
      await db.query("lock table rate_limit_counters in access exclusive mode")
      expect(await app.run(admissions(l, 5))).toEqual(Array.from({ length: 5 }, () => "RateLimited"))
      await db.query("rollback")
    } finally {
      await db.end()
    }
    // The next window is a new lease.
    await app.advance("1 minute")
    expect(allowed(await app.run(admissions(l, 4)))).toBe(3)
  })

  it("past 10,000 leased windows they are dropped, and a dropped lease's unspent hits are never admitted again", async () => {
    const l = limit("lease:dropped", 100)
    // One hit from a block of 12: 11 unspent, then 10,000 other windows push the lease out.
    expect(allowed(await app.run(admissions(l, 1)))).toBe(1)
    const fillers = await app.run(oneOffWindows("lease:filler", 0, 10_000))
    expect(fillers.every((exit) => exit._tag === "Success")).toBe(true)
    // A new lease: the 11 hits reserved before are lost to admission, not admitted twice.
    expect(allowed(await app.run(admissions(l, 200)))).toBe(100 - 12)
    expect(await storedHits(l.bucket)).toBe(100)
  })

  it("a lease reserved again recently outlives a flood of one-off windows, and keeps its unspent hits", async () => {
    const l = limit("lease:busy", 80)
    const fill = (from: number, n: number) => app.run(oneOffWindows("lease:flood", from, n))
    // A block of 10 (80 / 8); 9 unspent.
    expect(allowed(await app.run(admissions(l, 1)))).toBe(1)
    await fill(0, 9_000)
    // Spends its 9 and reserves again (8 = 70 / 8): now the most recently reserved, 7 unspent.
    expect(allowed(await app.run(admissions(l, 10)))).toBe(10)
    // Past 10,000 windows the oldest quarter goes: the flood's first windows, not this lease.
    await fill(9_000, 2_000)
    expect(allowed(await app.run(admissions(l, 200)))).toBe(80 - 11)
    expect(await storedHits(l.bucket)).toBe(80)
  })

  it("a lease admitted from recently outlives a flood of one-off windows, however long ago it reserved", async () => {
    // A large block, as an Environment's ceiling reserves: 800 / 8 = 100, so 99 unspent after one.
    const l = limit("lease:large-block", 800)
    const fill = (from: number, n: number) => oneOffWindows("lease:flood-2", from, n)
    // One replica's leases from empty, so the drop's order is known.
    const admitted = await app.run(
      asAnotherReplica(
        Effect.gen(function* () {
          const first = allowed(yield* admissions(l, 1))
          yield* fill(0, 6_000)
          // Admitted from its lease, no reservation: 89 unspent, and now the most recently used.
          const more = allowed(yield* admissions(l, 10))
          // Past 10,000 windows the least recently used quarter goes: the flood's first 2,500.
          // Dropped by its reservation's age, this lease would have gone first, its 89 lost.
          yield* fill(6_000, 6_000)
          return [first, more, allowed(yield* admissions(l, 1_000))]
        }),
      ),
    )
    expect(admitted).toEqual([1, 10, 800 - 11])
    expect(await storedHits(l.bucket)).toBe(800)
  })

  it("inside a transaction each hit is counted alone, and a rolled-back one is taken back with it", async () => {
    const l = limit("lease:transaction", 1_000)
    await app.run(
      SqlClient.SqlClient.use((sql) =>
        sql
          .withTransaction(
            Effect.andThen(rateLimit.consume(b.environment_id, l, "subject"), Effect.fail("undo" as const)),
          )
          .pipe(Effect.ignore),
      ),
    )
    expect(await storedHits(l.bucket)).toBe(0)
    await app.run(
      SqlClient.SqlClient.use((sql) => sql.withTransaction(rateLimit.consume(b.environment_id, l, "subject"))),
    )
    expect(await storedHits(l.bucket)).toBe(1)
  })

  it("a reservation that fails fails its requests, and the next request reserves again", async () => {
    const l = limit("lease:failure", 1_000)
    await app.run(
      SqlClient.SqlClient.use((sql) => sql`alter table rate_limit_counters rename to rate_limit_counters_away`),
    )
    try {
      const failed = await app.run(Effect.exit(admissions(l, 3)))
      expect(failed._tag).toBe("Failure")
    } finally {
      await app.run(
        SqlClient.SqlClient.use((sql) => sql`alter table rate_limit_counters_away rename to rate_limit_counters`),
      )
    }
    expect(allowed(await app.run(admissions(l, 3)))).toBe(3)
    expect(await storedHits(l.bucket)).toBe(125)
  })
})
