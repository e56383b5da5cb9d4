import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import { Migrator, SqlClient, SqlError } from "effect/sql"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { isStorageUnavailable } from "../../src/http/storage-failure.js"
import { clientDeadlineMs, UnboundedStatements } from "../../src/platform/bounded-pg-client.js"
import { DatabaseUrl, runMigrationsFrom, SqlLive } from "../../src/platform/database.js"
import { cloneDatabase } from "../support/template.js"

// Every statement, and the wait for a pooled connection, is bounded (DATABASE_STATEMENT_TIMEOUT_MS).
// The database enforces the bound itself (statement_timeout on every pooled connection): a
// statement past it is cancelled by Postgres and fails as a storage outage (503, retryable), so
// the connection, and the statements pipelined behind it on that connection (SqlLive multiplexes),
// serve on. The client's own deadline (the bound + a grace) stays the outer bound, for a database
// that answers nothing. Migrations may opt out of both.

const BOUND_MS = 400
const OUTER_MS = clientDeadlineMs(BOUND_MS)
let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>

beforeAll(async () => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  runtime = ManagedRuntime.make(
    // One connection, multiplexed as in production: concurrent statements are pipelined on it.
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
/** The SQLSTATE Postgres answered with (57014 query_canceled: statement_timeout), if it was the database's. */
const sqlStateOf = (error: SqlError.SqlError | undefined) =>
  (error?.reason.cause as { code?: string } | undefined)?.code
const pause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

describe("bounded statements", () => {
  it("a statement running past the bound is cancelled by the database and fails as a retryable storage outage; the connection serves the next one", async () => {
    const started = performance.now()
    const exit = await run(SqlClient.SqlClient.use((sql) => sql`select pg_sleep(5)`))
    const elapsed = performance.now() - started
    const error = failureOf(exit)
    expect(error?.reason._tag).toBe("StatementTimeoutError")
    expect(sqlStateOf(error)).toBe("57014")
    expect(isStorageUnavailable(error)).toBe(true)
    expect(elapsed).toBeGreaterThanOrEqual(BOUND_MS - 20)
    expect(elapsed).toBeLessThan(3_000)
    // One connection in the pool: it was cancelled, not left running the sleep.
    const next = await run(SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select 1 as n`))
    expect(Exit.isSuccess(next) && next.value).toEqual([{ n: 1 }])
  })

  it("a cancelled statement fails alone: the statements pipelined behind it on the same connection succeed right after it", async () => {
    const started = performance.now()
    const at = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.map(Effect.exit(effect), (exit) => ({ exit, ms: performance.now() - started }))
    const [sleep, ...others] = await runtime.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const pipelined = (n: number) =>
          Effect.andThen(pause(20), at(sql<{ n: number; pid: number }>`select ${n}::int as n, pg_backend_pid() as pid`))
        return yield* Effect.all(
          [
            at(sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(5)`),
            pipelined(1),
            pipelined(2),
            pipelined(3),
          ],
          { concurrency: "unbounded" },
        )
      }),
    )
    const error = failureOf(sleep!.exit)
    expect(error?.reason._tag).toBe("StatementTimeoutError")
    expect(sqlStateOf(error)).toBe("57014")
    expect(isStorageUnavailable(error)).toBe(true)
    // Within about the bound: the database's cancel, well before the client's own deadline.
    expect(sleep!.ms).toBeGreaterThanOrEqual(BOUND_MS - 20)
    expect(sleep!.ms).toBeLessThan(OUTER_MS - 200)
    const pids = new Set<number>()
    others.forEach(({ exit, ms }, i) => {
      expect(Exit.isSuccess(exit)).toBe(true)
      const row = Exit.isSuccess(exit) ? exit.value[0] : undefined
      expect(row?.n).toBe(i + 1)
      if (row) pids.add(row.pid)
      // Queued behind the sleep on the one connection, answered promptly once it was cancelled.
      expect(ms).toBeGreaterThanOrEqual(sleep!.ms - 5)
      expect(ms - sleep!.ms).toBeLessThan(300)
    })
    expect(pids.size).toBe(1)
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

  it("the client's deadline stays the outer bound: a statement the database does not cancel fails at the bound + the grace, and the connection serves the next one", async () => {
    const started = performance.now()
    const exit = await run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // statement_timeout off for this transaction only: the database would let it run.
        return yield* sql.withTransaction(Effect.andThen(sql`set local statement_timeout = 0`, sql`select pg_sleep(5)`))
      }),
    )
    const elapsed = performance.now() - started
    const error = failureOf(exit)
    expect(error?.reason._tag).toBe("StatementTimeoutError")
    expect(isStorageUnavailable(error)).toBe(true)
    expect(elapsed).toBeGreaterThanOrEqual(OUTER_MS - 20)
    expect(elapsed).toBeLessThan(OUTER_MS + 2_000)
    const next = await run(SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select 1 as n`))
    expect(Exit.isSuccess(next) && next.value).toEqual([{ n: 1 }])
  })

  it("waiting for a pooled connection counts: a statement that waits past the bound fails the same way", async () => {
    const exit = await run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // The only connection is held by a transaction (between statements) while another statement wants one.
        const holder = sql.withTransaction(Effect.andThen(sql`select 1`, pause(OUTER_MS + 1_000)))
        const waiter = Effect.andThen(pause(50), Effect.exit(sql`select 2`))
        return yield* Effect.all([holder, waiter], { concurrency: 2 })
      }),
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    const waited = Exit.isSuccess(exit) ? exit.value[1] : undefined
    expect(failureOf(waited!)?.reason._tag).toBe("StatementTimeoutError")
  })

  it("statements marked unbounded (migrations) may run longer than both bounds", async () => {
    const unbounded = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      run(Effect.provideService(effect, UnboundedStatements, true))
    const setting = SqlClient.SqlClient.use((sql) => sql<{ statement_timeout: string }>`show statement_timeout`)
    expect(await unbounded(setting)).toEqual(Exit.succeed([{ statement_timeout: "0" }]))
    expect(await run(setting)).toEqual(Exit.succeed([{ statement_timeout: `${BOUND_MS}ms` }]))
    const exit = await unbounded(SqlClient.SqlClient.use((sql) => sql`select pg_sleep(${(OUTER_MS + 200) / 1000})`))
    expect(Exit.isSuccess(exit)).toBe(true)
  })

  it("a migration longer than the bound runs to its end (in its transaction, as runMigrations runs them)", async () => {
    const exit = await run(
      runMigrationsFrom(
        Migrator.fromRecord({
          "1_slow": SqlClient.SqlClient.use((sql) =>
            Effect.andThen(sql`create table slow_probe (id int)`, sql`select pg_sleep(${(OUTER_MS + 200) / 1000})`),
          ),
        }),
        "bounded_probe_migrations",
      ),
    )
    expect(exit).toEqual(Exit.succeed([[1, "slow"]]))
    const rows = await run(
      SqlClient.SqlClient.use((sql) => sql<{ n: number }>`select count(*)::int as n from slow_probe`),
    )
    expect(Exit.isSuccess(rows) && rows.value).toEqual([{ n: 0 }])
  })
})
