import { PgClient, type PgConnection, PgPool } from "@effect/sql-pg"
import { Context, Effect, Fiber, type Scope } from "effect"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { Borrower, Connection } from "effect/sql/SqlConnection"
import { onRealClock, pauseRealTime } from "./real-time.js"

/**
 * @effect/sql-pg's PgClient (a pool of its native connections) with every statement bounded
 * in time, and the wait for a pooled connection too. @effect/sql-pg bounds only the connect
 * (`connectTimeout`); a database that stops answering without closing its connections (its
 * processes frozen, a network partition: the kernel still acknowledges, so TCP keep-alive sees
 * nothing) would hold a request for ever. A statement that is not answered within the bound is
 * interrupted: the library cancels it (a CancelRequest; a server that does not answer within
 * 5 s has its connection closed) and the caller gets a retryable `StatementTimeoutError`, which
 * the HTTP layer answers with 503 (src/http/storage-failure.ts). Real time, not the Effect
 * Clock: a time-out is scheduling, and a test's TestClock must not fire it.
 *
 * The client is @effect/sql-pg's own `PgClient.make` (pool, borrowed connections for single
 * statements, prepared transaction control, the COMMIT check, LISTEN) assembled from its public
 * parts, because `make` offers no hook around a statement.
 */

/** Statements run with no time bound inside this (migrations: an index build may take minutes). */
export const UnboundedStatements = Context.Reference<boolean>("platform/UnboundedStatements", {
  defaultValue: () => false,
})

const timedOut = (what: string, ms: number) =>
  new SqlError.SqlError({
    reason: new SqlError.StatementTimeoutError({
      message: `${what} did not complete within ${ms} ms (the database is not answering)`,
      cause: undefined,
      operation: what,
    }),
  })

/**
 * `effect`, failed with a StatementTimeoutError if it has not completed within `ms` (it is then
 * interrupted, and awaited: the driver ends the statement before the connection is reused). It
 * runs in a child fiber watched by a plain timer: a race of two fibers costs about 35 µs more per
 * statement (awaiting the losing timer fiber), this about 3 µs.
 */
export const withinDeadline = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  ms: number,
  what: string,
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  Effect.flatMap(UnboundedStatements, (unbounded) =>
    unbounded
      ? effect
      : Effect.flatMap(Effect.forkChild(effect), (fiber) =>
          Effect.callback<A, E | SqlError.SqlError>((resume) => {
            let settled = false
            const timer = setTimeout(() => {
              settled = true
              resume(Effect.andThen(Fiber.interrupt(fiber), Effect.fail(timedOut(what, ms))))
            }, ms)
            fiber.addObserver((exit) => {
              if (settled) return
              settled = true
              clearTimeout(timer)
              resume(exit)
            })
            // The caller interrupted while waiting: the statement goes with it.
            return Effect.suspend(() => {
              clearTimeout(timer)
              return Fiber.interrupt(fiber)
            })
          }),
        ),
  )

/**
 * How often a LISTEN connection shows it still answers, and how long its answer may take. A
 * listening connection carries no statements of its own, so one that went silent (a NAT or
 * firewall that forgot it, a failed-over primary's address: no error, no close, and TCP
 * keep-alive takes minutes) would never fail, and its listener would miss every notification
 * without knowing (the live-state memory would answer from entries another replica changed).
 * A `SELECT 1` on it every interval finds it: unanswered within the bound, the driver cancels
 * it and, still unanswered 5 s later, closes the connection, which fails the listener's queue.
 * A slow answer costs nothing (the statement is cancelled and the connection drained as usual).
 */
export const LISTEN_HEARTBEAT_MS = 2_000
export const LISTEN_ANSWER_MS = 2_000

/** The heartbeat of a reserved LISTEN connection, for as long as the listener's scope lives. */
const keepAnswering = (connection: PgConnection.PgConnection) =>
  Effect.forever(
    Effect.andThen(
      pauseRealTime(LISTEN_HEARTBEAT_MS),
      Effect.ignore(withinDeadline(connection.query("SELECT 1"), LISTEN_ANSWER_MS, "LISTEN heartbeat")),
    ),
  )

