import { Effect, Exit, Layer, ManagedRuntime, Schedule } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { isStorageUnavailable } from "../../src/http/storage-failure.js"
import { DatabaseUrl, PIPELINED_READ_CONNECTIONS, SqlLive } from "../../src/platform/database.js"
import { PipelinedReads } from "../../src/platform/pipelined-reads.js"
import { cloneDatabase } from "../support/template.js"

// The token endpoint's lock-free reads go through a client of their own whose connections each
// carry many requests' statements at once (src/platform/pipelined-reads.ts). Its statements are
// bounded like every other; a statement on a shared connection cannot be cancelled alone, so the
// bound gives the caller its answer at once and leaves the connection to finish the statement.

const BOUND_MS = 800
let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | PipelinedReads, unknown>

beforeAll(async () => {
  const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  runtime = ManagedRuntime.make(
    SqlLive({ maxConnections: 1, statementTimeoutMs: BOUND_MS }).pipe(
      Layer.provide(Layer.succeed(DatabaseUrl, database.url)),
    ) as Layer.Layer<SqlClient.SqlClient | PipelinedReads, unknown>,
  )
})
afterAll(async () => {
  await runtime?.dispose()
})

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | PipelinedReads>) => runtime.runPromiseExit(effect)
const pipelined = <A extends object>(
  query: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>,
) => PipelinedReads.use(query)

describe("pipelined reads", () => {
  it("concurrent reads share the pipelined client's two connections, apart from the main pool's", async () => {
    const exit = await run(
      Effect.all(
        Array.from({ length: 40 }, () => pipelined((sql) => sql<{ pid: number }>`select pg_backend_pid() as pid`)),
        { concurrency: "unbounded" },
      ),
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    const pids = new Set(Exit.isSuccess(exit) ? exit.value.map((rows) => rows[0]!.pid) : [])
    expect(pids.size).toBeGreaterThanOrEqual(1)
    expect(pids.size).toBeLessThanOrEqual(PIPELINED_READ_CONNECTIONS)
    const main = await run(SqlClient.SqlClient.use((sql) => sql<{ pid: number }>`select pg_backend_pid() as pid`))
    expect(Exit.isSuccess(main) && pids.has(main.value[0]!.pid)).toBe(false)
  })

  it("a read not answered within the bound fails as a retryable storage outage at the bound, without waiting for the statement; the connection then serves the next read", async () => {
    const started = performance.now()
    const exit = await run(pipelined((sql) => sql`select pg_sleep(3)`))
    const elapsed = performance.now() - started
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit)
      ? exit.cause.reasons.map((r) => (r._tag === "Fail" ? r.error : r)).find(SqlError.isSqlError)
      : undefined
    expect(error?.reason._tag).toBe("StatementTimeoutError")
    expect(isStorageUnavailable(error)).toBe(true)
    expect(elapsed).toBeGreaterThanOrEqual(BOUND_MS - 20)
    // Answered at the bound, not when the statement ends (3 s): the abandoned statement runs on.
    expect(elapsed).toBeLessThan(2_500)
    const sleeping = await run(
      SqlClient.SqlClient.use(
        (sql) =>
          sql<{
            n: number
          }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(3)'`,
      ),
    )
    expect(Exit.isSuccess(sleeping) && sleeping.value).toEqual([{ n: 1 }])
    // Once it has ended, the same connections answer again.
    await run(
      SqlClient.SqlClient.use((sql) =>
        Effect.repeat(
          sql<{
            n: number
          }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(3)' and state = 'active'`,
          {
            until: (rows) => rows[0]!.n === 0,
            schedule: Schedule.spaced("50 millis"),
          },
        ),
      ),
    )
    const next = await run(pipelined((sql) => sql<{ n: number }>`select 1 as n`))
    expect(Exit.isSuccess(next) && next.value).toEqual([{ n: 1 }])
  })
})
