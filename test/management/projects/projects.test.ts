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

const create = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  app.management("/v1/projects", { body, ...opts })

describe("POST /v1/projects", () => {
  it("creates a Project with an ETag and an audit record", async () => {
    const res = await create({ workspace_id: a.workspace_id, name: "Mobile App" })
    expect(res.status).toBe(201)
    expect(res.json).toEqual({
      id: expect.stringMatching(/^prj_[a-z2-7]{32}$/),
      workspace_id: a.workspace_id,
      name: "Mobile App",
      slug: "mobile-app",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "project.created",
      subject_id: res.json.id,
    })
    // A second Project with the same name gets a free derived slug.
    const again = await create({ workspace_id: a.workspace_id, name: "Mobile App" })
    expect(again.json.slug).toBe("mobile-app-2")
  })

  it("workspace_id must match the authenticated Workspace: 400 invalid_request naming X-Workspace-Id", async () => {
    const res = await create({ workspace_id: b.workspace_id, name: "Cross" })
    expectProblem(res, 400, "invalid_request")
    expect(res.json.detail).toContain("X-Workspace-Id")
    expect(await query(app, "select id from projects where name = 'Cross'")).toEqual([])
  })

  it("refuses bad bodies and a taken slug", async () => {
    const projects = async () => (await query<{ n: number }>(app, "select count(*)::int as n from projects"))[0]!.n
    const before = await projects()
    // Wrong shape: missing or unknown field, wrong type, not an object.
    expectProblem(await create({ name: "No workspace" }), 400, "invalid_request_body")
    expectProblem(await create({ workspace_id: a.workspace_id }), 400, "invalid_request_body")
    expectProblem(await create({ workspace_id: a.workspace_id, name: ["X"] }), 400, "invalid_request_body")
    expectProblem(
      await create({ workspace_id: a.workspace_id, name: "X", id: "prj_mine" }),
      400,
      "invalid_request_body",
    )
    expectProblem(await create("[]"), 400, "invalid_request_body")
    // Well-typed values that break a rule (name length, slug pattern).
    expectProblem(await create({ workspace_id: a.workspace_id, name: "" }), 400, "invalid_request")
    expectProblem(await create({ workspace_id: a.workspace_id, name: "X", slug: "UPPER" }), 400, "invalid_request")
    expect(await projects()).toBe(before)
    expect((await create({ workspace_id: a.workspace_id, name: "Slugged", slug: "fixed-slug" })).status).toBe(201)
    expectProblem(
      await create({ workspace_id: a.workspace_id, name: "Slugged 2", slug: "fixed-slug" }),
      409,
      "slug_taken",
    )
    // Slugs are per Workspace: B may use the same one.
    expect(
      (await create({ workspace_id: b.workspace_id, name: "Slugged", slug: "fixed-slug" }, { key: b.api_key })).status,
    ).toBe(201)
  })

  it("needs projects:write; projects:write does not grant projects:read", async () => {
    const readOnly = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["projects:read"] })
    expectProblem(
      await create({ workspace_id: a.workspace_id, name: "RO" }, { key: readOnly.secret }),
      403,
      "insufficient_scope",
    )
    const writeOnly = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["projects:write"] })
    const made = await create({ workspace_id: a.workspace_id, name: "WO" }, { key: writeOnly.secret })
    expect(made.status).toBe(201)
    expectProblem(
      await app.management(`/v1/projects/${made.json.id}`, { key: writeOnly.secret }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/projects?workspace_id=${a.workspace_id}`, { key: writeOnly.secret }),
      403,
      "insufficient_scope",
    )
  })
})

describe("GET /v1/projects", () => {
  it("requires workspace_id and lists only this Workspace's live Projects, in keyset pages", async () => {
    expectProblem(await app.management("/v1/projects"), 400, "invalid_request")
    const mismatch = await app.management(`/v1/projects?workspace_id=${b.workspace_id}`)
    expectProblem(mismatch, 400, "invalid_request")
    expect(mismatch.json.detail).toContain("X-Workspace-Id")
    const all: Array<{ id: string; workspace_id: string }> = []
    let cursor: string | null = null
    do {
      const res = await app.management(
        `/v1/projects?workspace_id=${a.workspace_id}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      )
      expect(res.status).toBe(200)
      expect(res.json.data.length).toBeLessThanOrEqual(2)
      all.push(...res.json.data)
      cursor = res.json.next_cursor
    } while (cursor)
    const stored = await query<{ id: string }>(
      app,
      "select id from projects where workspace_id = $1 and deleted_at is null order by id",
      [a.workspace_id],
    )
    expect(all.map((p) => p.id)).toEqual(stored.map((p) => p.id))
    expect(all.every((p) => p.workspace_id === a.workspace_id)).toBe(true)
    expect(all.map((p) => p.id)).not.toContain(b.project_id)
    expectProblem(await app.management(`/v1/projects?workspace_id=${a.workspace_id}&limit=101`), 400, "invalid_request")
  })
})

