import { PgClient, PgConnection, PgPool } from "@effect/sql-pg"
import { Context, Duration, Effect, Fiber, type Scope } from "effect"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { Borrower, Connection } from "effect/sql/SqlConnection"

/**
 * @effect/sql-pg's PgClient (a pool of its native connections) with every statement bounded
 * in time, and the wait for a pooled connection too. @effect/sql-pg bounds only the connect
 * (`connectTimeout`). Two bounds:
 * - The database's own: every pooled connection starts with `statement_timeout` = the bound (a
 *   startup parameter), so Postgres cancels a statement that runs longer (SQLSTATE 57014,
 *   classified by @effect/sql-pg as a retryable `StatementTimeoutError`, answered 503 by the HTTP
 *   layer: src/http/storage-failure.ts). This is what frees a multiplexed connection: the driver
 *   cannot cancel one statement of a shared connection (`PgConnection.interrupt` is a no-op
 *   there), but every pipelined statement is its own extended-query cycle closed by its own
 *   `Sync`, so a statement the server cancels fails alone and the ones pipelined behind it run.
 * - The client's, the outer bound (the bound + CLIENT_GRACE_MS, real time): a database that stops
 *   answering without closing its connections (its processes frozen, a network partition: the
 *   kernel still acknowledges, so TCP keep-alive sees nothing) cancels nothing and would hold a
 *   request for ever. A statement not answered by then is interrupted (on an exclusive
 *   connection the library cancels it: a CancelRequest, and a server that does not answer within
 *   5 s has its connection closed; on a multiplexed one it is abandoned) and the caller gets a
 *   retryable `StatementTimeoutError`. Real time, not the Effect Clock: a time-out is
 *   scheduling, and a test's TestClock must not fire it.
 *
 * The client is @effect/sql-pg's own `PgClient.make` (pool, borrowed connections for single
 * statements, prepared transaction control, the COMMIT check, LISTEN) assembled from its public
 * parts, because `make` offers no hook around a statement.
 */

/**
 * Statements run with no time bound inside this (migrations: an index build may take minutes,
 * and a second migrator waits for the first one's lock): neither the client's deadline nor the
 * database's `statement_timeout`. Read when a connection is taken, so provide it around a whole
 * transaction, not inside one: such work runs on connections of its own (`statement_timeout`
 * 0, not multiplexed, one at a time), apart from the bounded pool.
 */
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
 * How much longer than the database's `statement_timeout` the client waits before it gives up
 * by itself. Postgres's cancel (and, on a multiplexed connection, the answers of the statements
 * pipelined behind the cancelled one) must arrive first: the grace covers the round trip and
 * those statements' own time, so a statement queued behind one that ran to the bound still
 * succeeds. One queued behind several such statements fails at the outer bound.
 */
export const CLIENT_GRACE_MS = 1_000

/** The client's own deadline for a statement, or a checkout, under a bound of `statementTimeoutMs`. */
export const clientDeadlineMs = (statementTimeoutMs: number) => statementTimeoutMs + CLIENT_GRACE_MS

/**
 * `effect`, failed with a StatementTimeoutError if it has not completed within `ms` (it is then
 * interrupted, and awaited: the driver ends the statement before the connection is reused). It
 * runs in a child fiber watched by a plain timer: a race of two fibers costs about 35 µs more per
 * statement (awaiting the losing timer fiber), this about 3 µs.
 */
const deadline = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  ms: number,
  what: string,
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  Effect.flatMap(Effect.forkChild(effect), (fiber) =>
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
  )

/** `deadline`, unless inside UnboundedStatements. */
export const withinDeadline = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  ms: number,
  what: string,
): Effect.Effect<A, E | SqlError.SqlError, R> =>
  Effect.flatMap(UnboundedStatements, (unbounded) => (unbounded ? effect : deadline(effect, ms, what)))

type Rows = <A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>

