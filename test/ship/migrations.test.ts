import { randomBytes } from "node:crypto"
import { copyFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { Migrator } from "effect/sql"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { DatabaseUrl, SQL_DIR, SqlLive, sqlDirectoryLoader } from "../../src/platform/database.js"
import { freePort } from "../../src/platform/free-port.js"
import { codeMigrations, migrationLabel } from "../../src/platform/schema-version.js"
import { installWorkerSchema } from "../../src/platform/worker-schema.js"
import { call, type Child, startEntry, stopChild, until } from "../faults/support.js"
import { runEntry } from "../support/processes.js"
import { scratchDatabase } from "../support/template.js"

// Migrations are a step of their own (docs/decisions/production-operation.md, "Migrations are a
// step of their own"): `npm run migrate` applies them and is idempotent; a production server or
// worker does not migrate unless MIGRATE_ON_START=true and refuses a schema older or newer than
// its code with one line naming both versions and the fix. Real processes, real Postgres.

const MASTER_KEY = randomBytes(32).toString("base64url")
const KNOWN = codeMigrations()
const LATEST = migrationLabel(KNOWN[KNOWN.length - 1]!)
let databases = 0
const children: Array<Child> = []

const freshDatabase = async () =>
  (await scratchDatabase(inject("serverUrl"), inject("templateDb"), `ship${databases++}`)).url

const query = async <T>(url: string, text: string): Promise<Array<T>> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text)).rows as Array<T>
  } finally {
    await client.end()
  }
}

/** A database as an earlier release left it: every migration but the last `behind`, and graphile-worker's schema. */
const olderDatabase = async (behind: number) => {
  const url = await freshDatabase()
  const dir = mkdtempSync(join(tmpdir(), "authservice-older-sql-"))
  for (const m of KNOWN.slice(0, KNOWN.length - behind)) {
    const file = `${migrationLabel(m)}.sql`
    copyFileSync(join(SQL_DIR, file), join(dir, file))
  }
  await Effect.runPromise(
    Migrator.make({})({ loader: sqlDirectoryLoader(dir), table: "schema_migrations" }).pipe(
      Effect.provide(
        SqlLive({ maxConnections: 1, statementTimeoutMs: 60_000 }).pipe(Layer.provide(Layer.succeed(DatabaseUrl, url))),
      ),
      Effect.scoped,
    ),
  )
  await Effect.runPromise(installWorkerSchema(url))
  rmSync(dir, { recursive: true, force: true })
  return url
}

// Each run loads the whole application through tsx: generous bounds for a loaded machine.
const runProcess = (entry: string, env: Record<string, string>) => runEntry(entry, [], env, 150_000)

const production = async (url: string, extra: Record<string, string> = {}) => ({
  NODE_ENV: "production",
  DATABASE_URL: url,
  MASTER_KEY,
  MAIL_ALLOW_DEV_MAILER: "true",
  LOG_REQUESTS: "false",
  PORT: String(await freePort()),
  ...extra,
})

const appliedIds = async (url: string) =>
  (await query<{ id: number }>(url, "select migration_id as id from schema_migrations order by 1")).map((r) => r.id)

afterAll(async () => {
  await Promise.all(children.map(stopChild))
})

describe("npm run migrate (src/migrate.ts)", { timeout: 300_000 }, () => {
  let url: string
  beforeAll(async () => {
    url = await freshDatabase()
  })

  it("applies every migration and graphile-worker's schema to an empty database, prints one JSON line, exits 0", async () => {
    const run = await runProcess("src/migrate.ts", { NODE_ENV: "production", DATABASE_URL: url })
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual({
      level: "info",
      msg: "migrations applied",
      applied: KNOWN.map(migrationLabel),
      schema: LATEST,
    })
    expect(await appliedIds(url)).toEqual(KNOWN.map((m) => m.id))
    expect(await query(url, "select to_regclass('graphile_worker.jobs') is not null as found")).toEqual([
      { found: true },
    ])
  })

  it("is idempotent: a second run applies nothing and exits 0; development prints a readable line", async () => {
    const run = await runProcess("src/migrate.ts", { DATABASE_URL: url })
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(`authservice migrate: nothing to apply; the schema is at ${LATEST}\n`)
    expect(await appliedIds(url)).toEqual(KNOWN.map((m) => m.id))
  })

  it("needs no MASTER_KEY, but DATABASE_URL in production", async () => {
    const run = await runProcess("src/migrate.ts", { NODE_ENV: "production" })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe("authservice migrate: DATABASE_URL is required when NODE_ENV=production\n")
  })
})

