import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, expect, it } from "vitest"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, refresh } from "../oidc/support.js"

let app: TestApp
let env: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const sessionRow = (id: string) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{
        revoked_at: Date | null
        revoked_reason: string | null
      }>`select revoked_at, revoked_reason from login_sessions where id = ${id}`
      return row!
    }),
  )

const revokedEvents = (sessionId: string) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql<{
        envelope: { payload: Record<string, unknown>; actor?: unknown }
      }>`select envelope from event_outbox
    where type = 'session.revoked' and envelope->'payload'->>'sessionId' = ${sessionId}`
    }),
  )

it("housekeeping ends sessions past their 7-day idle expiry with session.revoked reason session_expired, once", async () => {
  const client = await createClient(app, env)
  const idle = await mintCode(app, env, client, await createUser(app, env), { scopes: ["openid"] })
  // A session whose refresh family is used keeps living: refreshes stretch its expiries.
  const refreshed = await mintCode(app, env, client, await createUser(app, env))
  const tokens = (await exchangeCode(app, env, client, refreshed)).json
  await app.advance("6 days")
  const rotated = await refresh(app, env, client, tokens.refresh_token)
  expect(rotated.status).toBe(200)
  await app.advance("1 day")
  await app.advance("1 second")
  await app.run(housekeeping)

  expect(await sessionRow(idle.sessionId)).toMatchObject({ revoked_reason: "session_expired" })
  const events = await revokedEvents(idle.sessionId)
  expect(events).toHaveLength(1)
  expect(events[0]!.envelope.payload).toMatchObject({ sessionId: idle.sessionId, reason: "session_expired" })
  expect(events[0]!.envelope.actor).toEqual({ type: "system" })
  expect(await sessionRow(refreshed.sessionId)).toMatchObject({ revoked_at: null })

  await app.run(housekeeping)
  expect(await revokedEvents(idle.sessionId)).toHaveLength(1)
})
