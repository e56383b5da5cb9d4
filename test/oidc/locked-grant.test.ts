import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { createClient, createUser, exchangeCode, mintCode, queryRows, refresh, type TestClient } from "./support.js"

// A grant's first read (readClientAndFamily, readClientAndCode) shares its connection with the
// reads of other requests (src/platform/pipelined-reads.ts): Postgres answers a connection's
// statements in order, so a read that waited for a row lock would hold up every read queued
// behind it. The reads take no lock; the grant waits for a row only at its compare-and-set, on a
// connection of its own. Here a transaction holds one family's or one code's row: the grant of
// that row waits for it, and every other grant, with reads on the same two connections, is
// answered meanwhile.

const OTHERS = 24

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let db: pg.Client
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env)
  db = new pg.Client({ connectionString: app.databaseUrl })
  await db.connect()
})
afterAll(async () => {
  await db?.end()
  await app?.close()
})

const signIn = async () => {
  const minted = await mintCode(app, env, spa, await createUser(app, env))
  const res = await exchangeCode(app, env, spa, minted)
  expect(res.status).toBe(200)
  return { sessionId: minted.sessionId, refreshToken: res.json.refresh_token as string }
}

/** Until a statement of this test's database waits for a lock (other test files share the server). */
const untilWaiting = async () => {
  for (;;) {
    const rows = await queryRows<{ n: number }>(
      app,
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    )
    if (rows[0]!.n > 0) return
  }
}

/** Whether a request has been answered yet, without waiting for it. */
const answered = (request: Promise<TestResponse>) =>
  Promise.race([request.then(() => true), new Promise<boolean>((resolve) => setImmediate(() => resolve(false)))])

/**
 * Holds `table`'s row of the held grant's session in another transaction; the held grant is sent
 * and waits, then every other grant is answered 200 while it still waits, and it is answered 200
 * once the row is released.
 */
const whileRowHeld = async <T>(
  table: "refresh_families" | "authorization_codes",
  held: T & { readonly sessionId: string },
  grant: (of: T) => Promise<TestResponse>,
  others: ReadonlyArray<T>,
) => {
  await db.query("begin")
  try {
    await db.query(`select 1 from ${table} where session_id = $1 for update`, [held.sessionId])
    const waiting = grant(held)
    await untilWaiting()
    const results = await Promise.all(others.map(grant))
    expect(results.map((r) => r.status)).toEqual(others.map(() => 200))
    expect(await answered(waiting)).toBe(false)
    await db.query("commit")
    expect((await waiting).status).toBe(200)
  } finally {
    await db.query("rollback").catch(() => undefined)
  }
}

describe("a grant waiting for a locked row holds up no other grant", () => {
  it("refresh: while another transaction holds one family's row, that refresh waits and the others rotate", async () => {
    const held = await signIn()
    const others = await Promise.all(Array.from({ length: OTHERS }, signIn))
    await whileRowHeld("refresh_families", held, (s) => refresh(app, env, spa, s.refreshToken), others)
  })

  it("code exchange: while another transaction holds one code's row, that exchange waits and the others are answered", async () => {
    const user = await createUser(app, env)
    const held = await mintCode(app, env, spa, user)
    const others = await Promise.all(Array.from({ length: OTHERS }, () => mintCode(app, env, spa, user)))
    await whileRowHeld("authorization_codes", held, (minted) => exchangeCode(app, env, spa, minted), others)
  })
})
