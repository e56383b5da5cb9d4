import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { apiKey, dashboardUser } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { workspaceAuditActions } from "../support/records.js"

let app: TestApp
let a: Bootstrapped
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const WORKSPACE_ID = /^wsp_[a-z2-7]{32}$/

describe("GET /v1/workspaces", () => {
  it("an API key lists its own Workspace only", async () => {
    const res = await app.management("/v1/workspaces")
    expect(res.status).toBe(200)
    expect(res.headers["x-request-id"]).toMatch(/^req_/)
    expect(res.json.data.map((w: { id: string }) => w.id)).toEqual([a.workspace_id])
    expect(res.json.next_cursor).toBeNull()
    expect(Object.keys(res.json.data[0]).sort()).toEqual(["created_at", "id", "name", "slug", "status", "updated_at"])
  })

  it("filters by status and refuses an unknown status", async () => {
    expect((await app.management("/v1/workspaces?status=suspended")).json.data).toEqual([])
    expect((await app.management("/v1/workspaces?status=active")).json.data).toHaveLength(1)
    expectProblem(await app.management("/v1/workspaces?status=deleted"), 400, "invalid_request")
  })

  it("needs workspaces:read (a :write scope does not imply :read)", async () => {
    const key = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["workspaces:write"] })
    expectProblem(await app.management("/v1/workspaces", { key: key.secret }), 403, "insufficient_scope")
    expectProblem(
      await app.management(`/v1/workspaces/${a.workspace_id}`, { key: key.secret }),
      403,
      "insufficient_scope",
    )
  })

  it("needs credentials: missing, unknown, revoked or expired keys are 401 unauthorized", async () => {
    const res = await app.request(app.config.managementHost, "/v1/workspaces")
    expectProblem(res, 401, "unauthorized")
    expectProblem(
      await app.management("/v1/workspaces", { key: "sk_live_unknownunknownunknownunknownunknownxxxx" }),
      401,
      "unauthorized",
    )
  })

  it("a Dashboard session lists the Workspaces its user is a member of, with keyset pages", async () => {
    const user = await dashboardUser(app, { workspaceId: a.workspace_id, role: "member" })
    await query(
      app,
      "insert into workspace_members (workspace_id, platform_user_id, role, created_at, updated_at) values ($1, $2, 'admin', now(), now())",
      [b.workspace_id, user.id],
    )
    const headers = { authorization: `Bearer ${user.token}` }
    const all = await app.request(app.config.managementHost, "/v1/workspaces", { headers })
    expect(all.status).toBe(200)
    expect(all.json.data.map((w: { id: string }) => w.id)).toEqual([a.workspace_id, b.workspace_id].sort())
    const first = await app.request(app.config.managementHost, "/v1/workspaces?limit=1", { headers })
    expect(first.json.data).toHaveLength(1)
    expect(first.json.next_cursor).toEqual(expect.any(String))
    const second = await app.request(
      app.config.managementHost,
      `/v1/workspaces?limit=1&cursor=${first.json.next_cursor}`,
      { headers },
    )
    expect(second.json.data).toHaveLength(1)
    expect(second.json.data[0].id).not.toBe(first.json.data[0].id)
    expect(second.json.next_cursor).toBeNull()
    // A user who is a member of nothing sees nothing; one of another Workspace never sees A.
    const stranger = await dashboardUser(app, { workspaceId: b.workspace_id, role: "owner" })
    const theirs = await app.request(app.config.managementHost, "/v1/workspaces", {
      headers: { authorization: `Bearer ${stranger.token}` },
    })
    expect(theirs.json.data.map((w: { id: string }) => w.id)).toEqual([b.workspace_id])
  })
})

describe("GET /v1/workspaces/{workspaceId}", () => {
  it("returns the Workspace with an ETag", async () => {
    const res = await app.management(`/v1/workspaces/${a.workspace_id}`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ id: a.workspace_id, status: "active" })
    expect(res.headers["etag"]).toMatch(/^"wsp_[a-z2-7]{32}\.\d+"$/)
  })

  it("another Workspace is 404 for a key (tenant isolation)", async () => {
    expectProblem(await app.management(`/v1/workspaces/${b.workspace_id}`), 404, "not_found")
    expectProblem(await app.management(`/v1/workspaces/${b.workspace_id}/members`), 404, "not_found")
    expectProblem(
      await app.management(`/v1/workspaces/${b.workspace_id}`, { method: "PATCH", body: { name: "stolen" } }),
      404,
      "not_found",
    )
    expect((await app.management(`/v1/workspaces/${b.workspace_id}`, { key: b.api_key })).json.name).not.toBe("stolen")
  })
})

