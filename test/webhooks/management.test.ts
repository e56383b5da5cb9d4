import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Tenancy } from "../../src/tenancy/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { countRows, createWebhook, sqlRows } from "./support.js"

// Spec: Management API, Webhooks table; Events, Subscription; Management common rules.
// This app runs WITHOUT WEBHOOK_ALLOW_PRIVATE_TARGETS: the production URL rules apply.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const apiKey = (scopes: ReadonlyArray<string>, environmentId: string | null = null, workspaceId = b.workspace_id) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.withTransaction(
        tenancy.createApiKey({ workspaceId, environmentId, name: "test", scopes, expiresAt: null }),
      )).secret
    }),
  )

const secondEnvironment = () =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.withTransaction(
        tenancy.createEnvironment({
          workspaceId: b.workspace_id,
          projectId: b.project_id,
          type: "test",
          name: "second",
        }),
      )).id
    }),
  )

const webhookCount = () => countRows(app, "select 1 from webhooks where workspace_id = $1", [b.workspace_id])

const valid = () => ({
  environment_id: b.environment_id,
  url: "https://hooks.example.com/in?token=t0ps3cret",
  event_types: ["user.created", "login.failed"],
})

describe("POST /v1/webhooks", () => {
  it("creates an active webhook, returns the secret once (32 bytes, unpadded base64url), seals it at rest, audits without secrets", async () => {
    const res = await app.management("/v1/webhooks", { method: "POST", body: valid() })
    expect(res.status).toBe(201)
    const w = res.json
    expect(w).toMatchObject({
      environment_id: b.environment_id,
      url: valid().url,
      event_types: ["user.created", "login.failed"],
      status: "active",
    })
    expect(w.id).toMatch(/^whk_[a-z2-7]{32}$/)
    expect(w.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(w.secret, "base64url")).toHaveLength(32)
    expect(res.headers["etag"]).toBe(`"${w.id}.1"`)
    expect(res.headers["location"]).toBe(`/v1/webhooks/${w.id}`)

    const [row] = await sqlRows<{ secret_sealed: string }>(app, "select secret_sealed from webhooks where id = $1", [
      w.id,
    ])
    expect(row!.secret_sealed.startsWith("v1.")).toBe(true)
    expect(row!.secret_sealed).not.toContain(w.secret)

    const get = await app.management(`/v1/webhooks/${w.id}`)
    expect(get.status).toBe(200)
    expect(get.json).not.toHaveProperty("secret")
    expect(get.headers["etag"]).toBe(`"${w.id}.1"`)
    const list = await app.management(`/v1/webhooks?environment_id=${b.environment_id}`)
    expect(list.text).not.toContain(w.secret)

    const audits = await sqlRows<{ action: string; details: unknown; actor_type: string }>(
      app,
      "select action, details, actor_type from audit_events where subject_id = $1",
      [w.id],
    )
    expect(audits).toHaveLength(1)
    expect(audits[0]).toMatchObject({ action: "webhook.created", actor_type: "api_key" })
    expect(JSON.stringify(audits[0]!.details)).not.toContain(w.secret)
    expect(JSON.stringify(audits[0]!.details)).not.toContain("t0ps3cret") // the query string may hold a token
  })

  const refusals: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
    ["http URL", { url: "http://hooks.example.com/" }, "invalid_request"],
    ["localhost", { url: "https://localhost/hook" }, "invalid_request"],
    ["*.localhost", { url: "https://x.localhost/hook" }, "invalid_request"],
    ["loopback literal", { url: "https://127.0.0.1/hook" }, "invalid_request"],
    ["hex loopback 0x7f.1", { url: "https://0x7f.1/hook" }, "invalid_request"],
    ["decimal loopback", { url: "https://2130706433/hook" }, "invalid_request"],
    ["metadata address", { url: "https://169.254.169.254/latest" }, "invalid_request"],
    ["IPv6 loopback", { url: "https://[::1]/hook" }, "invalid_request"],
    ["IPv4-mapped private", { url: "https://[::ffff:10.0.0.1]/hook" }, "invalid_request"],
    ["userinfo", { url: "https://user:pw@hooks.example.com/" }, "invalid_request"],
    ["fragment", { url: "https://hooks.example.com/#x" }, "invalid_request"],
    ["not a URL", { url: "hooks.example.com" }, "invalid_request"],
    ["empty event_types", { event_types: [] }, "invalid_request"],
    ["unknown event type", { event_types: ["user.exploded"] }, "invalid_request"],
    ["duplicate event type", { event_types: ["user.created", "user.created"] }, "invalid_request"],
    ["webhook.test is not subscribable", { event_types: ["webhook.test"] }, "invalid_request"],
    ["event_types not an array", { event_types: "user.created" }, "invalid_request_body"],
    ["event type not a string", { event_types: [1] }, "invalid_request_body"],
    ["url missing", { url: undefined }, "invalid_request_body"],
    ["unknown field", { secret: "mine" }, "invalid_request_body"],
    ["workspace_id mismatch", { workspace_id: "wsp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }, "invalid_request"],
  ]
  it.each(refusals)("refuses %s: 400 and nothing created", async (_name, patch, code) => {
    const before = await webhookCount()
    const res = await app.management("/v1/webhooks", { method: "POST", body: { ...valid(), ...patch } })
    expect(res.status).toBe(400)
    expect(res.headers["content-type"]).toContain("application/problem+json")
    expect(res.json.code).toBe(code)
    expect(await webhookCount()).toBe(before)
  })

  it("refuses bad JSON with invalid_request_body", async () => {
    const res = await app.management("/v1/webhooks", {
      method: "POST",
      body: "{nope",
      headers: { "content-type": "application/json" },
    })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe("invalid_request_body")
  })

  it("does not resolve DNS at registration (an unresolvable name is accepted)", async () => {
    const w = await createWebhook(app, { ...valid(), url: "https://does-not-resolve.invalid/hook" })
    expect(w.url).toBe("https://does-not-resolve.invalid/hook")
  })

  it("an unknown or foreign Environment is 404", async () => {
    const other = await app.bootstrap()
    for (const environment_id of ["env_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", other.environment_id]) {
      const before = await webhookCount()
      const res = await app.management("/v1/webhooks", { method: "POST", body: { ...valid(), environment_id } })
      expect(res.status).toBe(404)
      expect(res.json.code).toBe("not_found")
      expect(await webhookCount()).toBe(before)
    }
  })

  it("Idempotency-Key replays the first answer (same id and secret) and refuses a different body", async () => {
    const before = await webhookCount()
    const headers = { "idempotency-key": "create-hook-1" }
    const first = await app.management("/v1/webhooks", { method: "POST", body: valid(), headers })
    const again = await app.management("/v1/webhooks", { method: "POST", body: valid(), headers })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.json).toEqual(first.json)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(await webhookCount()).toBe(before + 1)
    const conflict = await app.management("/v1/webhooks", {
      method: "POST",
      body: { ...valid(), event_types: ["user.deleted"] },
      headers,
    })
    expect(conflict.status).toBe(409)
    expect(conflict.json.code).toBe("idempotency_key_conflict")
    expect(await webhookCount()).toBe(before + 1)
  })
})