describe("a production server or worker against another schema version", { timeout: 400_000 }, () => {
  it("an older schema: server and worker refuse with one line naming both versions and `npm run migrate`, exit 1, nothing applied", async () => {
    const url = await olderDatabase(2)
    const before = await appliedIds(url)
    const expected =
      `authservice: the database schema is older than this build: it is at migration ${migrationLabel(KNOWN[KNOWN.length - 3]!)}, ` +
      `this build needs ${LATEST}; run \`npm run migrate\` (the image: \`migrate\`) with this build first, or set MIGRATE_ON_START=true\n`
    for (const entry of ["src/main.ts", "src/worker.ts"]) {
      const run = await runProcess(entry, await production(url))
      expect(run.code, entry).toBe(1)
      expect(
        run.stderr
          .split("\n")
          .filter((l) => !l.startsWith("{"))
          .join("\n"),
        entry,
      ).toBe(expected)
      expect(run.stdout, entry).not.toContain("listening")
    }
    expect(await appliedIds(url)).toEqual(before)
  })

  it("an empty database is older too", async () => {
    const run = await runProcess("src/main.ts", await production(await freshDatabase()))
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      `authservice: the database schema is older than this build: it is at migration none (an empty database), this build needs ${LATEST}; run \`npm run migrate\``,
    )
  })

  it("a newer schema (a migration this build does not know): server, worker and migrate refuse, exit 1", async () => {
    const url = await freshDatabase()
    expect((await runProcess("src/migrate.ts", { DATABASE_URL: url })).code).toBe(0)
    await query(url, "insert into schema_migrations (migration_id, name) values (9999, 'from_the_future')")
    const expected =
      `the database schema is newer than this build: it is at migration 9999_from_the_future, this build knows migrations up to ${LATEST} ` +
      "(9999_from_the_future is not among them); run the build that migrated it, or a newer one\n"
    for (const entry of ["src/main.ts", "src/worker.ts"]) {
      const run = await runProcess(entry, await production(url))
      expect(run.code, entry).toBe(1)
      expect(run.stderr, entry).toContain(`authservice: ${expected}`)
    }
    const migrate = await runProcess("src/migrate.ts", { NODE_ENV: "production", DATABASE_URL: url })
    expect(migrate.code).toBe(1)
    expect(migrate.stderr).toBe(`authservice migrate: ${expected}`)
  })

  it("MIGRATE_ON_START=true: the production server applies what is missing and serves", async () => {
    const url = await olderDatabase(2)
    const env = await production(url, { MIGRATE_ON_START: "true" })
    const server = await startEntry("src/main.ts", env, /"msg":"listening"/)
    children.push(server)
    await until(
      "/readyz 200",
      async () =>
        (await call(Number(env.PORT), `api.localhost:${env.PORT}`, "/readyz")).status === 200 ? true : undefined,
      30_000,
    )
    expect(await appliedIds(url)).toEqual(KNOWN.map((m) => m.id))
    // A later `migrate` holds schema_migrations exclusively for its whole run (the migrator's lock):
    // the running server stays ready meanwhile.
    const migrating = new pg.Client({ connectionString: url })
    await migrating.connect()
    try {
      await migrating.query("begin")
      await migrating.query("lock table schema_migrations in access exclusive mode")
      const ready = await call(Number(env.PORT), `api.localhost:${env.PORT}`, "/readyz")
      expect(ready.status).toBe(200)
      expect(ready.ms).toBeLessThan(3000)
    } finally {
      await migrating.query("rollback")
      await migrating.end()
    }
  })

  it("MIGRATE_ON_START must be true or false", async () => {
    const run = await runProcess("src/main.ts", await production(await freshDatabase(), { MIGRATE_ON_START: "later" }))
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('authservice: MIGRATE_ON_START must be true or false (got "later")\n')
  })
})
