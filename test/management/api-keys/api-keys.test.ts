import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SCOPES } from "../../../src/tenancy/scopes.js"
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

const create = (body: Record<string, unknown>, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  app.management("/v1/api-keys", { body: { workspace_id: a.workspace_id, ...body }, ...opts })
const keyCount = async () => (await query<{ n: number }>(app, "select count(*)::int as n from api_keys"))[0]!.n
const inFuture = (ms: number) => new Date(app.now() + ms).toISOString()

describe("POST /v1/api-keys", () => {
  it("returns the sk_live_ secret once; stores only its SHA-256; the key works with exactly its scopes", async () => {
    const res = await create({ name: "CI", scopes: ["workspaces:read", "projects:read"] })
    expect(res.status).toBe(201)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.json).toEqual({
      id: expect.stringMatching(/^mky_[a-z2-7]{32}$/),
      workspace_id: a.workspace_id,
      environment_id: null,
      name: "CI",
      scopes: ["workspaces:read", "projects:read"],
      expires_at: null,
      status: "active",
      revoked_at: null,
      created_at: expect.any(String),
      secret: expect.stringMatching(/^sk_live_[A-Za-z0-9_-]{43}$/),
    })
    const secret = res.json.secret as string
    const stored = await query<Record<string, unknown>>(app, "select * from api_keys where id = $1", [res.json.id])
    expect(stored[0]!["secret_hash"]).toBe(createHash("sha256").update(secret).digest("hex"))
    expect(JSON.stringify(stored)).not.toContain(secret)
    expect((await app.management("/v1/workspaces", { key: secret })).status).toBe(200)
    expectProblem(
      await app.management(`/v1/environments/${a.environment_id}`, { key: secret }),
      403,
      "insufficient_scope",
    )
    const audit = await query<{ action: string; details: Record<string, unknown> }>(
      app,
      "select action, details from audit_events where subject_id = $1",
      [res.json.id],
    )
    expect(audit.map((e) => e.action)).toEqual(["api_key.created"])
    expect(JSON.stringify(audit)).not.toContain(secret)
  })

  it("accepts every scope of the spec's list", async () => {
    const res = await create({ name: "All", scopes: [...SCOPES] })
    expect(res.status).toBe(201)
    expect(res.json.scopes).toEqual([...SCOPES])
  })

  it("refuses bad input with the exact code and creates nothing", async () => {
    const before = await keyCount()
    // Wrong shape (missing or unknown field, wrong type, a scope outside the spec's list): invalid_request_body.
    expectProblem(await create({ name: "X" }), 400, "invalid_request_body")
    expectProblem(await create({ name: "X", scopes: ["everything"] }), 400, "invalid_request_body")
    expectProblem(await create({ name: "X", scopes: "projects:read" }), 400, "invalid_request_body")
    expectProblem(await create({ scopes: ["projects:read"] }), 400, "invalid_request_body")
    expectProblem(await create({ name: 5, scopes: ["projects:read"] }), 400, "invalid_request_body")
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], expires_at: 1893456000 }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], secret: "sk_live_mine" }),
      400,
      "invalid_request_body",
    )
    // Well-typed values that break a rule: invalid_request.
    expectProblem(await create({ name: "X", scopes: [] }), 400, "invalid_request")
    expectProblem(await create({ name: "", scopes: ["projects:read"] }), 400, "invalid_request")
    expectProblem(await create({ name: "X", scopes: ["projects:read", "projects:read"] }), 400, "invalid_request")
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], expires_at: "tomorrow" }),
      400,
      "invalid_request",
    )
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], expires_at: "2030-01-01" }),
      400,
      "invalid_request",
    )
    const past = await create({
      name: "X",
      scopes: ["projects:read"],
      expires_at: new Date(app.now() - 1000).toISOString(),
    })
    expectProblem(past, 400, "invalid_request")
    expect(past.json.detail).toContain("future")
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], expires_at: new Date(app.now()).toISOString() }),
      400,
      "invalid_request",
    )
    const foreign = await create({ name: "X", scopes: ["projects:read"], environment_id: b.environment_id })
    expectProblem(foreign, 400, "invalid_request")
    expect(foreign.json.detail).toContain("Environment of this Workspace")
    expectProblem(
      await create({ name: "X", scopes: ["projects:read"], environment_id: "env_nope" }),
      400,
      "invalid_request",
    )
    const mismatch = await app.management("/v1/api-keys", {
      body: { workspace_id: b.workspace_id, name: "X", scopes: ["projects:read"] },
    })
    expectProblem(mismatch, 400, "invalid_request")
    expect(mismatch.json.detail).toContain("X-Workspace-Id")
    expect(await keyCount()).toBe(before)
  })

  it("a key pinned to an Environment reaches only it", async () => {
    const res = await create({ name: "Pinned", scopes: ["environments:read"], environment_id: a.environment_id })
    expect(res.status).toBe(201)
    expect(res.json.environment_id).toBe(a.environment_id)
    expect((await app.management(`/v1/environments/${a.environment_id}`, { key: res.json.secret })).status).toBe(200)
    const sibling = await app.management("/v1/environments", {
      body: { project_id: a.project_id, type: "test", name: "Sibling" },
    })
    expectProblem(
      await app.management(`/v1/environments/${sibling.json.id}`, { key: res.json.secret }),
      404,
      "not_found",
    )
  })

  it("a key with an expiry authenticates until then, then 401 unauthorized (TestClock)", async () => {
    const res = await create({ name: "Short", scopes: ["workspaces:read"], expires_at: inFuture(60_000) })
    expect(res.status).toBe(201)
    expect(res.json.expires_at).toBe(new Date(Date.parse(res.json.expires_at)).toISOString())
    expect((await app.management("/v1/workspaces", { key: res.json.secret })).status).toBe(200)
    await app.advance("61 seconds")
    expectProblem(await app.management("/v1/workspaces", { key: res.json.secret }), 401, "unauthorized")
    const list = await app.management(`/v1/api-keys?workspace_id=${a.workspace_id}&limit=100`)
    expect(list.json.data.find((k: { id: string }) => k.id === res.json.id).status).toBe("expired")
  })

  it("Idempotency-Key: concurrent first requests create one key and both get the same answer", async () => {
    const headers = { "idempotency-key": "key-create-1" }
    const body = { name: "Idem key", scopes: ["projects:read"] }
    const [r1, r2] = await Promise.all([create(body, { headers }), create(body, { headers })])
    expect([r1.status, r2.status]).toEqual([201, 201])
    expect(r2.json).toEqual(r1.json)
    expect(await query(app, "select count(*)::int as n from api_keys where name = 'Idem key'")).toEqual([{ n: 1 }])
    expectProblem(await create({ ...body, scopes: ["projects:write"] }, { headers }), 409, "idempotency_key_conflict")
    // The stored answer is sealed: the secret is not in the database in clear.
    const stored = await query(app, "select * from idempotency_keys where key = 'key-create-1'")
    expect(JSON.stringify(stored)).not.toContain(r1.json.secret)
  })
})