describe("scopes (Authentication rule 4: :write does not imply :read)", () => {
  it("each route needs its own scope", async () => {
    const w = await createWebhook(app, valid())
    const read = await apiKey(["webhooks:read"])
    const write = await apiKey(["webhooks:write"])
    const checks: ReadonlyArray<readonly [string, string, string, unknown?]> = [
      [read, "POST", "/v1/webhooks", valid()],
      [read, "PATCH", `/v1/webhooks/${w.id}`, { status: "disabled" }],
      [read, "DELETE", `/v1/webhooks/${w.id}`],
      [write, "GET", `/v1/webhooks?environment_id=${b.environment_id}`],
      [write, "GET", `/v1/webhooks/${w.id}`],
      [write, "GET", `/v1/webhooks/${w.id}/deliveries`],
      [write, "POST", `/v1/webhooks/${w.id}/rotate-secret`],
      [write, "POST", `/v1/webhooks/${w.id}/test`, {}],
    ]
    for (const [key, method, path, body] of checks) {
      const res = await app.management(path, { method, key, ...(body === undefined ? {} : { body }) })
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(res.json.code).toBe("insufficient_scope")
    }
    const unchanged = await app.management(`/v1/webhooks/${w.id}`)
    expect(unchanged.json.status).toBe("active")
    const none = await app.management(`/v1/webhooks/${w.id}`, { key: "" })
    expect(none.status).toBe(401)
  })
})

