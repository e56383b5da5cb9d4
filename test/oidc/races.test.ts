import { afterAll, beforeAll, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createUser,
  exchangeCode,
  mintCode,
  queryRows,
  refresh,
  type TestClient,
  type TestUser,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env)
  user = await createUser(app, env)
})
afterAll(async () => {
  await app?.close()
})

it("20 concurrent exchanges of one code: exactly one wins; the others are replays that revoke what it issued", async () => {
  const minted = await mintCode(app, env, spa, user)
  const results = await Promise.all(Array.from({ length: 20 }, () => exchangeCode(app, env, spa, minted)))
  const wins = results.filter((r) => r.status === 200)
  expect(wins).toHaveLength(1)
  const losses = results.filter((r) => r.status !== 200)
  expect(losses.map((r) => [r.status, r.json.error])).toEqual(Array.from({ length: 19 }, () => [400, "invalid_grant"]))
  const families = await queryRows<{ revoked_reason: string | null }>(
    app,
    "select revoked_reason from refresh_families where session_id = $1",
    [minted.sessionId],
  )
  expect(families).toEqual([{ revoked_reason: "code_replayed" }])
  const [s] = await queryRows<{ revoked_reason: string | null }>(
    app,
    "select revoked_reason from login_sessions where id = $1",
    [minted.sessionId],
  )
  expect(s!.revoked_reason).toBe("refresh_token_reuse")
  const revokedEvents = await queryRows(
    app,
    "select 1 from event_outbox where type = 'session.revoked' and envelope->'payload'->>'sessionId' = $1",
    [minted.sessionId],
  )
  expect(revokedEvents).toHaveLength(1)
})

it("20 concurrent refreshes of one token: one rotation; every other request within 5 s gets the same response", async () => {
  const minted = await mintCode(app, env, spa, user)
  const first = await exchangeCode(app, env, spa, minted)
  const token = first.json.refresh_token as string
  const results = await Promise.all(Array.from({ length: 20 }, () => refresh(app, env, spa, token)))
  expect(results.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200))
  expect(new Set(results.map((r) => r.text)).size).toBe(1)
  const familyId = token.slice(3, token.indexOf("."))
  const [f] = await queryRows<{ generation: number; revoked_at: Date | null }>(
    app,
    "select generation, revoked_at from refresh_families where id = $1",
    [familyId],
  )
  expect(f).toEqual({ generation: 2, revoked_at: null })
  const tokens = await queryRows(
    app,
    "select generation from refresh_tokens where family_id = $1 order by generation",
    [familyId],
  )
  expect(tokens).toEqual([{ generation: 1 }, { generation: 2 }])
  expect((await refresh(app, env, spa, results[0]!.json.refresh_token)).status).toBe(200)
})