describe("Dashboard sessions and X-Workspace-Id", () => {
  it("a Dashboard session must send X-Workspace-Id, matched against membership", async () => {
    const user = await dashboardUser(app, { workspaceId: a.workspace_id, role: "admin" })
    const auth = { authorization: `Bearer ${user.token}` }
    const path = `/v1/workspaces/${a.workspace_id}`
    expectProblem(await app.request(app.config.managementHost, path, { headers: auth }), 400, "invalid_request")
    expectProblem(
      await app.request(app.config.managementHost, path, { headers: { ...auth, "x-workspace-id": b.workspace_id } }),
      403,
      "forbidden",
    )
    const ok = await app.request(app.config.managementHost, path, {
      headers: { ...auth, "x-workspace-id": a.workspace_id },
    })
    expect(ok.status).toBe(200)
    // The cookie form works too.
    const cookie = await app.request(app.config.managementHost, path, {
      headers: { cookie: `dashboard_session=${user.token}`, "x-workspace-id": a.workspace_id },
    })
    expect(cookie.status).toBe(200)
  })

  it("API keys ignore X-Workspace-Id and use their own Workspace", async () => {
    const res = await app.management(`/v1/workspaces/${a.workspace_id}`, {
      headers: { "x-workspace-id": b.workspace_id },
    })
    expect(res.status).toBe(200)
    expect(res.json.id).toBe(a.workspace_id)
    const other = await app.management(`/v1/workspaces/${b.workspace_id}`, {
      headers: { "x-workspace-id": b.workspace_id },
    })
    expectProblem(other, 404, "not_found")
  })

  it("a Member (read scopes only) cannot PATCH", async () => {
    const user = await dashboardUser(app, { workspaceId: a.workspace_id, role: "member" })
    const res = await app.request(app.config.managementHost, `/v1/workspaces/${a.workspace_id}`, {
      method: "PATCH",
      body: { name: "Member rename" },
      headers: { authorization: `Bearer ${user.token}`, "x-workspace-id": a.workspace_id },
    })
    expectProblem(res, 403, "insufficient_scope")
  })
})

