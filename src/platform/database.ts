import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { makeBoundedPgClient, UnboundedStatements } from "./bounded-pg-client.js"
import { splitStatements } from "./sql-split.js"

/** The connection string the process uses; embedded Postgres provides one when DATABASE_URL is unset. */
export class DatabaseUrl extends Context.Service<DatabaseUrl, string>()("platform/DatabaseUrl") {}

export const SQL_DIR = fileURLToPath(new URL("../../sql/", import.meta.url))

/** Numbered plain-SQL migrations from `sql/` (`0001_tenancy.sql`, ...), each run in one transaction. */
export const sqlDirectoryLoader = (dir: string = SQL_DIR): Migrator.Loader =>
  Effect.sync(() =>
    readdirSync(dir)
      .flatMap((file) => {
        const m = /^(\d+)_(.+)\.sql$/.exec(file)
        return m ? [[Number(m[1]), m[2]!, join(dir, file)] as const] : []
      })
      .sort(([a], [b]) => a - b)
      .map(
        ([id, name, file]) =>
          [
            id,
            name,
            Effect.sync(() =>
              SqlClient.SqlClient.use((sql) =>
                Effect.forEach(splitStatements(readFileSync(file, "utf8")), (statement) => sql.unsafe(statement), {
                  discard: true,
                }),
              ),
            ),
          ] as const,
      ),
  )

/**
 * Migrations run with no statement bound, neither the client's nor the database's
 * `statement_timeout` (an index build on a large table may take minutes; a second migrator waits
 * for the first one's lock on the migrations table): ./bounded-pg-client.ts, UnboundedStatements.
 */
export const runMigrationsFrom = (loader: Migrator.Loader, table = "schema_migrations") =>
  Migrator.make({})({ loader, table }).pipe(Effect.provideService(UnboundedStatements, true))

export const runMigrations = runMigrationsFrom(sqlDirectoryLoader())

export interface SqlOptions {
  readonly maxConnections?: number | undefined
  /** Connect time-out (default 5 s, @effect/sql-pg's). */
  readonly connectTimeoutMs?: number | undefined
  /**
   * Bound of each statement: the database's `statement_timeout` on every pooled connection, and
   * (with CLIENT_GRACE_MS more) the client's own for a statement and the wait for a pooled
   * connection (./bounded-pg-client.ts).
   */
  readonly statementTimeoutMs: number
}

export const SqlLive = (options: SqlOptions) =>
  Layer.unwrap(
    DatabaseUrl.useSync((url) =>
      PgClient.layerFrom(
        makeBoundedPgClient(
          {
            url: Redacted.make(url),
            // The pool's; a LISTEN has a connection of its own besides (bounded-pg-client.ts).
            maxConnections: options.maxConnections ?? 10,
            applicationName: "authservice",
            // Single statements of concurrent requests share a connection, pipelined: Postgres CPU
            // per refresh about halves (docs/decisions/performance.md, "Pipelined statements").
            multiplex: true,
            multiplexConcurrency: 16,
            ...(options.connectTimeoutMs === undefined
              ? {}
              : { connectTimeout: Duration.millis(options.connectTimeoutMs) }),
          },
          options.statementTimeoutMs,
        ),
      ),
    ),
  )