describe("GET /v1/webhooks", () => {
  it("lists an Environment's webhooks by pages of `limit` with next_cursor; environment_id is required", async () => {
    const env = await secondEnvironment()
    const ids = [] as Array<string>
    for (let i = 0; i < 5; i++) ids.push((await createWebhook(app, { ...valid(), environment_id: env })).id)
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const res = await app.management(`/v1/webhooks?environment_id=${env}&limit=2${cursor ? `&cursor=${cursor}` : ""}`)
      expect(res.status).toBe(200)
      expect(res.json.data.length).toBeLessThanOrEqual(2)
      for (const item of res.json.data) {
        expect(item).not.toHaveProperty("secret")
        expect(item.environment_id).toBe(env)
      }
      seen.push(...res.json.data.map((d: { id: string }) => d.id))
      cursor = res.json.next_cursor
    } while (cursor)
    expect(seen).toEqual([...ids].sort())
    expect((await app.management("/v1/webhooks")).json.code).toBe("invalid_request")
    expect((await app.management(`/v1/webhooks?environment_id=${env}&limit=0`)).status).toBe(400)
    expect((await app.management(`/v1/webhooks?environment_id=${env}&limit=101`)).status).toBe(400)
    expect((await app.management(`/v1/webhooks?environment_id=${env}&cursor=%%%`)).status).toBe(400)
  })
})