describe("PATCH and DELETE /v1/projects/{projectId}", () => {
  it("PATCH changes name and/or slug with If-Match; a stale ETag is 412; an empty change is 400", async () => {
    const p = await create({ workspace_id: a.workspace_id, name: "Patchable" })
    const path = `/v1/projects/${p.json.id}`
    expectProblem(await app.management(path, { method: "PATCH", body: {} }), 400, "invalid_request")
    expectProblem(
      await app.management(path, { method: "PATCH", body: { workspace_id: b.workspace_id } }),
      400,
      "invalid_request_body",
    )
    const res = await app.management(path, {
      method: "PATCH",
      body: { name: "Patched" },
      headers: { "if-match": p.headers["etag"] as string },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ name: "Patched", slug: "patchable" })
    expect(res.headers["etag"]).toBe(`"${p.json.id}.2"`)
    const stale = await app.management(path, {
      method: "PATCH",
      body: { name: "Stale" },
      headers: { "if-match": p.headers["etag"] as string },
    })
    expectProblem(stale, 412, "precondition_failed")
    expect((await app.management(path)).json.name).toBe("Patched")
    expect((await app.management(path, { method: "PATCH", body: { slug: "patched-slug" } })).json.slug).toBe(
      "patched-slug",
    )
  })

  it("Idempotency-Key on PATCH: the replay returns the first answer and does not apply twice", async () => {
    const p = await create({ workspace_id: a.workspace_id, name: "Idem patch" })
    const path = `/v1/projects/${p.json.id}`
    const headers = { "idempotency-key": `patch-${p.json.id}` }
    const first = await app.management(path, { method: "PATCH", body: { name: "Once" }, headers })
    expect(first.headers["etag"]).toBe(`"${p.json.id}.2"`)
    const replay = await app.management(path, { method: "PATCH", body: { name: "Once" }, headers })
    expect(replay.status).toBe(200)
    expect(replay.json).toEqual(first.json)
    expect(replay.headers["etag"]).toBe(`"${p.json.id}.2"`)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect((await app.management(path)).headers["etag"]).toBe(`"${p.json.id}.2"`)
    expectProblem(
      await app.management(path, { method: "PATCH", body: { name: "Twice" }, headers }),
      409,
      "idempotency_key_conflict",
    )
    expect((await app.management(path)).json.name).toBe("Once")
  })

  it("concurrent DELETEs: exactly one wins; the loser finds it gone (404) or stale (412)", async () => {
    const p = await create({ workspace_id: a.workspace_id, name: "Race delete" })
    const etag = p.headers["etag"] as string
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        app.management(`/v1/projects/${p.json.id}`, { method: "DELETE", headers: { "if-match": etag } }),
      ),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    for (const r of results.filter((x) => x.status !== 200)) expect([404, 412]).toContain(r.status)
    const audits = (await workspaceAuditActions(app, a.workspace_id)).filter(
      (e) => e.action === "project.deleted" && e.subject_id === p.json.id,
    )
    expect(audits).toHaveLength(1)
  })

  it("DELETE is logical: returns {id, deleted: true}; the Project and its Environments disappear", async () => {
    const p = await create({ workspace_id: a.workspace_id, name: "Doomed" })
    const env = await app.management("/v1/environments", {
      body: { project_id: p.json.id, type: "test", name: "Doomed env" },
    })
    const path = `/v1/projects/${p.json.id}`
    expectProblem(
      await app.management(path, { method: "DELETE", headers: { "if-match": `"${p.json.id}.7"` } }),
      412,
      "precondition_failed",
    )
    const res = await app.management(path, { method: "DELETE" })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ id: p.json.id, deleted: true })
    expectProblem(await app.management(path), 404, "not_found")
    expectProblem(await app.management(path, { method: "PATCH", body: { name: "Zombie" } }), 404, "not_found")
    expectProblem(await app.management(path, { method: "DELETE" }), 404, "not_found")
    const list = await app.management(`/v1/projects?workspace_id=${a.workspace_id}&limit=100`)
    expect(list.json.data.map((x: { id: string }) => x.id)).not.toContain(p.json.id)
    expect(
      await query(app, "select deleted_at is not null as deleted from projects where id = $1", [p.json.id]),
    ).toEqual([{ deleted: true }])
    expect(env.status).toBe(201)
    expect(await query(app, "select status from environments where id = $1", [env.json.id])).toEqual([
      { status: "deleted" },
    ])
    expect((await app.issuer(env.json.id, "/.well-known/openid-configuration")).status).toBe(404)
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "environment.deleted",
      subject_id: env.json.id,
    })
    const actions = await workspaceAuditActions(app, a.workspace_id)
    expect(actions).toContainEqual({ action: "project.deleted", subject_id: p.json.id })
    // The slug of a deleted Project is free again.
    expect((await create({ workspace_id: a.workspace_id, name: "Doomed" })).json.slug).toBe("doomed")
  })
})

