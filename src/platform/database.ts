import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
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
      .map(([id, name, file]) => [id, name, Effect.sync(() =>
        SqlClient.SqlClient.use((sql) =>
          Effect.forEach(splitStatements(readFileSync(file, "utf8")), (statement) => sql.unsafe(statement), { discard: true })))] as const))

export const runMigrations = Migrator.make({})({ loader: sqlDirectoryLoader(), table: "schema_migrations" })

export const SqlLive = (options: { readonly maxConnections?: number } = {}) =>
  Layer.unwrap(DatabaseUrl.useSync((url) =>
    PgClient.layer({ url: Redacted.make(url), maxConnections: options.maxConnections ?? 10, applicationName: "authservice" })))