describe("a key never creates a key wider than itself", () => {
  it("scopes must be held by the creating key (403 insufficient_scope)", async () => {
    const creator = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write", "projects:read"] })
    const wider = await create({ name: "Wider", scopes: ["projects:read", "projects:write"] }, { key: creator.secret })
    expectProblem(wider, 403, "insufficient_scope")
    expect(wider.json.detail).toContain("projects:write")
    expect((await create({ name: "Narrower", scopes: ["projects:read"] }, { key: creator.secret })).status).toBe(201)
  })

  it("a pinned key creates only keys pinned to its own Environment", async () => {
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["api_keys:write", "api_keys:read", "users:read"],
    })
    expectProblem(await create({ name: "Unpinned", scopes: ["users:read"] }, { key: pinned.secret }), 403, "forbidden")
    expectProblem(
      await create({ name: "Null", scopes: ["users:read"], environment_id: null }, { key: pinned.secret }),
      403,
      "forbidden",
    )
    const sibling = await app.management("/v1/environments", {
      body: { project_id: a.project_id, type: "test", name: "Other env" },
    })
    expectProblem(
      await create({ name: "Other", scopes: ["users:read"], environment_id: sibling.json.id }, { key: pinned.secret }),
      403,
      "forbidden",
    )
    expectProblem(
      await create(
        { name: "Foreign", scopes: ["users:read"], environment_id: b.environment_id },
        { key: pinned.secret },
      ),
      403,
      "forbidden",
    )
    const ok = await create(
      { name: "Same env", scopes: ["users:read"], environment_id: a.environment_id },
      { key: pinned.secret },
    )
    expect(ok.status).toBe(201)
    expect(ok.json.environment_id).toBe(a.environment_id)
  })

  it("an expiring key creates only keys that expire no later than itself", async () => {
    const expiresAt = new Date(app.now() + 3600_000)
    const creator = await apiKey(app, {
      workspaceId: a.workspace_id,
      scopes: ["api_keys:write", "projects:read"],
      expiresAt,
    })
    expectProblem(
      await create({ name: "Forever", scopes: ["projects:read"] }, { key: creator.secret }),
      403,
      "forbidden",
    )
    expectProblem(
      await create(
        { name: "Later", scopes: ["projects:read"], expires_at: new Date(expiresAt.getTime() + 1000).toISOString() },
        { key: creator.secret },
      ),
      403,
      "forbidden",
    )
    expect(
      (
        await create(
          { name: "Same", scopes: ["projects:read"], expires_at: expiresAt.toISOString() },
          { key: creator.secret },
        )
      ).status,
    ).toBe(201)
  })

  it("a Dashboard Owner may create any key; a Member may not create keys", async () => {
    const owner = await dashboardUser(app, { workspaceId: a.workspace_id, role: "owner" })
    const res = await app.request(app.config.managementHost, "/v1/api-keys", {
      body: { workspace_id: a.workspace_id, name: "By owner", scopes: [...SCOPES] },
      headers: { authorization: `Bearer ${owner.token}`, "x-workspace-id": a.workspace_id },
    })
    expect(res.status).toBe(201)
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "api_key.created",
      subject_id: res.json.id,
    })
    const member = await dashboardUser(app, { workspaceId: a.workspace_id, role: "member" })
    const refused = await app.request(app.config.managementHost, "/v1/api-keys", {
      body: { workspace_id: a.workspace_id, name: "By member", scopes: ["projects:read"] },
      headers: { authorization: `Bearer ${member.token}`, "x-workspace-id": a.workspace_id },
    })
    expectProblem(refused, 403, "insufficient_scope")
    // A Member may read the key list (api_keys:read) but never sees a secret.
    const list = await app.request(app.config.managementHost, `/v1/api-keys?workspace_id=${a.workspace_id}`, {
      headers: { authorization: `Bearer ${member.token}`, "x-workspace-id": a.workspace_id },
    })
    expect(list.status).toBe(200)
    expect(list.text).not.toContain("sk_live_")
  })
})

