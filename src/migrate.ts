import "./require-supported-node.js"
import { Effect, Layer } from "effect"
import { DatabaseUrl, SqlLive } from "./platform/database.js"
import { useOrStartEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { writeLogLine } from "./platform/observability/log-sink.js"
import { checkSchemaVersion, codeMigrations, migrationLabel, SchemaVersionMismatch } from "./platform/schema-version.js"
import { migrateDatabase } from "./runtime.js"

/**
 * `npm run migrate` (`node dist/migrate.js`; in development `node --import tsx src/migrate.ts`):
 * applies the SQL migrations of sql/ and graphile-worker's schema, checks that the database now
 * matches this build, prints one line and exits. Needs DATABASE_URL (without it, in development,
 * the embedded Postgres under DATA_DIR), not MASTER_KEY: a migration never seals anything, and the
 * job that migrates should hold no secret it does not need.
 */
const production = process.env["NODE_ENV"] === "production"

const say = (fields: Record<string, unknown>, text: string) =>
  production
    ? writeLogLine(`${JSON.stringify({ level: "info", ...fields })}\n`)
    : process.stdout.write(`authservice migrate: ${text}\n`)

const fail = (line: string): never => {
  process.stderr.write(`authservice migrate: ${line}\n`)
  process.exit(1)
}

const main = async () => {
  let url = process.env["DATABASE_URL"] || undefined
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url))
    fail("DATABASE_URL must be a postgres:// or postgresql:// URL")
  if (url === undefined && production) fail("DATABASE_URL is required when NODE_ENV=production")
  let stop: (() => Promise<void>) | undefined
  if (url === undefined) {
    // Development: the embedded Postgres of a running `npm start`, or started for this run.
    ;({ url, stop } = await useOrStartEmbeddedPostgres(process.env["DATA_DIR"] || "./.data"))
  }
  const databaseUrl = url!
  try {
    const applied = await Effect.runPromise(
      Effect.gen(function* () {
        const applied = yield* migrateDatabase(databaseUrl)
        yield* checkSchemaVersion()
        return applied
      }).pipe(
        Effect.provide(
          SqlLive({ maxConnections: 1, statementTimeoutMs: 60_000 }).pipe(
            Layer.provide(Layer.succeed(DatabaseUrl, databaseUrl)),
          ),
        ),
        Effect.scoped,
      ),
    )
    const known = codeMigrations()
    const schema = migrationLabel(known[known.length - 1]!)
    const names = applied.map(([id, name]) => migrationLabel({ id, name }))
    say(
      { msg: "migrations applied", applied: names, schema },
      names.length === 0
        ? `nothing to apply; the schema is at ${schema}`
        : `applied ${names.length} migration${names.length === 1 ? "" : "s"} (${names.join(", ")}); the schema is at ${schema}`,
    )
  } finally {
    await stop?.()
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    if (e instanceof SchemaVersionMismatch) return fail(e.message)
    const text = e instanceof Error ? `${e.message} ${String((e as { cause?: unknown }).cause ?? "")}` : String(e)
    return fail(`failed: ${text.split("\n")[0]!.trim()}`)
  },
)
