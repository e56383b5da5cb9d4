import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { makeEnvironment } from "../../support/tenancy.js"
import { apiKey, dashboardUser } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"

// Spec, Management common rule 2: "Write routes that accept Idempotency-Key (at most 255
// characters) replay the first response for the same Workspace, method, route, key and canonical
// JSON body; same key with a different method, route or body gives 409 idempotency_key_conflict."
// docs/decisions/management-api.md: only 2xx answers are kept; docs/decisions/rate-limits-and-caches.md:
// records belong to the credential that made them, and the route's authorisation runs before
// anything is replayed.
let app: TestApp
let a: Bootstrapped
let b: Bootstrapped
let connectionEnv: string
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
  b = await app.bootstrap()
  connectionEnv = await makeEnvironment(app, a.workspace_id, a.project_id)
})
afterAll(async () => {
  await app?.close()
})

const keyCount = async () =>
  (
    await query<{ n: number }>(app, "select count(*)::int as n from api_keys where workspace_id = $1", [a.workspace_id])
  )[0]!.n
const createKey = (key: string, idempotencyKey: string, body: Record<string, unknown>) =>
  app.management("/v1/api-keys", {
    key,
    body: { workspace_id: a.workspace_id, ...body },
    headers: { "idempotency-key": idempotencyKey },
  })
const newBff = async () => {
  const res = await app.management("/v1/clients", {
    key: a.api_key,
    body: {
      environment_id: a.environment_id,
      client_type: "web_bff",
      name: "BFF",
      token_endpoint_auth_method: "client_secret_basic",
    },
  })
  expect(res.status).toBe(201)
  return res.json as { id: string; client_secret: string }
}
const rotate = (key: string, clientId: string, idempotencyKey: string) =>
  app.management(`/v1/clients/${clientId}/rotate-secret`, {
    method: "POST",
    key,
    headers: { "idempotency-key": idempotencyKey },
  })

const providerOf = (n: number) => (n === 1 ? "google" : n <= 4 ? "github" : "microsoft")

/** Every create of the Management API that accepts Idempotency-Key: a request body per call. */
const CREATES: ReadonlyArray<{
  readonly path: string
  readonly body: (n: number) => Record<string, unknown>
  readonly table: string
}> = [
  {
    path: "/v1/projects",
    table: "projects",
    body: (n) => ({ workspace_id: a.workspace_id, name: `Idem project ${n}` }),
  },
  {
    path: "/v1/environments",
    table: "environments",
    body: (n) => ({ project_id: a.project_id, type: "test", name: `Idem env ${n}` }),
  },
  {
    path: "/v1/api-keys",
    table: "api_keys",
    body: (n) => ({ workspace_id: a.workspace_id, name: `Idem key ${n}`, scopes: ["projects:read"] }),
  },
  {
    path: "/v1/clients",
    table: "clients",
    body: (n) => ({
      environment_id: a.environment_id,
      client_type: "web_bff",
      name: `Idem client ${n}`,
      token_endpoint_auth_method: "client_secret_basic",
    }),
  },
  {
    path: "/v1/connections",
    table: "connections",
    body: (n) => ({
      // One connection per provider in an Environment: each created body (1, 3, 5) names another.
      environment_id: connectionEnv,
      provider: providerOf(n),
      mode: "byo",
      provider_key: providerOf(n),
      provider_client_id: `idem-${n}`,
      provider_client_secret: "provider-secret-value-0123456789",
    }),
  },
  {
    path: "/v1/domains",
    table: "domains",
    body: (n) => ({ environment_id: a.environment_id, hostname: `idem${n}-${process.pid}.example.com` }),
  },
  {
    path: "/v1/users",
    table: "users",
    body: (n) => ({ environment_id: a.environment_id, email: `idem${n}@example.com` }),
  },
  {
    path: "/v1/webhooks",
    table: "webhooks",
    body: (n) => ({
      environment_id: a.environment_id,
      url: `https://hooks.example.com/idem${n}`,
      event_types: ["user.created"],
    }),
  },
]

const rows = async (table: string) =>
  (
    await query<{ n: number }>(app, `select count(*)::int as n from ${table} where workspace_id = $1`, [a.workspace_id])
  )[0]!.n