describe("POST /v1/workspaces", () => {
  it("is for Dashboard sessions only", async () => {
    const res = await app.management("/v1/workspaces", { body: { name: "By key" } })
    expectProblem(res, 403, "forbidden")
    expect(await query(app, "select id from workspaces where name = 'By key'")).toEqual([])
  })

  it("creates a Workspace whose creator becomes Owner (no X-Workspace-Id needed)", async () => {
    const user = await dashboardUser(app)
    const auth = { authorization: `Bearer ${user.token}` }
    const res = await app.request(app.config.managementHost, "/v1/workspaces", {
      body: { name: "Acme Corp" },
      headers: auth,
    })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({ name: "Acme Corp", status: "active" })
    expect(res.json.id).toMatch(WORKSPACE_ID)
    expect(res.json.slug).toMatch(/^acme-corp/)
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    const members = await app.request(app.config.managementHost, `/v1/workspaces/${res.json.id}/members`, {
      headers: { ...auth, "x-workspace-id": res.json.id },
    })
    expect(members.status).toBe(200)
    expect(members.json.data).toEqual([
      { platform_user_id: user.id, role: "owner", created_at: expect.any(String), updated_at: expect.any(String) },
    ])
    expect(await workspaceAuditActions(app, res.json.id)).toEqual([
      { action: "workspace.created", subject_id: res.json.id },
    ])
  })

  it("validates name and slug, and refuses a taken slug with 409 slug_taken", async () => {
    const user = await dashboardUser(app)
    const send = (body: unknown) =>
      app.request(app.config.managementHost, "/v1/workspaces", {
        body,
        headers: { authorization: `Bearer ${user.token}` },
      })
    const workspaces = async () => (await query<{ n: number }>(app, "select count(*)::int as n from workspaces"))[0]!.n
    const before = await workspaces()
    // Wrong shape: missing or unknown field, wrong type, unreadable JSON.
    expectProblem(await send({}), 400, "invalid_request_body")
    expectProblem(await send({ name: 5 }), 400, "invalid_request_body")
    expectProblem(await send({ name: "Ok", slug: null }), 400, "invalid_request_body")
    expectProblem(await send({ name: "Ok", extra: 1 }), 400, "invalid_request_body")
    expectProblem(await send("{not json"), 400, "invalid_request_body")
    // Well-typed values that break a rule: name 1 to 100 characters and not blank, slug pattern.
    expectProblem(await send({ name: "" }), 400, "invalid_request")
    expectProblem(await send({ name: "   " }), 400, "invalid_request")
    expectProblem(await send({ name: "x".repeat(101) }), 400, "invalid_request")
    expectProblem(await send({ name: "Ok", slug: "Bad Slug" }), 400, "invalid_request")
    expectProblem(await send({ name: "Ok", slug: "-bad" }), 400, "invalid_request")
    expect(await workspaces()).toBe(before)
    const first = await send({ name: "Slugged", slug: "slugged-ws" })
    expect(first.status).toBe(201)
    expect(first.json.slug).toBe("slugged-ws")
    expectProblem(await send({ name: "Slugged again", slug: "slugged-ws" }), 409, "slug_taken")
    expect(await query(app, "select count(*)::int as n from workspaces where slug = 'slugged-ws'")).toEqual([{ n: 1 }])
  })

  it("concurrent creations with the same slug: one 201, one 409", async () => {
    const user = await dashboardUser(app)
    const send = () =>
      app.request(app.config.managementHost, "/v1/workspaces", {
        body: { name: "Race", slug: "race-slug" },
        headers: { authorization: `Bearer ${user.token}` },
      })
    const results = await Promise.all([send(), send(), send()])
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409])
  })

  it("Idempotency-Key: replays, conflicts, and two concurrent first requests create one Workspace", async () => {
    const user = await dashboardUser(app)
    const headers = { authorization: `Bearer ${user.token}`, "idempotency-key": "ws-create-1" }
    const [r1, r2] = await Promise.all([
      app.request(app.config.managementHost, "/v1/workspaces", { body: { name: "Idem WS" }, headers }),
      app.request(app.config.managementHost, "/v1/workspaces", { body: { name: "Idem WS" }, headers }),
    ])
    expect([r1.status, r2.status]).toEqual([201, 201])
    expect(r1.json).toEqual(r2.json)
    const replay = await app.request(app.config.managementHost, "/v1/workspaces", {
      body: { name: "Idem WS" },
      headers,
    })
    expect(replay.status).toBe(201)
    expect(replay.json).toEqual(r1.json)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect(await query(app, "select count(*)::int as n from workspaces where name = 'Idem WS'")).toEqual([{ n: 1 }])
    expectProblem(
      await app.request(app.config.managementHost, "/v1/workspaces", { body: { name: "Other" }, headers }),
      409,
      "idempotency_key_conflict",
    )
    // Another user's identical key is a different namespace: it creates its own Workspace.
    const other = await dashboardUser(app)
    const theirs = await app.request(app.config.managementHost, "/v1/workspaces", {
      body: { name: "Idem WS" },
      headers: { authorization: `Bearer ${other.token}`, "idempotency-key": "ws-create-1" },
    })
    expect(theirs.status).toBe(201)
    expect(theirs.json.id).not.toBe(r1.json.id)
  })
})