describe("GET /v1/api-keys", () => {
  it("requires workspace_id matching the caller, pages by keyset, and never returns secrets", async () => {
    expectProblem(await app.management("/v1/api-keys"), 400, "invalid_request")
    const mismatch = await app.management(`/v1/api-keys?workspace_id=${b.workspace_id}`)
    expectProblem(mismatch, 400, "invalid_request")
    expect(mismatch.json.detail).toContain("X-Workspace-Id")
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const res = await app.management(
        `/v1/api-keys?workspace_id=${a.workspace_id}&limit=3${cursor ? `&cursor=${cursor}` : ""}`,
      )
      expect(res.status).toBe(200)
      expect(res.text).not.toContain("sk_live_")
      for (const k of res.json.data) {
        expect(k.workspace_id).toBe(a.workspace_id)
        expect(Object.keys(k).filter((f) => /secret|hash/.test(f))).toEqual([])
      }
      seen.push(...res.json.data.map((k: { id: string }) => k.id))
      cursor = res.json.next_cursor
    } while (cursor)
    const stored = await query<{ id: string }>(app, "select id from api_keys where workspace_id = $1 order by id", [
      a.workspace_id,
    ])
    expect(seen).toEqual(stored.map((k) => k.id))
  })

  it("filters by environment_id; another Workspace's Environment is 404", async () => {
    const pinned = await create({ name: "For filter", scopes: ["users:read"], environment_id: a.environment_id })
    const res = await app.management(
      `/v1/api-keys?workspace_id=${a.workspace_id}&environment_id=${a.environment_id}&limit=100`,
    )
    expect(res.status).toBe(200)
    expect(res.json.data.map((k: { id: string }) => k.id)).toContain(pinned.json.id)
    expect(res.json.data.every((k: { environment_id: string }) => k.environment_id === a.environment_id)).toBe(true)
    expectProblem(
      await app.management(`/v1/api-keys?workspace_id=${a.workspace_id}&environment_id=${b.environment_id}`),
      404,
      "not_found",
    )
  })

  it("api_keys:write does not imply api_keys:read", async () => {
    const writer = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:write"] })
    expectProblem(
      await app.management(`/v1/api-keys?workspace_id=${a.workspace_id}`, { key: writer.secret }),
      403,
      "insufficient_scope",
    )
  })

  it("a pinned key lists only keys pinned to its Environment", async () => {
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["api_keys:read"],
    })
    const res = await app.management(`/v1/api-keys?workspace_id=${a.workspace_id}&limit=100`, { key: pinned.secret })
    expect(res.json.data.length).toBeGreaterThan(0)
    expect(res.json.data.every((k: { environment_id: string }) => k.environment_id === a.environment_id)).toBe(true)
  })

  it("B's keys never appear in A's list", async () => {
    const bKeys = await query<{ id: string }>(app, "select id from api_keys where workspace_id = $1", [b.workspace_id])
    const res = await app.management(`/v1/api-keys?workspace_id=${a.workspace_id}&limit=100`)
    const ids = new Set(res.json.data.map((k: { id: string }) => k.id))
    for (const k of bKeys) expect(ids.has(k.id)).toBe(false)
  })
})

