import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { isStorageUnavailable } from "../../src/http/storage-failure.js"
import { UnboundedStatements } from "../../src/platform/bounded-pg-client.js"
import { DatabaseUrl, SqlLive } from "../../src/platform/database.js"
import { cloneDatabase } from "../support/template.js"

// Every statement, and the wait for a pooled connection, is bounded (DATABASE_STATEMENT_TIMEOUT_MS):
// one the database does not answer in time fails as a storage outage (503, retryable) and is
// cancelled, so the connection serves the next statement; migrations may opt out.

const BOUND_MS = 400
let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>

beforeAll(async () => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  runtime = ManagedRuntime.make(
    SqlLive({ maxConnections: 1, statementTimeoutMs: BOUND_MS }).pipe(
      Layer.provide(Layer.succeed(DatabaseUrl, database.url)),
    ) as Layer.Layer<SqlClient.SqlClient, unknown>,
  )
})
afterAll(async () => {
  await runtime?.dispose()
})

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => runtime.runPromiseExit(effect)
const failureOf = (exit: Exit.Exit<unknown, unknown>) => {
  expect(Exit.isFailure(exit)).toBe(true)
  return Exit.isFailure(exit)
    ? exit.cause.reasons
        .map((r) => (r._tag === "Fail" ? r.error : r._tag === "Die" ? r.defect : r))
        .find(SqlError.isSqlError)
    : undefined
}

describe("bounded statements", () => {
  it("a statement not answered within the bound fails as a retryable storage outage and is cancelled; the connection serves the next one", async () => {
    const started = performance.now()
    const exit = await run(SqlClient.SqlClient.use((sql) => sql`select pg_sleep(5)`))
    const elapsed = performance.now() - started
    const error = failureOf(exit)
    expect(error?.reason._tag).toBe("StatementTimeoutError")
    expect(isStorageUnavailable(error)).toBe(true)
    expect(elapsed).toBeGreaterThanOrEqual(BOUND_MS - 20)
    expect(elapsed).toBeLessThan(3_000)
    // One connection in the pool: it was cancelled, not left running the sleep.
    const next = await run(SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select 1 as n`))
    expect(Exit.isSuccess(next) && next.value).toEqual([{ n: 1 }])
  })

  it("inside a transaction too: the statement fails, the transaction rolls back", async () => {
    await run(SqlClient.SqlClient.use((sql) => sql`create table if not exists bounded_probe (id int)`))
    const exit = await run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`insert into bounded_probe values (1)`
            yield* sql`select pg_sleep(5)`
          }),
        )
      }),
    )
    expect(failureOf(exit)?.reason._tag).toBe("StatementTimeoutError")
    const rows = await run(
      SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select count(*)::int as n from bounded_probe`),
    )
    expect(Exit.isSuccess(rows) && rows.value).toEqual([{ n: 0 }])
  })

  it("waiting for a pooled connection counts: a statement that waits past the bound fails the same way", async () => {
    const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))
    const exit = await run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // The only connection is held by a transaction (between statements) while another statement wants one.
        const holder = sql.withTransaction(Effect.andThen(sql`select 1`, pause(1_500)))
        const waiter = Effect.andThen(pause(50), Effect.exit(sql`select 2`))
        return yield* Effect.all([holder, waiter], { concurrency: 2 })
      }),
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    const waited = Exit.isSuccess(exit) ? exit.value[1] : undefined
    expect(failureOf(waited!)?.reason._tag).toBe("StatementTimeoutError")
  })

  it("statements marked unbounded (migrations) may run longer", async () => {
    const exit = await run(
      SqlClient.SqlClient.use((sql) => sql`select pg_sleep(0.8)`).pipe(
        Effect.provideService(UnboundedStatements, true),
      ),
    )
    expect(Exit.isSuccess(exit)).toBe(true)
  })
})