describe("PATCH /v1/workspaces/{workspaceId}", () => {
  it("changes name and slug, bumps the ETag, audits", async () => {
    const get = await app.management(`/v1/workspaces/${a.workspace_id}`)
    const res = await app.management(`/v1/workspaces/${a.workspace_id}`, {
      method: "PATCH",
      body: { name: "Renamed", slug: "renamed-a" },
      headers: { "if-match": get.headers["etag"] as string },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ id: a.workspace_id, name: "Renamed", slug: "renamed-a" })
    expect(res.headers["etag"]).not.toBe(get.headers["etag"])
    expect((await workspaceAuditActions(app, a.workspace_id)).map((e) => e.action)).toContain("workspace.updated")
  })

  it("status cannot change: 400 and nothing changes", async () => {
    const before = await app.management(`/v1/workspaces/${a.workspace_id}`)
    const res = await app.management(`/v1/workspaces/${a.workspace_id}`, {
      method: "PATCH",
      body: { name: "Nope", status: "suspended" },
    })
    expectProblem(res, 400, "invalid_request")
    expect(res.json.detail).toContain("status")
    const after = await app.management(`/v1/workspaces/${a.workspace_id}`)
    expect(after.json).toEqual(before.json)
    expect(after.headers["etag"]).toBe(before.headers["etag"])
  })

  it("refuses an empty change, bad values and a slug taken by another Workspace", async () => {
    const path = `/v1/workspaces/${a.workspace_id}`
    expectProblem(await app.management(path, { method: "PATCH", body: {} }), 400, "invalid_request")
    expectProblem(await app.management(path, { method: "PATCH", body: { name: 5 } }), 400, "invalid_request_body")
    const unchanged = (await app.management(path)).json
    expectProblem(await app.management(path, { method: "PATCH", body: { slug: "Bad Slug" } }), 400, "invalid_request")
    expectProblem(await app.management(path, { method: "PATCH", body: { name: "" } }), 400, "invalid_request")
    expect((await app.management(path)).json).toEqual(unchanged)
    const bSlug = (await app.management(`/v1/workspaces/${b.workspace_id}`, { key: b.api_key })).json.slug
    expectProblem(await app.management(path, { method: "PATCH", body: { slug: bSlug } }), 409, "slug_taken")
    // Setting its own current slug is not a conflict.
    const own = (await app.management(path)).json.slug
    expect((await app.management(path, { method: "PATCH", body: { slug: own } })).status).toBe(200)
  })

  it("If-Match mismatch is 412 precondition_failed and changes nothing", async () => {
    const path = `/v1/workspaces/${a.workspace_id}`
    const before = await app.management(path)
    const res = await app.management(path, {
      method: "PATCH",
      body: { name: "Stale" },
      headers: { "if-match": `"${a.workspace_id}.999"` },
    })
    expectProblem(res, 412, "precondition_failed")
    expect((await app.management(path)).json.name).toBe(before.json.name)
  })

  it("two concurrent PATCHes with the same If-Match: exactly one wins", async () => {
    const path = `/v1/workspaces/${a.workspace_id}`
    const etag = (await app.management(path)).headers["etag"] as string
    const results = await Promise.all(
      ["One", "Two", "Three"].map((name) =>
        app.management(path, { method: "PATCH", body: { name }, headers: { "if-match": etag } }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
  })

  it("an Environment-pinned key cannot change its Workspace", async () => {
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["workspaces:read", "workspaces:write"],
    })
    expect((await app.management(`/v1/workspaces/${a.workspace_id}`, { key: pinned.secret })).status).toBe(200)
    expectProblem(
      await app.management(`/v1/workspaces/${a.workspace_id}`, {
        method: "PATCH",
        body: { name: "Pinned" },
        key: pinned.secret,
      }),
      403,
      "forbidden",
    )
  })
})

describe("GET /v1/workspaces/{workspaceId}/members", () => {
  it("returns only platform_user_id, role, created_at, updated_at; paginates; needs workspace_members:read", async () => {
    const u1 = await dashboardUser(app, { workspaceId: b.workspace_id, role: "owner" })
    const u2 = await dashboardUser(app, { workspaceId: b.workspace_id, role: "member" })
    const res = await app.management(`/v1/workspaces/${b.workspace_id}/members?limit=1`, { key: b.api_key })
    expect(res.status).toBe(200)
    expect(res.json.data).toHaveLength(1)
    expect(Object.keys(res.json.data[0]).sort()).toEqual(["created_at", "platform_user_id", "role", "updated_at"])
    const next = await app.management(
      `/v1/workspaces/${b.workspace_id}/members?limit=100&cursor=${res.json.next_cursor}`,
      { key: b.api_key },
    )
    const ids = [
      res.json.data[0].platform_user_id,
      ...next.json.data.map((m: { platform_user_id: string }) => m.platform_user_id),
    ]
    expect(ids).toEqual(expect.arrayContaining([u1.id, u2.id]))
    const key = await apiKey(app, { workspaceId: b.workspace_id, scopes: ["workspaces:read"] })
    expectProblem(
      await app.management(`/v1/workspaces/${b.workspace_id}/members`, { key: key.secret }),
      403,
      "insufficient_scope",
    )
  })
})
