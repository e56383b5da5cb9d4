import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { join } from "node:path"
import { PgClient, type PgPool } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as Reactivity from "effect/reactivity/Reactivity"
import { makeBoundedPgClient, UnboundedStatements } from "./bounded-pg-client.js"
import { splitStatements } from "./sql-split.js"
import { PipelinedReads } from "./pipelined-reads.js"

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

/** Migrations run with no statement bound (an index build on a large table may take minutes). */
export const runMigrations = Migrator.make({})({ loader: sqlDirectoryLoader(), table: "schema_migrations" }).pipe(
  Effect.provideService(UnboundedStatements, true),
)

export interface SqlOptions {
  readonly maxConnections?: number | undefined
  /** Connect time-out (default 5 s, @effect/sql-pg's). */
  readonly connectTimeoutMs?: number | undefined
  /** Bound of each statement and of the wait for a pooled connection (./bounded-pg-client.ts). */
  readonly statementTimeoutMs: number
}

/** How many lock-free reads share one pipelined connection (./pipelined-reads.ts). */
const PIPELINE_DEPTH = 16
/** Connections of the pipelined reads, beside the pool's `maxConnections`. */
export const PIPELINED_READ_CONNECTIONS = 2

/**
 * The process's Postgres client (`SqlClient`, `PgClient`: a pool of `maxConnections`) and, beside
 * it, the pipelined client of the grants' lock-free reads (`PipelinedReads`, two more connections).
 */
export const SqlLive = (options: SqlOptions) =>
  Layer.unwrap(
    DatabaseUrl.useSync((url) => {
      const config: PgPool.Config = {
        url: Redacted.make(url),
        maxConnections: options.maxConnections ?? 10,
        applicationName: "authservice",
        ...(options.connectTimeoutMs === undefined
          ? {}
          : { connectTimeout: Duration.millis(options.connectTimeoutMs) }),
      }
      return Layer.merge(
        PgClient.layerFrom(makeBoundedPgClient(config, options.statementTimeoutMs)),
        Layer.effect(
          PipelinedReads,
          makeBoundedPgClient(
            {
              ...config,
              maxConnections: PIPELINED_READ_CONNECTIONS,
              multiplex: true,
              multiplexConcurrency: PIPELINE_DEPTH,
            },
            options.statementTimeoutMs,
          ),
        ).pipe(Layer.provide(Reactivity.layer)),
      )
    }),
  )