/** A pooled connection whose statements are each bounded (`ms` undefined: unbounded, or the caller bounds them). */
const boundedConnection = (connection: PgConnection.PgConnection, ms: number | undefined): Connection => {
  const bound = <A>(effect: Effect.Effect<A, SqlError.SqlError>) =>
    ms === undefined ? effect : deadline(effect, ms, "statement")
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
    // A stream is consumed at the reader's pace: not bounded here (the database's
    // statement_timeout still is: a long stream runs inside UnboundedStatements).
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

/** `config` with `statement_timeout` (milliseconds; 0 is none) sent in every connection's startup packet. */
const withStatementTimeout = (config: PgPool.Config, ms: number): PgPool.Config => ({
  ...config,
  startupParameters: { ...config.startupParameters, statement_timeout: String(ms) },
})

export const makeBoundedPgClient = Effect.fnUntraced(function* (config: PgPool.Config, statementTimeoutMs: number) {
  const bounded = withStatementTimeout(config, statementTimeoutMs)
  const pool = yield* PgPool.make(bounded)
  // UnboundedStatements' connections: statement_timeout 0, exclusive (a session setting cannot
  // differ per statement of a shared connection), one at a time, opened only when such work
  // runs (migrations, at start or by `npm run migrate`) and closed soon after.
  const unboundedPool = yield* PgPool.make({
    ...withStatementTimeout(config, 0),
    multiplex: false,
    minConnections: 0,
    maxConnections: 1,
    idleTimeout: Duration.seconds(5),
  })
  const ms = clientDeadlineMs(statementTimeoutMs)
  const take = (
    checkout: (p: PgPool.PgPool) => Effect.Effect<PgConnection.PgConnection, SqlError.SqlError, Scope.Scope>,
  ) =>
    Effect.flatMap(UnboundedStatements, (unbounded) =>
      unbounded
        ? Effect.map(checkout(unboundedPool), (c) => boundedConnection(c, undefined))
        : Effect.map(deadline(checkout(pool), ms, "connection checkout"), (c) => boundedConnection(c, ms)),
    )
  const acquirer = take((p) => p.get)
  const transactionAcquirer = take((p) => p.reserve)
  // A single statement borrows a connection: the wait for it and the statement share one bound.
  const borrower: Borrower = (f) =>
    Effect.flatMap(UnboundedStatements, (unbounded) =>
      unbounded
        ? unboundedPool.use((c) => f(boundedConnection(c, undefined)))
        : deadline(
            pool.use((c) => f(boundedConnection(c, undefined))),
            ms,
            "statement",
          ),
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
    config: bounded,
    json: (value: unknown) => Statement.fragment([PgJson(value, undefined, undefined)]),
    // A listener holds its connection until its scope closes: never bounded by the client (its
    // LISTEN is a statement like any other for the database's statement_timeout). It has a
    // connection of its own, outside the pool and its maxConnections: on a
    // multiplexed pool a reserved connection is taken out of circulation by effect's
    // `Pool.reserve`, which adds `concurrency - 1` to the pool's usage but neither grows the pool
    // nor wakes anybody. After a Postgres restart the LISTEN's retry and the next borrower both
    // wait for the first new connection; the wake resumes the LISTEN first, synchronously, which
    // reserves it, and the wake loop stops at the empty available list: the other borrower sleeps
    // until the LISTEN returns its connection, which is never (its checkout ends at its bound,
    // test/faults/postgres-restart.test.ts). Held for ever, a LISTEN must not reserve a pooled
    // connection; a transaction's reservation ends with it, so a borrower waits for it at most.
    listen: (channel: string) =>
      Effect.flatMap(PgConnection.make({ ...bounded, multiplex: false }), (c) => c.listen(channel)),
    notify: (channel: string, payload: string) =>
      Effect.asVoid(
        Effect.scoped(Effect.flatMap(acquirer, (c) => c.executeRaw("SELECT pg_notify($1, $2)", [channel, payload]))),
      ),
  })
  return pg
})
