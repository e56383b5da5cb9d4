import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, refresh } from "./support.js"

// docs/decisions/performance.md, sql/0165: a refresh's rotation must be a HOT (heap-only) update of its family row and
// of its login session's row, which Postgres makes only when no column the update changes is
// indexed (in a key, an expression or a partial index's predicate). Otherwise every rotation adds
// an entry to every index and a family refreshed often drags a chain of dead versions behind it.

let app: TestApp
let db: pg.Client

beforeAll(async () => {
  app = await startApp()
  db = new pg.Client({ connectionString: app.databaseUrl })
  await db.connect()
})
afterAll(async () => {
  await db?.end()
  await app?.close()
})

/**
 * What the rotation (src/oidc/refresh/repo.ts rotateFamily) changes, per table. It also writes the
 * session's absolute_expires_at (greatest of it and the family's), which after the family's first
 * stretch stays the same value, so its index does not stop a HOT update.
 */
const WRITTEN_BY_ROTATION: Record<string, ReadonlyArray<string>> = {
  refresh_families: [
    "generation",
    "last_used_at",
    "idle_expires_at",
    "grace_generation",
    "grace_response_sealed",
    "grace_until",
  ],
  login_sessions: ["last_active_at", "idle_expires_at"],
}

it("no index of refresh_families or login_sessions covers a column the rotation changes (so the rotation is a HOT update)", async () => {
  for (const [table, columns] of Object.entries(WRITTEN_BY_ROTATION)) {
    const { rows } = await db.query<{ name: string; definition: string }>(
      "select indexrelid::regclass::text as name, pg_get_indexdef(indexrelid) as definition from pg_index where indrelid = $1::regclass",
      [table],
    )
    expect(rows.length).toBeGreaterThan(0)
    for (const index of rows) {
      const covered = columns.filter((c) => new RegExp(`\\b${c}\\b`).test(index.definition))
      expect({ index: index.name, covered }).toEqual({ index: index.name, covered: [] })
    }
  }
  // the fillfactor that leaves each page room for the next version
  const { rows: options } = await db.query<{ relname: string; reloptions: Array<string> | null }>(
    "select relname, reloptions from pg_class where relname = any($1)",
    [Object.keys(WRITTEN_BY_ROTATION)],
  )
  for (const row of options) expect(row.reloptions?.some((o) => o.startsWith("fillfactor="))).toBe(true)
})

it("the coarse buckets follow the exact times they stand for, as every writer leaves them (generated columns)", async () => {
  const env = await app.bootstrap()
  const spa = await createClient(app, env)
  const user = await createUser(app, env)
  const minted = await mintCode(app, env, spa, user)
  const first = await exchangeCode(app, env, spa, minted)
  const familyId = (first.json.refresh_token as string).slice(3, 39)
  const buckets = async () =>
    (
      await db.query<{ grace_until: Date | null; minute: string | null; idle: Date; hour: string }>(
        `
    select f.grace_until, f.grace_until_minute::text as minute, s.idle_expires_at as idle, s.idle_expires_hour::text as hour
    from refresh_families f join login_sessions s on s.id = f.session_id where f.id = $1`,
        [familyId],
      )
    ).rows[0]!
  const exchanged = await buckets()
  expect(exchanged.grace_until).toBeNull()
  expect(exchanged.minute).toBeNull()
  expect(exchanged.hour).toBe(String(Math.floor(exchanged.idle.getTime() / 3_600_000)))
  await refresh(app, env, spa, first.json.refresh_token)
  const rotated = await buckets()
  expect(rotated.minute).toBe(String(Math.floor(rotated.grace_until!.getTime() / 60_000)))
  expect(rotated.hour).toBe(String(Math.floor(rotated.idle.getTime() / 3_600_000)))
})

it("the sweeps that find rows by time have an index on the bucket they compare first (grace purge, session expiry)", async () => {
  const { rows } = await db.query<{ definition: string }>(
    "select pg_get_indexdef(indexrelid) as definition from pg_index where indrelid in ('refresh_families'::regclass, 'login_sessions'::regclass)",
  )
  const definitions = rows.map((r) => r.definition)
  expect(definitions).toContain(
    "CREATE INDEX refresh_families_grace_minute ON public.refresh_families USING btree (grace_until_minute) WHERE (grace_until_minute IS NOT NULL)",
  )
  expect(definitions).toContain(
    "CREATE INDEX login_sessions_idle_hour ON public.login_sessions USING btree (idle_expires_hour) WHERE (revoked_at IS NULL)",
  )
  expect(definitions).toContain(
    "CREATE INDEX login_sessions_absolute_expiry ON public.login_sessions USING btree (absolute_expires_at) WHERE (revoked_at IS NULL)",
  )
})

it("a rotation keeps the family row whole on its page: the sealed grace response (over 2 KB) never goes to TOAST (sql/0196)", async () => {
  const env = await app.bootstrap()
  const spa = await createClient(app, env)
  const user = await createUser(app, env)
  const first = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user))
  let token = first.json.refresh_token as string
  for (let i = 0; i < 5; i++) {
    const rotated = await refresh(app, env, spa, token)
    expect(rotated.status).toBe(200)
    token = rotated.json.refresh_token as string
  }
  const { rows } = await db.query<{ sealed: number; row: number; toast: string }>(
    `select octet_length(f.grace_response_sealed) as sealed, pg_column_size(f.*) as row,
      pg_relation_size(c.reltoastrelid)::text as toast
    from refresh_families f, pg_class c where f.id = $1 and c.relname = 'refresh_families'`,
    [token.slice(3, 39)],
  )
  // The value is past the default toast threshold (about 2 KB), so only the table's
  // toast_tuple_target keeps it inline: out of line, every rotation would write two TOAST chunks.
  expect(rows[0]!.sealed).toBeGreaterThan(2_032)
  expect(rows[0]!.row).toBeLessThan(4_080)
  expect(rows[0]!.toast).toBe("0")
})