type Rows = <A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>

/** A pooled connection whose statements are each bounded (`ms` undefined: unbounded, the caller bounds them). */
const boundedConnection = (connection: PgConnection.PgConnection, ms: number | undefined): Connection => {
  const bound = <A>(effect: Effect.Effect<A, SqlError.SqlError>) =>
    ms === undefined ? effect : withinDeadline(effect, ms, "statement")
  const rows = (sql: string, params: ReadonlyArray<unknown>, prepare: boolean, transformRows: Rows | undefined) => {
    const run = Effect.map(connection.query(sql, params, prepare), (result) => result.rows)
    return bound(transformRows ? Effect.map(run, transformRows) : run)
  }
  return {
    execute: (sql, params, transformRows) => rows(sql, params, true, transformRows),
    executeRaw: (sql, params) => bound(connection.query(sql, params)),
    executeValues: (sql, params) => bound(connection.queryValues(sql, params)),
    executeValuesUnprepared: (sql, params) => bound(connection.queryValues(sql, params, false)),
    executeUnprepared: (sql, params, transformRows) => rows(sql, params, false, transformRows),
    // A stream is consumed at the reader's pace: not bounded here.
    executeStream: (sql, params) => connection.stream(sql, params),
  }
}

/** PostgreSQL answers `ROLLBACK` to a COMMIT of an aborted transaction (as @effect/sql-pg checks). */
const commit = (conn: Connection): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []) as Effect.Effect<PgConnection.Result, SqlError.SqlError>, (result) =>
    result.command === "ROLLBACK"
      ? Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "PgClient: COMMIT rolled back an aborted transaction",
              operation: "commit",
            }),
          }),
        )
      : Effect.void,
  )

const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")

export const makeBoundedPgClient = Effect.fnUntraced(function* (config: PgPool.Config, statementTimeoutMs: number) {
  // The pool's own timers (idle connections closed after 60 s) are scheduling: on the system clock,
  // or a test moving its TestClock by 400 days would run that loop once a minute of it (10 s of CPU).
  const pool = yield* onRealClock(PgPool.make(config))
  const acquire = <A>(checkout: Effect.Effect<A, SqlError.SqlError, Scope.Scope>) =>
    withinDeadline(checkout, statementTimeoutMs, "connection checkout")
  const acquirer = Effect.map(acquire(pool.get), (c) => boundedConnection(c, statementTimeoutMs))
  const transactionAcquirer = Effect.map(acquire(pool.reserve), (c) => boundedConnection(c, statementTimeoutMs))
  // A single statement borrows a connection: the wait for it and the statement share one bound.
  const borrower: Borrower = (f) =>
    withinDeadline(
      pool.use((c) => f(boundedConnection(c, undefined))),
      statementTimeoutMs,
      "statement",
    )
  const client = yield* SqlClient.make({
    acquirer,
    borrower,
    transactionAcquirer,
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    compiler: PgClient.makeCompiler(),
    driver: "pg",
    spanAttributes: [
      ["db.system.name", "postgresql"],
      ["db.namespace", config.database ?? config.username ?? "postgres"],
      ["server.address", config.host ?? "localhost"],
      ["server.port", config.port ?? 5432],
    ],
  })
  const pg: PgClient.PgClient = Object.assign(client, {
    [PgClient.TypeId]: PgClient.TypeId,
    config,
    json: (value: unknown) => Statement.fragment([PgJson(value, undefined, undefined)]),
    // A listener holds its connection until its scope closes; its heartbeat finds it gone silent.
    listen: (channel: string) =>
      Effect.flatMap(pool.reserve, (c) => Effect.tap(c.listen(channel), () => Effect.forkScoped(keepAnswering(c)))),
    notify: (channel: string, payload: string) =>
      Effect.asVoid(
        Effect.scoped(Effect.flatMap(acquirer, (c) => c.executeRaw("SELECT pg_notify($1, $2)", [channel, payload]))),
      ),
  })
  return pg
})