describe("PATCH /v1/webhooks/{id}", () => {
  it("changes url, event_types and status; each change bumps the ETag; audited", async () => {
    const w = await createWebhook(app, valid())
    const res = await app.management(`/v1/webhooks/${w.id}`, {
      method: "PATCH",
      body: { url: "https://other.example.com/hook", event_types: ["user.deleted"], status: "disabled" },
      headers: { "if-match": `"${w.id}.1"` },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      id: w.id,
      url: "https://other.example.com/hook",
      event_types: ["user.deleted"],
      status: "disabled",
    })
    expect(res.headers["etag"]).toBe(`"${w.id}.2"`)
    const back = await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "active" } })
    expect(back.json.status).toBe("active")
    expect(back.headers["etag"]).toBe(`"${w.id}.3"`)
    const audits = await sqlRows<{ action: string }>(
      app,
      "select action from audit_events where subject_id = $1 order by created_at, id",
      [w.id],
    )
    expect(audits.map((a) => a.action).filter((a) => a === "webhook.updated")).toHaveLength(2)
  })

  it("an empty PATCH changes nothing (same version)", async () => {
    const w = await createWebhook(app, valid())
    const res = await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: {} })
    expect(res.status).toBe(200)
    expect(res.headers["etag"]).toBe(`"${w.id}.1"`)
  })

  it("If-Match mismatch: 412 and no change", async () => {
    const w = await createWebhook(app, valid())
    const res = await app.management(`/v1/webhooks/${w.id}`, {
      method: "PATCH",
      body: { status: "disabled" },
      headers: { "if-match": `"${w.id}.7"` },
    })
    expect(res.status).toBe(412)
    expect(res.json.code).toBe("precondition_failed")
    expect((await app.management(`/v1/webhooks/${w.id}`)).json.status).toBe("active")
  })

  it("two concurrent PATCHes with the same If-Match: exactly one wins, the other gets 412", async () => {
    const w = await createWebhook(app, valid())
    const results = await Promise.all(
      ["disabled", "active", "disabled"].map((status, i) =>
        app.management(`/v1/webhooks/${w.id}`, {
          method: "PATCH",
          body: { status, url: `https://race${i}.example.com/` },
          headers: { "if-match": `"${w.id}.1"` },
        }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
    const final = await app.management(`/v1/webhooks/${w.id}`)
    expect(final.headers["etag"]).toBe(`"${w.id}.2"`)
  })

  it.each([
    [{ url: "http://hooks.example.com/" }, "invalid_request"],
    [{ event_types: [] }, "invalid_request"],
    [{ event_types: ["webhook.test"] }, "invalid_request"],
    [{ event_types: ["user.created", "user.created"] }, "invalid_request"],
    [{ status: "paused" }, "invalid_request_body"],
    [{ secret: "x" }, "invalid_request_body"],
  ] as const)("refuses %j with 400 %s and changes nothing", async (body, code) => {
    const w = await createWebhook(app, valid())
    const res = await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe(code)
    const after = await app.management(`/v1/webhooks/${w.id}`)
    expect(after.json).toMatchObject({ url: valid().url, event_types: valid().event_types, status: "active" })
    expect(after.headers["etag"]).toBe(`"${w.id}.1"`)
  })

  it("an unknown webhook is 404", async () => {
    const res = await app.management("/v1/webhooks/whk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", {
      method: "PATCH",
      body: { status: "disabled" },
    })
    expect(res.status).toBe(404)
    expect(res.json.code).toBe("not_found")
  })
})

describe("DELETE /v1/webhooks/{id}", () => {
  it("removes it: not listed, not readable, not patchable; the secret is erased; audited", async () => {
    const w = await createWebhook(app, valid())
    const mismatch = await app.management(`/v1/webhooks/${w.id}`, {
      method: "DELETE",
      headers: { "if-match": `"${w.id}.9"` },
    })
    expect(mismatch.status).toBe(412)
    const res = await app.management(`/v1/webhooks/${w.id}`, {
      method: "DELETE",
      headers: { "if-match": `"${w.id}.1"` },
    })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ id: w.id, deleted: true })
    expect((await app.management(`/v1/webhooks/${w.id}`)).status).toBe(404)
    expect((await app.management(`/v1/webhooks/${w.id}`, { method: "PATCH", body: { status: "active" } })).status).toBe(
      404,
    )
    expect((await app.management(`/v1/webhooks/${w.id}`, { method: "DELETE" })).status).toBe(404)
    const list = await app.management(`/v1/webhooks?environment_id=${b.environment_id}&limit=100`)
    expect(list.json.data.map((d: { id: string }) => d.id)).not.toContain(w.id)
    const [row] = await sqlRows<{ secret_sealed: string | null }>(
      app,
      "select secret_sealed from webhooks where id = $1",
      [w.id],
    )
    expect(row!.secret_sealed).toBeNull()
    const audits = await sqlRows<{ action: string }>(app, "select action from audit_events where subject_id = $1", [
      w.id,
    ])
    expect(audits.map((a) => a.action)).toContain("webhook.deleted")
  })
})

