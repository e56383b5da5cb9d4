import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { makeEnvironment } from "../support/tenancy.js"
import { apiKey, dashboardUser, expectProblem, query } from "./helpers.js"

// docs/decisions/rate-limits-and-caches.md: idempotency records belong to the credential that made them, and the route's
// authorisation runs before anything is replayed.
let app: TestApp
let a: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
})
afterAll(async () => { await app?.close() })

const keyCount = async () => (await query<{ n: number }>(app, "select count(*)::int as n from api_keys where workspace_id = $1", [a.workspace_id]))[0]!.n
const createKey = (key: string, idempotencyKey: string, body: Record<string, unknown>) =>
  app.management("/v1/api-keys", { key, body: { workspace_id: a.workspace_id, ...body }, headers: { "idempotency-key": idempotencyKey } })
const newBff = async () => {
  const res = await app.management("/v1/clients", {
    key: a.api_key,
    body: { environment_id: a.environment_id, client_type: "web_bff", name: "BFF", token_endpoint_auth_method: "client_secret_basic" },
  })
  expect(res.status).toBe(201)
  return res.json as { id: string; client_secret: string }
}
const rotate = (key: string, clientId: string, idempotencyKey: string) =>
  app.management(`/v1/clients/${clientId}/rotate-secret`, { method: "POST", key, headers: { "idempotency-key": idempotencyKey } })

describe("POST /v1/api-keys with another key's Idempotency-Key value", () => {
  it("a second key of the Workspace gets its own new key, never the first key's secret; the owner still gets its replay (no-store)", async () => {
    const body = { name: "Shared value", scopes: ["projects:read"] }
    const first = await createKey(a.api_key, "shared-create", body)
    expect(first.status).toBe(201)
    const second = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write", "projects:read"] })).secret
    const other = await createKey(second, "shared-create", body)
    expect(other.status).toBe(201)
    expect(other.headers["idempotent-replayed"]).toBeUndefined()
    expect(other.json.id).not.toBe(first.json.id)
    expect(other.text).not.toContain(first.json.secret)
    const replay = await createKey(a.api_key, "shared-create", body)
    expect([replay.status, replay.headers["idempotent-replayed"], replay.headers["cache-control"]]).toEqual([201, "true", "no-store"])
    expect(replay.json).toEqual(first.json)
  })

  it("a narrower key replaying a wider key's creation is refused by the never-wider rule (403), and nothing is created", async () => {
    const body = { name: "Wide", scopes: ["projects:read", "projects:write"] }
    const first = await createKey(a.api_key, "shared-wide", body)
    expect(first.status).toBe(201)
    const narrow = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write", "projects:read"] })).secret
    const before = await keyCount()
    const refused = await createKey(narrow, "shared-wide", body)
    expectProblem(refused, 403, "insufficient_scope")
    expect(refused.text).not.toContain(first.json.secret)
    expect(await keyCount()).toBe(before)
  })

  it("a key lacking the route's scope gets 403 even though a record with that value exists", async () => {
    const body = { name: "Scoped", scopes: ["projects:read"] }
    expect((await createKey(a.api_key, "shared-scope", body)).status).toBe(201)
    const reader = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:read", "projects:read"] })).secret
    const refused = await createKey(reader, "shared-scope", body)
    expectProblem(refused, 403, "insufficient_scope")
    expect(refused.headers["idempotent-replayed"]).toBeUndefined()
  })
})

describe("POST /v1/clients/{id}/rotate-secret with another key's Idempotency-Key value", () => {
  it("a key pinned to another Environment gets 404, not the stored secret; a lacking scope gets 403", async () => {
    const client = await newBff()
    const first = await rotate(a.api_key, client.id, "shared-rotate")
    expect([first.status, first.headers["cache-control"]]).toEqual([200, "no-store"])
    const elsewhere = await makeEnvironment(app, a.workspace_id, a.project_id)
    const pinned = (await apiKey(app, { workspaceId: a.workspace_id, environmentId: elsewhere, scopes: ["clients:rotate_secret"] })).secret
    const refused = await rotate(pinned, client.id, "shared-rotate")
    expectProblem(refused, 404, "not_found")
    expect(refused.text).not.toContain(first.json.client_secret)
    const writer = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["clients:write"] })).secret
    expectProblem(await rotate(writer, client.id, "shared-rotate"), 403, "insufficient_scope")
    // the owner's retry replays its own answer, still no-store
    const replay = await rotate(a.api_key, client.id, "shared-rotate")
    expect([replay.status, replay.headers["idempotent-replayed"], replay.headers["cache-control"]]).toEqual([200, "true", "no-store"])
    expect(replay.json.client_secret).toBe(first.json.client_secret)
  })

  it("another entitled key rotates afresh: its own new secret, never the first one", async () => {
    const client = await newBff()
    const first = await rotate(a.api_key, client.id, "shared-rotate-2")
    const rotator = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["clients:rotate_secret"] })).secret
    const second = await rotate(rotator, client.id, "shared-rotate-2")
    expect(second.status).toBe(200)
    expect(second.headers["idempotent-replayed"]).toBeUndefined()
    expect(second.json.client_secret).not.toBe(first.json.client_secret)
  })
})

describe("Dashboard sessions", () => {
  it("records are per platform user: another member's same value is its own request; the same user's new session replays", async () => {
    const owner = await dashboardUser(app, { workspaceId: a.workspace_id, role: "owner" })
    const admin = await dashboardUser(app, { workspaceId: a.workspace_id, role: "admin" })
    const call = (token: string) => app.management("/v1/api-keys", {
      key: token, body: { workspace_id: a.workspace_id, name: "Dash", scopes: ["projects:read"] },
      headers: { "idempotency-key": "shared-dash", "x-workspace-id": a.workspace_id },
    })
    const first = await call(owner.token)
    expect(first.status).toBe(201)
    const other = await call(admin.token)
    expect(other.status).toBe(201)
    expect(other.json.secret).not.toBe(first.json.secret)
    const { mintDashboardSession } = await import("../../src/management/auth/dashboard.js")
    const again = await call(await app.run(mintDashboardSession(owner.userId)))
    expect([again.headers["idempotent-replayed"], again.json.secret]).toEqual(["true", first.json.secret])
  })
})