describe.each(CREATES)("Idempotency-Key on POST $path", ({ path, body, table }) => {
  const post = (n: number, key: string) =>
    app.management(path, { method: "POST", body: body(n), headers: { "idempotency-key": key } })

  it("the same key and body replay the first answer (Idempotent-Replayed: true, no-store) and make one resource", async () => {
    const key = `create${path}`
    const before = await rows(table)
    const first = await post(1, key)
    expect(first.status, first.text).toBe(201)
    expect(first.headers["idempotent-replayed"]).toBeUndefined()
    const replay = await post(1, key)
    expect([replay.status, replay.headers["idempotent-replayed"], replay.headers["cache-control"]]).toEqual([
      201,
      "true",
      "no-store",
    ])
    expect(replay.json).toEqual(first.json)
    expect(replay.headers["etag"]).toBe(first.headers["etag"])
    expect(await rows(table)).toBe(before + 1)
  })

  it("the same key with another body is 409 idempotency_key_conflict and makes nothing", async () => {
    const key = `conflict${path}`
    expect((await post(3, key)).status).toBe(201)
    const before = await rows(table)
    expectProblem(await post(4, key), 409, "idempotency_key_conflict")
    expect(await rows(table)).toBe(before)
  })

  it("a key of more than 255 characters, or an empty one, is 400 invalid_request and makes nothing", async () => {
    const before = await rows(table)
    expectProblem(await post(5, "k".repeat(256)), 400, "invalid_request")
    expectProblem(await post(5, ""), 400, "invalid_request")
    expect(await rows(table)).toBe(before)
    // 255 characters are enough (each route its own key: the same key on another route is a conflict).
    expect((await post(5, `${path}:`.padEnd(255, "k"))).status).toBe(201)
  })
})

describe("Idempotency-Key across routes, methods and Workspaces (Projects)", () => {
  const create = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
    app.management("/v1/projects", { body, ...opts })

  it("Idempotency-Key: same answer replayed; different body, route or method is 409; concurrent first requests make one Project", async () => {
    const headers = { "idempotency-key": "prj-key-1" }
    const body = { workspace_id: a.workspace_id, name: "Idem Project" }
    const [r1, r2, r3] = await Promise.all([
      create(body, { headers }),
      create(body, { headers }),
      create(body, { headers }),
    ])
    expect([r1.status, r2.status, r3.status]).toEqual([201, 201, 201])
    expect(r2.json).toEqual(r1.json)
    expect(r3.json).toEqual(r1.json)
    expect(r2.headers["etag"]).toBe(r1.headers["etag"])
    expect(await query(app, "select count(*)::int as n from projects where name = 'Idem Project'")).toEqual([{ n: 1 }])
    // Key order of the body does not matter (canonical JSON).
    const reordered = await create({ name: "Idem Project", workspace_id: a.workspace_id }, { headers })
    expect(reordered.status).toBe(201)
    expect(reordered.json).toEqual(r1.json)
    expectProblem(await create({ ...body, name: "Different" }, { headers }), 409, "idempotency_key_conflict")
    expectProblem(
      await app.management(`/v1/projects/${r1.json.id}`, { method: "PATCH", body, headers }),
      409,
      "idempotency_key_conflict",
    )
    expectProblem(
      await app.management(`/v1/projects/${r1.json.id}`, { method: "DELETE", headers }),
      409,
      "idempotency_key_conflict",
    )
    expect((await app.management(`/v1/projects/${r1.json.id}`)).status).toBe(200)
    // The same key in another Workspace is independent.
    const inB = await create({ workspace_id: b.workspace_id, name: "Idem Project" }, { key: b.api_key, headers })
    expect(inB.status).toBe(201)
    expect(inB.json.id).not.toBe(r1.json.id)
    expectProblem(await create(body, { headers: { "idempotency-key": "x".repeat(256) } }), 400, "invalid_request")
  })

  it("a failed request is not stored: a retry with the same key runs again", async () => {
    const holder = await create({ workspace_id: a.workspace_id, name: "Slug holder", slug: "idem-slug" })
    expect(holder.status).toBe(201)
    const headers = { "idempotency-key": "prj-key-fail" }
    const body = { workspace_id: a.workspace_id, name: "Taken", slug: "idem-slug" }
    expectProblem(await create(body, { headers }), 409, "slug_taken")
    expectProblem(await create(body, { headers }), 409, "slug_taken")
    // Once the slug is free the same key and body run again and succeed: no failure was kept.
    expect(
      (await app.management(`/v1/projects/${holder.json.id}`, { method: "PATCH", body: { slug: "idem-slug-moved" } }))
        .status,
    ).toBe(200)
    const retried = await create(body, { headers })
    expect(retried.status, retried.text).toBe(201)
    expect(retried.headers["idempotent-replayed"]).toBeUndefined()
    const replay = await create(body, { headers })
    expect([replay.status, replay.headers["idempotent-replayed"], replay.json.id]).toEqual([
      201,
      "true",
      retried.json.id,
    ])
  })
})