describe("POST /v1/webhooks/{id}/rotate-secret", () => {
  it("returns {id, secret, rotated_at} once; the sealed secret changes; audited", async () => {
    const w = await createWebhook(app, valid())
    const [before] = await sqlRows<{ secret_sealed: string }>(app, "select secret_sealed from webhooks where id = $1", [
      w.id,
    ])
    const res = await app.management(`/v1/webhooks/${w.id}/rotate-secret`, { method: "POST" })
    expect(res.status).toBe(200)
    expect(Object.keys(res.json).sort()).toEqual(["id", "rotated_at", "secret"])
    expect(res.json.id).toBe(w.id)
    expect(res.json.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(res.json.secret).not.toBe(w.secret)
    expect(res.json.rotated_at).toBe(new Date(app.now()).toISOString())
    const [after] = await sqlRows<{ secret_sealed: string }>(app, "select secret_sealed from webhooks where id = $1", [
      w.id,
    ])
    expect(after!.secret_sealed).not.toBe(before!.secret_sealed)
    expect((await app.management(`/v1/webhooks/${w.id}`)).json).not.toHaveProperty("secret")
    const audits = await sqlRows<{ action: string; details: unknown }>(
      app,
      "select action, details from audit_events where subject_id = $1",
      [w.id],
    )
    expect(audits.map((a) => a.action)).toContain("webhook.secret_rotated")
    expect(JSON.stringify(audits)).not.toContain(res.json.secret)
  })

  it("needs webhooks:rotate_secret (webhooks:write is not enough)", async () => {
    const w = await createWebhook(app, valid())
    const rotateOnly = await apiKey(["webhooks:rotate_secret"])
    expect(
      (await app.management(`/v1/webhooks/${w.id}/rotate-secret`, { method: "POST", key: rotateOnly })).status,
    ).toBe(200)
  })
})

describe("tenant isolation", () => {
  it("another Workspace's key and a key pinned to another Environment see 404 on every route", async () => {
    const w = await createWebhook(app, valid())
    const other = await app.bootstrap()
    const pinned = await apiKey(
      ["webhooks:read", "webhooks:write", "webhooks:rotate_secret", "webhooks:test"],
      await secondEnvironment(),
    )
    for (const key of [other.api_key, pinned]) {
      for (const [method, path, body] of [
        ["GET", `/v1/webhooks/${w.id}`],
        ["PATCH", `/v1/webhooks/${w.id}`, { status: "disabled" }],
        ["DELETE", `/v1/webhooks/${w.id}`],
        ["POST", `/v1/webhooks/${w.id}/rotate-secret`],
        ["POST", `/v1/webhooks/${w.id}/test`, {}],
        ["GET", `/v1/webhooks/${w.id}/deliveries`],
        ["GET", `/v1/webhooks?environment_id=${b.environment_id}`],
      ] as const) {
        const res = await app.management(path, { method, key, ...(body ? { body } : {}) })
        expect(res.status, `${method} ${path}`).toBe(404)
        expect(res.json.code).toBe("not_found")
      }
    }
    const after = await app.management(`/v1/webhooks/${w.id}`)
    expect(after.json.status).toBe("active")
    expect(after.headers["etag"]).toBe(`"${w.id}.1"`)
  })
})

describe("POST /v1/webhooks/{id}/test (no private targets here)", () => {
  it("answers 200 with nulls when no response came (unresolvable host), records nothing", async () => {
    const w = await createWebhook(app, { ...valid(), url: "https://no-such-host.invalid/hook" })
    const res = await app.management(`/v1/webhooks/${w.id}/test`, { method: "POST", body: {} })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      delivered: false,
      response_status: null,
      response_time_ms: null,
      requested_at: new Date(app.now()).toISOString(),
    })
    expect(await countRows(app, "select 1 from webhook_deliveries where webhook_id = $1", [w.id])).toBe(0)
  })

  it("refuses an unknown event_type and unknown fields", async () => {
    const w = await createWebhook(app, valid())
    const bad = await app.management(`/v1/webhooks/${w.id}/test`, {
      method: "POST",
      body: { event_type: "user.exploded" },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.code).toBe("invalid_request")
    const extra = await app.management(`/v1/webhooks/${w.id}/test`, { method: "POST", body: { nope: 1 } })
    expect(extra.status).toBe(400)
    expect(extra.json.code).toBe("invalid_request_body")
  })
})