describe("POST /v1/api-keys/{apiKeyId}/revoke", () => {
  it("revokes: the key is 401 unauthorized from then on; revoking again changes nothing; audited once", async () => {
    const key = await create({ name: "To revoke", scopes: ["workspaces:read"] })
    expect((await app.management("/v1/workspaces", { key: key.json.secret })).status).toBe(200)
    const res = await app.management(`/v1/api-keys/${key.json.id}/revoke`, { method: "POST" })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ id: key.json.id, status: "revoked", revoked_at: expect.any(String) })
    expect(res.json.secret).toBeUndefined()
    expectProblem(await app.management("/v1/workspaces", { key: key.json.secret }), 401, "unauthorized")
    const again = await app.management(`/v1/api-keys/${key.json.id}/revoke`, { method: "POST" })
    expect(again.status).toBe(200)
    expect(again.json.revoked_at).toBe(res.json.revoked_at)
    const audits = (await workspaceAuditActions(app, a.workspace_id)).filter(
      (e) => e.subject_id === key.json.id && e.action === "api_key.revoked",
    )
    expect(audits).toHaveLength(1)
  })

  it("concurrent revokes of one key: one revocation, one audit record", async () => {
    const key = await create({ name: "Race revoke", scopes: ["workspaces:read"] })
    const results = await Promise.all(
      [1, 2, 3].map(() => app.management(`/v1/api-keys/${key.json.id}/revoke`, { method: "POST" })),
    )
    expect(results.map((r) => r.status)).toEqual([200, 200, 200])
    expect(new Set(results.map((r) => r.json.revoked_at)).size).toBe(1)
    const audits = (await workspaceAuditActions(app, a.workspace_id)).filter(
      (e) => e.subject_id === key.json.id && e.action === "api_key.revoked",
    )
    expect(audits).toHaveLength(1)
  })

  it("a key of another Workspace, an unknown key, or (for a pinned key) a key outside its Environment is 404", async () => {
    const bKey = await apiKey(app, { workspaceId: b.workspace_id, scopes: ["workspaces:read"] })
    const bId = (
      await query<{ id: string }>(app, "select id from api_keys where secret_hash = $1", [
        createHash("sha256").update(bKey.secret).digest("hex"),
      ])
    )[0]!.id
    expectProblem(await app.management(`/v1/api-keys/${bId}/revoke`, { method: "POST" }), 404, "not_found")
    expect((await app.management("/v1/workspaces", { key: bKey.secret })).status).toBe(200)
    expectProblem(await app.management("/v1/api-keys/mky_unknown/revoke", { method: "POST" }), 404, "not_found")
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["api_keys:write"],
    })
    const workspaceKey = await create({ name: "Workspace-wide", scopes: ["workspaces:read"] })
    expectProblem(
      await app.management(`/v1/api-keys/${workspaceKey.json.id}/revoke`, { method: "POST", key: pinned.secret }),
      404,
      "not_found",
    )
    expect((await app.management("/v1/workspaces", { key: workspaceKey.json.secret })).status).toBe(200)
  })

  it("the same Idempotency-Key on two different keys is a conflict, never a replay", async () => {
    const k1 = await create({ name: "Idem revoke 1", scopes: ["workspaces:read"] })
    const k2 = await create({ name: "Idem revoke 2", scopes: ["workspaces:read"] })
    const headers = { "idempotency-key": "revoke-1" }
    expect((await app.management(`/v1/api-keys/${k1.json.id}/revoke`, { method: "POST", headers })).status).toBe(200)
    const replay = await app.management(`/v1/api-keys/${k1.json.id}/revoke`, { method: "POST", headers })
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expectProblem(
      await app.management(`/v1/api-keys/${k2.json.id}/revoke`, { method: "POST", headers }),
      409,
      "idempotency_key_conflict",
    )
    expect((await app.management("/v1/workspaces", { key: k2.json.secret })).status).toBe(200)
  })

  it("needs api_keys:write", async () => {
    const reader = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["api_keys:read"] })
    const key = await create({ name: "Protected", scopes: ["workspaces:read"] })
    expectProblem(
      await app.management(`/v1/api-keys/${key.json.id}/revoke`, { method: "POST", key: reader.secret }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await create({ name: "By reader", scopes: ["workspaces:read"] }, { key: reader.secret }),
      403,
      "insufficient_scope",
    )
  })
})