describe("POST /v1/api-keys with another key's Idempotency-Key value", () => {
  it("a second key of the Workspace gets its own new key, never the first key's secret; the owner still gets its replay (no-store)", async () => {
    const body = { name: "Shared value", scopes: ["projects:read"] }
    const first = await createKey(a.api_key, "shared-create", body)
    expect(first.status).toBe(201)
    const second = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write", "projects:read"] }))
      .secret
    const other = await createKey(second, "shared-create", body)
    expect(other.status).toBe(201)
    expect(other.headers["idempotent-replayed"]).toBeUndefined()
    expect(other.json.id).not.toBe(first.json.id)
    expect(other.text).not.toContain(first.json.secret)
    const replay = await createKey(a.api_key, "shared-create", body)
    expect([replay.status, replay.headers["idempotent-replayed"], replay.headers["cache-control"]]).toEqual([
      201,
      "true",
      "no-store",
    ])
    expect(replay.json).toEqual(first.json)
  })

  it("a narrower key replaying a wider key's creation is refused by the never-wider rule (403), and nothing is created", async () => {
    const body = { name: "Wide", scopes: ["projects:read", "projects:write"] }
    const first = await createKey(a.api_key, "shared-wide", body)
    expect(first.status).toBe(201)
    const narrow = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write", "projects:read"] }))
      .secret
    const before = await keyCount()
    const refused = await createKey(narrow, "shared-wide", body)
    expectProblem(refused, 403, "insufficient_scope")
    expect(refused.text).not.toContain(first.json.secret)
    expect(await keyCount()).toBe(before)
  })

  it("a key lacking the route's scope gets 403 even though a record with that value exists", async () => {
    const body = { name: "Scoped", scopes: ["projects:read"] }
    expect((await createKey(a.api_key, "shared-scope", body)).status).toBe(201)
    const reader = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:read", "projects:read"] }))
      .secret
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
    const pinned = (
      await apiKey(app, { workspaceId: a.workspace_id, environmentId: elsewhere, scopes: ["clients:rotate_secret"] })
    ).secret
    const refused = await rotate(pinned, client.id, "shared-rotate")
    expectProblem(refused, 404, "not_found")
    expect(refused.text).not.toContain(first.json.client_secret)
    const writer = (await apiKey(app, { workspaceId: a.workspace_id, scopes: ["clients:write"] })).secret
    expectProblem(await rotate(writer, client.id, "shared-rotate"), 403, "insufficient_scope")
    // the owner's retry replays its own answer, still no-store
    const replay = await rotate(a.api_key, client.id, "shared-rotate")
    expect([replay.status, replay.headers["idempotent-replayed"], replay.headers["cache-control"]]).toEqual([
      200,
      "true",
      "no-store",
    ])
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
    const call = (token: string) =>
      app.management("/v1/api-keys", {
        key: token,
        body: { workspace_id: a.workspace_id, name: "Dash", scopes: ["projects:read"] },
        headers: { "idempotency-key": "shared-dash", "x-workspace-id": a.workspace_id },
      })
    const first = await call(owner.token)
    expect(first.status).toBe(201)
    const other = await call(admin.token)
    expect(other.status).toBe(201)
    expect(other.json.secret).not.toBe(first.json.secret)
    const { mintDashboardSession } = await import("../../../src/management/auth/dashboard.js")
    const again = await call(await app.run(mintDashboardSession(owner.id)))
    expect([again.headers["idempotent-replayed"], again.json.secret]).toEqual(["true", first.json.secret])
  })
})
