import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { liveStateChanged } from "../../src/platform/live-state-changes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, refresh, type TestClient, userinfo } from "./support.js"

// The token endpoint reads the user and session rows to decide a grant; the live-state memory
// keeps what it read (src/oidc/access-token/live-cache.ts, prime), so the client's first UserInfo
// after a sign-in or a refresh reads no row, under the rule every read obeys: nothing
// invalidated since the read, no local write of that user in flight.
// Observed from outside: with `users` and `login_sessions` locked by another connection, a
// UserInfo that needs to read them waits; one answered from memory does not.

let app: TestApp
let env: Bootstrapped
let client: TestClient
let db: pg.Client
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  client = await createClient(app, env)
  db = new pg.Client({ connectionString: app.databaseUrl })
  await db.connect()
})
afterAll(async () => {
  await db?.end()
  await app?.close()
})

/** UserInfo while the rows it would read are locked: its answer, or "waiting" after 1.5 s. */
const userinfoWithRowsLocked = async (accessToken: string) => {
  await db.query("begin")
  await db.query("lock table users, login_sessions in access exclusive mode")
  const answer = userinfo(app, env, accessToken)
  try {
    return await Promise.race([
      answer.then((r) => ({ status: r.status, name: (r.json as { name?: string }).name })),
      new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), 1_500)),
    ])
  } finally {
    await db.query("rollback")
    await answer
  }
}

it("after a code exchange, the first UserInfo of its access token reads no user or session row", async () => {
  const user = await createUser(app, env)
  const tokens = (await exchangeCode(app, env, client, await mintCode(app, env, client, user))).json as {
    access_token: string
  }
  expect(await userinfoWithRowsLocked(tokens.access_token)).toMatchObject({ status: 200 })
})

it("after a refresh, the same; a change of the user in flight on this replica keeps nothing (read again)", async () => {
  const user = await createUser(app, env)
  const first = (await exchangeCode(app, env, client, await mintCode(app, env, client, user))).json as {
    refresh_token: string
  }
  // A local write of this user: for LOCAL_PENDING_MS nothing of theirs is kept, primed or read.
  liveStateChanged(env.environment_id, user.id)
  const during = (await refresh(app, env, client, first.refresh_token)).json as {
    access_token: string
    refresh_token: string
  }
  expect(await userinfoWithRowsLocked(during.access_token)).toBe("waiting")
  await app.advance("6 seconds")
  liveStateChanged(env.environment_id, "usr_someoneelse") // drops ended pending marks (bounded memory)
  const after = (await refresh(app, env, client, during.refresh_token)).json as { access_token: string }
  expect(await userinfoWithRowsLocked(after.access_token)).toMatchObject({ status: 200 })
})