describe("tenant isolation and pinned keys", () => {
  it("a key of Workspace A can never read or change a Project of Workspace B", async () => {
    const path = `/v1/projects/${b.project_id}`
    expectProblem(await app.management(path), 404, "not_found")
    expectProblem(await app.management(path, { method: "PATCH", body: { name: "Hijacked" } }), 404, "not_found")
    expectProblem(await app.management(path, { method: "DELETE" }), 404, "not_found")
    const own = await app.management(path, { key: b.api_key })
    expect(own.status).toBe(200)
    expect(own.json.name).not.toBe("Hijacked")
  })

  it("an Environment-pinned key sees only its Environment's Project and cannot change Projects", async () => {
    const other = await create({ workspace_id: a.workspace_id, name: "Not pinned" })
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["projects:read", "projects:write"],
    })
    const list = await app.management(`/v1/projects?workspace_id=${a.workspace_id}`, { key: pinned.secret })
    expect(list.json.data.map((p: { id: string }) => p.id)).toEqual([a.project_id])
    expect((await app.management(`/v1/projects/${a.project_id}`, { key: pinned.secret })).status).toBe(200)
    expectProblem(await app.management(`/v1/projects/${other.json.id}`, { key: pinned.secret }), 404, "not_found")
    expectProblem(
      await app.management(`/v1/projects/${other.json.id}`, { method: "DELETE", key: pinned.secret }),
      404,
      "not_found",
    )
    expectProblem(
      await create({ workspace_id: a.workspace_id, name: "Pinned" }, { key: pinned.secret }),
      403,
      "forbidden",
    )
    expectProblem(
      await app.management(`/v1/projects/${a.project_id}`, {
        method: "PATCH",
        body: { name: "P" },
        key: pinned.secret,
      }),
      403,
      "forbidden",
    )
    expectProblem(
      await app.management(`/v1/projects/${a.project_id}`, { method: "DELETE", key: pinned.secret }),
      403,
      "forbidden",
    )
  })

  it("a Dashboard session's workspace_id must match X-Workspace-Id", async () => {
    const user = await dashboardUser(app, { workspaceId: a.workspace_id, role: "owner" })
    const headers = { authorization: `Bearer ${user.token}`, "x-workspace-id": a.workspace_id }
    const bad = await app.request(app.config.managementHost, "/v1/projects", {
      body: { workspace_id: b.workspace_id, name: "X" },
      headers,
    })
    expectProblem(bad, 400, "invalid_request")
    expect(bad.json.detail).toContain("X-Workspace-Id")
    const ok = await app.request(app.config.managementHost, "/v1/projects", {
      body: { workspace_id: a.workspace_id, name: "By owner" },
      headers,
    })
    expect(ok.status).toBe(201)
    const listed = await app.request(
      app.config.managementHost,
      `/v1/projects?workspace_id=${a.workspace_id}&limit=100`,
      { headers },
    )
    expect(listed.json.data.map((p: { id: string }) => p.id)).toContain(ok.json.id)
  })
})
