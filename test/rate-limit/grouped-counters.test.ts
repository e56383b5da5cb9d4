import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Limit } from "../../src/rate-limit/limits.js"
import * as rateLimit from "../../src/rate-limit/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"

// Rate-limit hits are committed in groups (src/rate-limit/counters.ts): concurrent hits share a
// statement, yet each gets its own exact count, as if they had been counted one by one.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(() => app?.close())

const limit = (bucket: string, max = 1_000): Limit => ({ bucket, limit: max, windowMs: 60_000 })

const storedHits = (bucket: string) =>
  app.run(
    SqlClient.SqlClient.use(
      (sql) =>
        sql<{ hits: number }>`select sum(hits)::int as hits from rate_limit_counters
          where environment_id = ${b.environment_id} and bucket = ${bucket}`,
    ),
  )

describe("grouped rate-limit counters", () => {
  it("200 concurrent hits on one window: counts 1..200, each once, and 200 stored", async () => {
    const counts = await app.run(
      Effect.all(
        Array.from({ length: 200 }, () => rateLimit.count(b.environment_id, limit("grouped:one"), "subject")),
        { concurrency: "unbounded" },
      ),
    )
    expect(counts.map((c) => c.hits).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1))
    expect(await storedHits("grouped:one")).toEqual([{ hits: 200 }])
  })

  it("hits on many windows in one group: every window counts only its own", async () => {
    const subjects = ["a", "b", "c", "d"]
    const counts = await app.run(
      Effect.all(
        subjects.flatMap((s) =>
          Array.from({ length: 25 }, () =>
            Effect.map(rateLimit.count(b.environment_id, limit("grouped:many"), s), (c) => [s, c.hits] as const),
          ),
        ),
        { concurrency: "unbounded" },
      ),
    )
    for (const s of subjects)
      expect(
        counts
          .filter(([x]) => x === s)
          .map(([, n]) => n)
          .sort((x, y) => x - y),
      ).toEqual(Array.from({ length: 25 }, (_, i) => i + 1))
    expect(await storedHits("grouped:many")).toEqual([{ hits: 100 }])
  })

  it("the limit refuses exactly the hits past it, among concurrent ones", async () => {
    const answers = await app.run(
      Effect.all(
        Array.from({ length: 30 }, () =>
          Effect.match(rateLimit.consume(b.environment_id, limit("grouped:refuse", 10), "subject"), {
            onFailure: (e) => e._tag,
            onSuccess: () => "allowed",
          }),
        ),
        { concurrency: "unbounded" },
      ),
    )
    expect(answers.filter((a) => a === "allowed")).toHaveLength(10)
    expect(answers.filter((a) => a === "RateLimited")).toHaveLength(20)
  })

  it("inside a transaction that holds every pooled connection, hits still count (on the transaction's connection)", async () => {
    const inTransactions = await app.run(
      Effect.all(
        Array.from({ length: 12 }, () =>
          SqlClient.SqlClient.use((sql) =>
            sql.withTransaction(rateLimit.count(b.environment_id, limit("grouped:tx"), "subject")),
          ),
        ),
        { concurrency: "unbounded" },
      ),
    )
    expect(inTransactions.map((c) => c.hits).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))
  })

  it("a hit inside a transaction that rolls back is rolled back with it (as before grouping)", async () => {
    await app.run(
      SqlClient.SqlClient.use((sql) =>
        sql
          .withTransaction(
            Effect.andThen(
              rateLimit.count(b.environment_id, limit("grouped:rollback"), "subject"),
              Effect.fail("undo"),
            ),
          )
          .pipe(Effect.ignore),
      ),
    )
    expect(await storedHits("grouped:rollback")).toEqual([{ hits: null }])
  })
})