describe("GET /v1/webhooks/{id}/deliveries", () => {
  it("filters by status, occurred_after, occurred_before; pages newest first with limit and cursor; refuses bad filters", async () => {
    const w = await createWebhook(app, valid())
    const t0 = Date.UTC(2025, 5, 1, 12)
    const statuses = ["delivered", "failed", "pending", "exhausted", "failed", "delivered"] as const
    const ids: Array<string> = []
    for (const [i, status] of statuses.entries()) {
      const id = `dlv_${String.fromCharCode(97 + i).repeat(32)}`
      ids.push(id)
      await sqlRows(
        app,
        `insert into webhook_deliveries (id, workspace_id, environment_id, webhook_id, event_id, event_type, attempt,
          status, response_status_code, duration_ms, occurred_at, scheduled_at)
        values ($1, $2, $3, $4, $5, 'user.created', $6, $7, $8, 12, $9, $9)`,
        [
          id,
          b.workspace_id,
          b.environment_id,
          w.id,
          `evt_${"q".repeat(32)}`,
          i + 1,
          status,
          status === "pending" ? null : 500,
          new Date(t0 + i * 60_000),
        ],
      )
    }
    const get = (query: string) => app.management(`/v1/webhooks/${w.id}/deliveries${query}`)

    const all = await get("")
    expect(all.status).toBe(200)
    expect(all.json.data.map((d: { id: string }) => d.id)).toEqual([...ids].reverse())
    expect(all.json.data[0]).toEqual({
      id: ids[5],
      webhook_id: w.id,
      event_id: `evt_${"q".repeat(32)}`,
      event_type: "user.created",
      attempt: 6,
      status: "delivered",
      response_status_code: 500,
      duration_ms: 12,
      occurred_at: new Date(t0 + 5 * 60_000).toISOString(),
    })
    expect(all.json.next_cursor).toBeNull()

    expect((await get("?status=failed")).json.data.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[1]])
    expect((await get("?status=pending")).json.data.map((d: { id: string }) => d.id)).toEqual([ids[2]])
    const after = new Date(t0 + 2 * 60_000).toISOString()
    const before = new Date(t0 + 5 * 60_000).toISOString()
    expect((await get(`?occurred_after=${after}`)).json.data.map((d: { id: string }) => d.id)).toEqual([
      ids[5],
      ids[4],
      ids[3],
    ])
    expect((await get(`?occurred_before=${before}`)).json.data.map((d: { id: string }) => d.id)).toEqual([
      ids[4],
      ids[3],
      ids[2],
      ids[1],
      ids[0],
    ])
    expect(
      (await get(`?occurred_after=${after}&occurred_before=${before}&status=failed`)).json.data.map(
        (d: { id: string }) => d.id,
      ),
    ).toEqual([ids[4]])
    expect(
      (await get(`?occurred_after=${encodeURIComponent("2025-06-01T14:03:00+02:00")}`)).json.data.map(
        (d: { id: string }) => d.id,
      ),
    ).toEqual([ids[5], ids[4]])

    const pages: Array<string> = []
    let cursor: string | null = null
    do {
      const res = await get(`?limit=4${cursor ? `&cursor=${cursor}` : ""}`)
      expect(res.status).toBe(200)
      pages.push(...res.json.data.map((d: { id: string }) => d.id))
      cursor = res.json.next_cursor
    } while (cursor)
    expect(pages).toEqual([...ids].reverse())

    for (const q of [
      "?status=done",
      "?occurred_after=yesterday",
      "?occurred_before=2025-06-01",
      "?limit=0",
      "?cursor=abc",
    ]) {
      const res = await get(q)
      expect(res.status, q).toBe(400)
      expect(res.json.code).toBe("invalid_request")
    }
    expect((await app.management("/v1/webhooks/whk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/deliveries")).status).toBe(404)
  })
})
