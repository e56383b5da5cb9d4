import { readdirSync } from "node:fs"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { SQL_DIR } from "./database.js"

/**
 * A production start against a database whose schema is not the one this build was written for
 * (docs/decisions/production-operation.md, "Migrations are a step of their own"). The message is
 * one line naming both versions and the fix.
 */
export class SchemaVersionMismatch extends Schema.TaggedError<SchemaVersionMismatch>()("SchemaVersionMismatch", {
  message: Schema.String,
}) {}

export interface Migration {
  readonly id: number
  readonly name: string
}

/** The migrations this build carries (`sql/NNNN_name.sql`), in order. */
export const codeMigrations = (dir: string = SQL_DIR): ReadonlyArray<Migration> =>
  readdirSync(dir)
    .flatMap((file) => {
      const m = /^(\d+)_(.+)\.sql$/.exec(file)
      return m ? [{ id: Number(m[1]), name: m[2]! }] : []
    })
    .sort((a, b) => a.id - b.id)

/** `0190_console`, as the file is named. */
export const migrationLabel = (m: Migration) => `${String(m.id).padStart(4, "0")}_${m.name}`

const FIX_OLDER = "run `npm run migrate` (the image: `migrate`) with this build first, or set MIGRATE_ON_START=true"

/**
 * What is wrong with the database's schema for this build, or undefined when it matches: every
 * migration of the build applied, none unknown to it, and graphile-worker's schema present.
 */
export const schemaVersionProblem = (
  applied: ReadonlyArray<Migration>,
  known: ReadonlyArray<Migration>,
  workerSchema: boolean,
): string | undefined => {
  const code = known.length === 0 ? "none" : migrationLabel(known[known.length - 1]!)
  const knownIds = new Set(known.map((m) => m.id))
  const appliedIds = new Set(applied.map((m) => m.id))
  const latest = applied.length === 0 ? undefined : applied.reduce((a, b) => (b.id > a.id ? b : a))
  const db = latest === undefined ? "none (an empty database)" : migrationLabel(latest)
  const unknown = applied.filter((m) => !knownIds.has(m.id))
  if (unknown.length > 0) {
    return `the database schema is newer than this build: it is at migration ${db}, this build knows migrations up to ${code} (${migrationLabel(unknown[0]!)} is not among them); run the build that migrated it, or a newer one`
  }
  const missing = known.filter((m) => !appliedIds.has(m.id))
  if (missing.length > 0 && latest !== undefined && missing[0]!.id < latest.id) {
    // The migrator applies only ids above the latest applied one: this one would never run.
    return `the database schema lacks migration ${migrationLabel(missing[0]!)}, which is older than its latest ${db}; the migrator applies only later ids, so give that migration a number above ${db}`
  }
  if (missing.length > 0) {
    return `the database schema is older than this build: it is at migration ${db}, this build needs ${code}; ${FIX_OLDER}`
  }
  if (!workerSchema) {
    return `the database has this build's migrations (${code}) but not graphile-worker's job queue schema; ${FIX_OLDER}`
  }
  return undefined
}

/** Reads the applied migrations and refuses a schema this build does not match. */
export const checkSchemaVersion = Effect.fnUntraced(function* (known: ReadonlyArray<Migration> = codeMigrations()) {
  const sql = yield* SqlClient.SqlClient
  const [tables] = yield* sql<{ readonly ours: boolean; readonly worker: boolean }>`
    select to_regclass('schema_migrations') is not null as ours,
           to_regclass('graphile_worker.migrations') is not null as worker`
  const applied = tables!.ours
    ? yield* sql<Migration>`select migration_id as id, name from schema_migrations order by migration_id`
    : []
  const problem = schemaVersionProblem(applied, known, tables!.worker)
  if (problem !== undefined) return yield* new SchemaVersionMismatch({ message: problem })
})
