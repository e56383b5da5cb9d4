import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { apiKey } from "../support/callers.js"
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

const createEnv = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  app.management("/v1/environments", { body, ...opts })
const newEnv = async (name = "Env", type = "test") => {
  const res = await createEnv({ project_id: a.project_id, type, name })
  expect(res.status).toBe(201)
  return res.json as { id: string; issuer: string; interaction_domain: string; rp_id: string }
}

describe("POST /v1/environments", () => {
  it("creates an Environment with derived issuer, interaction_domain and rp_id, and a working signing key", async () => {
    const res = await createEnv({ project_id: a.project_id, type: "production", name: "Production" })
    expect(res.status).toBe(201)
    const id = res.json.id as string
    expect(id).toMatch(/^env_[a-z2-7]{32}$/)
    const port = app.config.canonicalIssuerHost.split(":")[1]
    expect(res.json).toEqual({
      id,
      workspace_id: a.workspace_id,
      project_id: a.project_id,
      type: "production",
      name: "Production",
      status: "active",
      issuer: `${app.config.publicScheme}://${app.config.canonicalIssuerHost}/e/${id}`,
      interaction_domain: `env-${id.slice(4)}.login.${app.config.platformDomain}${port ? `:${port}` : ""}`,
      rp_id: `env-${id.slice(4)}.login.${app.config.platformDomain}`,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect(res.headers["etag"]).toBe(`"${id}.1"`)
    const jwks = await app.issuer(id, "/oauth2/jwks")
    expect(jwks.status).toBe(200)
    expect(jwks.json.keys).toHaveLength(1)
    const discovery = await app.issuer(id, "/.well-known/openid-configuration")
    expect(discovery.json.issuer).toBe(res.json.issuer)
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "environment.created",
      subject_id: id,
    })
  })

  it("never accepts the derived fields, and validates the rest (400, nothing created)", async () => {
    const before = await query(app, "select count(*)::int as n from environments")
    for (const field of ["issuer", "interaction_domain", "rp_id"]) {
      const res = await createEnv({
        project_id: a.project_id,
        type: "test",
        name: "Derived",
        [field]: "https://x.example",
      })
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toContain(field)
    }
    expectProblem(
      await createEnv({ project_id: a.project_id, type: "staging", name: "X" }),
      400,
      "invalid_request_body",
    )
    expectProblem(await createEnv({ project_id: a.project_id, name: "X" }), 400, "invalid_request_body")
    expectProblem(await createEnv({ project_id: a.project_id, type: "test" }), 400, "invalid_request_body")
    expectProblem(await createEnv({ type: "test", name: "X" }), 400, "invalid_request_body")
    expectProblem(
      await createEnv({ project_id: a.project_id, type: "test", name: "X", status: "suspended" }),
      400,
      "invalid_request_body",
    )
    expect(await query(app, "select count(*)::int as n from environments")).toEqual(before)
  })

  it("an optional workspace_id must match the authenticated Workspace (400 naming X-Workspace-Id)", async () => {
    const bad = await createEnv({ project_id: a.project_id, type: "test", name: "WS", workspace_id: b.workspace_id })
    expectProblem(bad, 400, "invalid_request")
    expect(bad.json.detail).toContain("X-Workspace-Id")
    const list = await app.management(`/v1/environments?project_id=${a.project_id}&workspace_id=${b.workspace_id}`)
    expectProblem(list, 400, "invalid_request")
    expect(
      (await createEnv({ project_id: a.project_id, type: "test", name: "WS ok", workspace_id: a.workspace_id })).status,
    ).toBe(201)
    expect(
      (await app.management(`/v1/environments?project_id=${a.project_id}&workspace_id=${a.workspace_id}`)).status,
    ).toBe(200)
  })

  it("the Project must be a live Project of the caller's Workspace (404 otherwise)", async () => {
    expectProblem(await createEnv({ project_id: b.project_id, type: "test", name: "X" }), 404, "not_found")
    expectProblem(await createEnv({ project_id: "prj_doesnotexist", type: "test", name: "X" }), 404, "not_found")
  })

  it("Idempotency-Key: concurrent first requests create exactly one Environment; replay; conflict", async () => {
    const headers = { "idempotency-key": "env-create-1" }
    const body = { project_id: a.project_id, type: "test", name: "Idem env" }
    const results = await Promise.all([createEnv(body, { headers }), createEnv(body, { headers })])
    expect(results.map((r) => r.status)).toEqual([201, 201])
    expect(results[1]!.json).toEqual(results[0]!.json)
    expect(await query(app, "select count(*)::int as n from environments where name = 'Idem env'")).toEqual([{ n: 1 }])
    expect(
      await query(app, "select count(*)::int as n from signing_keys where environment_id = $1", [results[0]!.json.id]),
    ).toEqual([{ n: 1 }])
    expectProblem(await createEnv({ ...body, type: "production" }, { headers }), 409, "idempotency_key_conflict")
  })
})

describe("GET /v1/environments and GET one", () => {
  it("lists a Project's live Environments by keyset pages, filters by type, refuses bad queries", async () => {
    await newEnv("Listed test")
    await newEnv("Listed prod", "production")
    expectProblem(await app.management("/v1/environments"), 400, "invalid_request")
    expectProblem(
      await app.management(`/v1/environments?project_id=${a.project_id}&type=staging`),
      400,
      "invalid_request",
    )
    expectProblem(await app.management(`/v1/environments?project_id=${a.project_id}&limit=0`), 400, "invalid_request")
    const ids: Array<string> = []
    let cursor: string | null = null
    do {
      const res = await app.management(
        `/v1/environments?project_id=${a.project_id}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      )
      expect(res.status).toBe(200)
      ids.push(...res.json.data.map((e: { id: string }) => e.id))
      cursor = res.json.next_cursor
    } while (cursor)
    const stored = await query<{ id: string }>(
      app,
      "select id from environments where project_id = $1 and status <> 'deleted' order by id",
      [a.project_id],
    )
    expect(ids).toEqual(stored.map((r) => r.id))
    const prod = await app.management(`/v1/environments?project_id=${a.project_id}&type=production&limit=100`)
    expect(prod.json.data.length).toBeGreaterThan(0)
    expect(prod.json.data.every((e: { type: string }) => e.type === "production")).toBe(true)
  })

  it("GET returns the Environment with its ETag", async () => {
    const res = await app.management(`/v1/environments/${a.environment_id}`)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      id: a.environment_id,
      project_id: a.project_id,
      status: "active",
      issuer: a.issuer,
    })
    expect(res.headers["etag"]).toBe(`"${a.environment_id}.1"`)
  })

  it("environments:write does not imply environments:read", async () => {
    const key = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["environments:write"] })
    for (const path of ["", "/settings", "/theme", "/theme/preview-css", "/rp-migration"]) {
      expectProblem(
        await app.management(`/v1/environments/${a.environment_id}${path}`, { key: key.secret }),
        403,
        "insufficient_scope",
      )
    }
    expectProblem(
      await app.management(`/v1/environments?project_id=${a.project_id}`, { key: key.secret }),
      403,
      "insufficient_scope",
    )
    const reader = await apiKey(app, { workspaceId: a.workspace_id, scopes: ["environments:read"] })
    expectProblem(
      await app.management(`/v1/environments/${a.environment_id}`, {
        method: "PATCH",
        body: { name: "R" },
        key: reader.secret,
      }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await createEnv({ project_id: a.project_id, type: "test", name: "R" }, { key: reader.secret }),
      403,
      "insufficient_scope",
    )
  })
})

describe("PATCH /v1/environments/{environmentId}", () => {
  it("renames; suspends (issuer answers 403 environment_suspended at once) and reactivates", async () => {
    const env = await newEnv("Patch me")
    const path = `/v1/environments/${env.id}`
    const renamed = await app.management(path, {
      method: "PATCH",
      body: { name: "Patched" },
      headers: { "if-match": `"${env.id}.1"` },
    })
    expect(renamed.status).toBe(200)
    expect(renamed.json.name).toBe("Patched")
    expect(renamed.headers["etag"]).toBe(`"${env.id}.2"`)
    // warm the issuer cache, then suspend
    expect((await app.issuer(env.id, "/oauth2/userinfo")).status).not.toBe(403)
    const suspended = await app.management(path, { method: "PATCH", body: { status: "suspended" } })
    expect(suspended.json.status).toBe("suspended")
    expectProblem(await app.issuer(env.id, "/oauth2/userinfo"), 403, "environment_suspended")
    expect((await app.management(path, { method: "PATCH", body: { status: "active" } })).json.status).toBe("active")
    expect((await app.issuer(env.id, "/oauth2/userinfo")).status).not.toBe(403)
    const actions = (await workspaceAuditActions(app, a.workspace_id))
      .filter((e) => e.subject_id === env.id)
      .map((e) => e.action)
    // (the TestClock stands still, so records share a timestamp: compare as a set)
    expect([...actions].sort()).toEqual([
      "environment.activated",
      "environment.created",
      "environment.suspended",
      "environment.updated",
    ])
  })

  it("refuses status deleted, derived fields, type, an empty change and a stale If-Match (nothing changes)", async () => {
    const env = await newEnv("Guarded")
    const path = `/v1/environments/${env.id}`
    const before = await app.management(path)
    const deleted = await app.management(path, { method: "PATCH", body: { status: "deleted" } })
    expectProblem(deleted, 400, "invalid_request")
    expect(deleted.json.detail).toContain("DELETE")
    expectProblem(
      await app.management(path, { method: "PATCH", body: { rp_id: "evil.example" } }),
      400,
      "invalid_request",
    )
    expectProblem(
      await app.management(path, { method: "PATCH", body: { issuer: "https://evil.example" } }),
      400,
      "invalid_request",
    )
    expectProblem(
      await app.management(path, { method: "PATCH", body: { type: "production" } }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await app.management(path, { method: "PATCH", body: { status: "paused" } }),
      400,
      "invalid_request_body",
    )
    expectProblem(await app.management(path, { method: "PATCH", body: {} }), 400, "invalid_request")
    expectProblem(
      await app.management(path, {
        method: "PATCH",
        body: { name: "Stale" },
        headers: { "if-match": `"${env.id}.9"` },
      }),
      412,
      "precondition_failed",
    )
    const after = await app.management(path)
    expect(after.json).toEqual(before.json)
    expect(after.headers["etag"]).toBe(before.headers["etag"])
  })

  it("concurrent PATCHes with the same If-Match: exactly one wins", async () => {
    const env = await newEnv("Race")
    const results = await Promise.all(
      ["A", "B", "C"].map((name) =>
        app.management(`/v1/environments/${env.id}`, {
          method: "PATCH",
          body: { name },
          headers: { "if-match": `"${env.id}.1"` },
        }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
  })
})

describe("DELETE /v1/environments/{environmentId}", () => {
  it("sets status deleted; afterwards the Environment is gone everywhere", async () => {
    const env = await newEnv("Delete me")
    const path = `/v1/environments/${env.id}`
    expectProblem(
      await app.management(path, { method: "DELETE", headers: { "if-match": `"${env.id}.5"` } }),
      412,
      "precondition_failed",
    )
    const res = await app.management(path, { method: "DELETE", headers: { "if-match": `"${env.id}.1"` } })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ id: env.id, status: "deleted" })
    expectProblem(await app.management(path), 404, "not_found")
    expectProblem(await app.management(path, { method: "DELETE" }), 404, "not_found")
    expectProblem(await app.management(path, { method: "PATCH", body: { status: "active" } }), 404, "not_found")
    expectProblem(await app.management(`${path}/settings`), 404, "not_found")
    expectProblem(await app.issuer(env.id, "/.well-known/openid-configuration"), 404, "not_found")
    const list = await app.management(`/v1/environments?project_id=${a.project_id}&limit=100`)
    expect(list.json.data.map((e: { id: string }) => e.id)).not.toContain(env.id)
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "environment.deleted",
      subject_id: env.id,
    })
  })

  it("Idempotency-Key on DELETE replays the first answer", async () => {
    const env = await newEnv("Delete idem")
    const headers = { "idempotency-key": `del-${env.id}` }
    const first = await app.management(`/v1/environments/${env.id}`, { method: "DELETE", headers })
    const again = await app.management(`/v1/environments/${env.id}`, { method: "DELETE", headers })
    expect(again.status).toBe(200)
    expect(again.json).toEqual(first.json)
    expect(again.headers["idempotent-replayed"]).toBe("true")
  })
})

describe("settings", () => {
  it("GET and PATCH impersonation_enabled; no If-Match and no Idempotency-Key semantics; audited", async () => {
    const env = await newEnv("Settings")
    const path = `/v1/environments/${env.id}/settings`
    const initial = await app.management(path)
    expect(initial.status).toBe(200)
    expect(initial.json).toEqual({ impersonation_enabled: false, new_user_creation_blocked: false })
    // A bogus If-Match and an Idempotency-Key are ignored: settings do not support them.
    const headers = { "if-match": '"nonsense"', "idempotency-key": "settings-1" }
    const on = await app.management(path, { method: "PATCH", body: { impersonation_enabled: true }, headers })
    expect(on.status).toBe(200)
    expect(on.json).toEqual({ impersonation_enabled: true, new_user_creation_blocked: false })
    const off = await app.management(path, { method: "PATCH", body: { impersonation_enabled: false }, headers })
    expect(off.json.impersonation_enabled).toBe(false)
    expect((await app.management(path, { method: "PATCH", body: { new_user_creation_blocked: true } })).json).toEqual({
      impersonation_enabled: false,
      new_user_creation_blocked: true,
    })
    expect(await query(app, "select count(*)::int as n from idempotency_keys where key = 'settings-1'")).toEqual([
      { n: 0 },
    ])
    const actions = (await workspaceAuditActions(app, a.workspace_id)).filter(
      (e) => e.subject_id === env.id && e.action === "environment.settings_updated",
    )
    expect(actions).toHaveLength(3)
  })

  it("refuses bad settings bodies", async () => {
    const env = await newEnv("Settings bad")
    const path = `/v1/environments/${env.id}/settings`
    expectProblem(await app.management(path, { method: "PATCH", body: {} }), 400, "invalid_request")
    expectProblem(
      await app.management(path, { method: "PATCH", body: { impersonation_enabled: "yes" } }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await app.management(path, { method: "PATCH", body: { impersonation_enabled: true, other: 1 } }),
      400,
      "invalid_request_body",
    )
    expect((await app.management(path)).json.impersonation_enabled).toBe(false)
  })
})

describe("theme", () => {
  it("GET returns the default theme with an ETag; PUT requires If-Match (428 without, 412 stale)", async () => {
    const env = await newEnv("Themed")
    const path = `/v1/environments/${env.id}/theme`
    const get = await app.management(path)
    expect(get.status).toBe(200)
    expect(get.json).toEqual({
      primary_color: "#4f46e5",
      background_color: "#ffffff",
      text_color: "#111827",
      border_radius: 8,
      font_family: "system",
      logo_url: null,
      terms_url: null,
      privacy_url: null,
    })
    const etag = get.headers["etag"] as string
    expect(etag).toBe(`"${env.id}.theme.1"`)
    const body = {
      primary_color: "#FF0000",
      border_radius: 12,
      logo_url: "https://cdn.example.com/logo.png",
      terms_url: "https://app.example.com/terms",
      privacy_url: "https://app.example.com/privacy",
    }
    expectProblem(await app.management(path, { method: "PUT", body }), 428, "precondition_required")
    expectProblem(
      await app.management(path, { method: "PUT", body, headers: { "if-match": `"${env.id}.1"` } }),
      412,
      "precondition_failed",
    )
    expect((await app.management(path)).json).toEqual(get.json)
    const put = await app.management(path, { method: "PUT", body, headers: { "if-match": etag } })
    expect(put.status).toBe(200)
    expect(put.json).toEqual({ ...get.json, ...body })
    expect(put.headers["etag"]).toBe(`"${env.id}.theme.2"`)
    expectProblem(
      await app.management(path, { method: "PUT", body, headers: { "if-match": etag } }),
      412,
      "precondition_failed",
    )
    // PUT replaces: omitted fields go back to their defaults.
    const reset = await app.management(path, {
      method: "PUT",
      body: { text_color: "#000000" },
      headers: { "if-match": put.headers["etag"] as string },
    })
    expect(reset.json).toEqual({ ...get.json, text_color: "#000000" })
    // The Environment's own ETag is untouched by theme changes.
    expect((await app.management(`/v1/environments/${env.id}`)).headers["etag"]).toBe(`"${env.id}.1"`)
    expect(
      (await workspaceAuditActions(app, a.workspace_id)).filter(
        (e) => e.subject_id === env.id && e.action === "environment.theme_updated",
      ),
    ).toHaveLength(2)
  })

  it("concurrent PUTs with the same If-Match: exactly one wins", async () => {
    const env = await newEnv("Theme race")
    const path = `/v1/environments/${env.id}/theme`
    const etag = (await app.management(path)).headers["etag"] as string
    const results = await Promise.all(
      ["#000001", "#000002", "#000003"].map((c) =>
        app.management(path, { method: "PUT", body: { primary_color: c }, headers: { "if-match": etag } }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
  })

  it("validates every field (wrong shape 400 invalid_request_body, broken rule 400 invalid_request, nothing changes)", async () => {
    const env = await newEnv("Theme bad")
    const path = `/v1/environments/${env.id}/theme`
    const headers = { "if-match": `"${env.id}.theme.1"` }
    // A wrong JSON type (a non-integer where the schema says integer), a value outside an enum, an unknown field.
    for (const body of [
      { border_radius: 1.5 },
      { border_radius: "4" },
      { primary_color: 0x123456 },
      { font_family: "Comic Sans" },
      { logo_url: false },
      { terms_url: 42 },
      { privacy_url: ["https://app.example.com/privacy"] },
      { css: "body{}" },
      [],
    ]) {
      expectProblem(await app.management(path, { method: "PUT", body, headers }), 400, "invalid_request_body")
    }
    // Well-typed values that break a rule: colour format, radius range, https URL without CSS-breaking characters.
    for (const body of [
      { primary_color: "red" },
      { primary_color: "#12345" },
      { background_color: "#fff" },
      { border_radius: 25 },
      { border_radius: -1 },
      { logo_url: "http://cdn.example.com/l.png" },
      { logo_url: "javascript:alert(1)" },
      { logo_url: "https://x.example/a) ; background:url(evil" },
      { terms_url: "http://app.example.com/terms" },
      { terms_url: "not a url" },
      { privacy_url: "javascript:alert(1)" },
      { privacy_url: "https://user:pw@app.example.com/privacy" },
    ]) {
      expectProblem(await app.management(path, { method: "PUT", body, headers }), 400, "invalid_request")
    }
    expect((await app.management(path)).headers["etag"]).toBe(`"${env.id}.theme.1"`)
  })

  it("preview-css is text/css built from the theme", async () => {
    const env = await newEnv("Theme css")
    const path = `/v1/environments/${env.id}/theme`
    await app.management(path, {
      method: "PUT",
      body: { primary_color: "#AA00BB", border_radius: 4, font_family: "serif" },
      headers: { "if-match": `"${env.id}.theme.1"` },
    })
    const css = await app.management(`${path}/preview-css`)
    expect(css.status).toBe(200)
    expect(css.headers["content-type"]).toContain("text/css")
    expect(css.headers["x-request-id"]).toMatch(/^req_/)
    expect(css.text).toContain("--auth-primary-color: #aa00bb;")
    expect(css.text).toContain("--auth-border-radius: 4px;")
    expect(css.text).toContain("Georgia")
    expect(css.text).toContain("--auth-background-color: #ffffff;")
  })
})

describe("rp-migration", () => {
  it("reports not_started and refuses disable-legacy with 409 when there is no legacy RP ID", async () => {
    const env = await newEnv("RP none")
    const res = await app.management(`/v1/environments/${env.id}/rp-migration`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      environment_id: env.id,
      active_rp_id: env.rp_id,
      legacy_rp_id: null,
      status: "not_started",
      legacy_disabled_at: null,
    })
    expectProblem(
      await app.management(`/v1/environments/${env.id}/rp-migration/disable-legacy`, {
        body: { confirm_rp_id: env.rp_id },
      }),
      409,
      "no_legacy_rp_id",
    )
  })

  it("disable-legacy needs confirm_rp_id equal to the legacy RP ID, is irreversible, audited", async () => {
    const env = await newEnv("RP legacy")
    await query(app, "update environments set active_rp_id = 'login.example.com', legacy_rp_id = $2 where id = $1", [
      env.id,
      env.rp_id,
    ])
    const state = await app.management(`/v1/environments/${env.id}/rp-migration`)
    expect(state.json).toEqual({
      environment_id: env.id,
      active_rp_id: "login.example.com",
      legacy_rp_id: env.rp_id,
      status: "in_progress",
      legacy_disabled_at: null,
    })
    const path = `/v1/environments/${env.id}/rp-migration/disable-legacy`
    expectProblem(await app.management(path, { body: {} }), 400, "invalid_request_body")
    const wrong = await app.management(path, { body: { confirm_rp_id: "login.example.com" } })
    expectProblem(wrong, 400, "invalid_request")
    expect(wrong.json.detail).toContain("legacy RP ID")
    expect((await app.management(`/v1/environments/${env.id}/rp-migration`)).json.status).toBe("in_progress")
    const done = await app.management(path, { body: { confirm_rp_id: env.rp_id } })
    expect(done.status).toBe(200)
    expect(done.json).toMatchObject({
      status: "completed",
      legacy_rp_id: env.rp_id,
      active_rp_id: "login.example.com",
      legacy_disabled_at: expect.any(String),
    })
    expectProblem(await app.management(path, { body: { confirm_rp_id: env.rp_id } }), 409, "no_legacy_rp_id")
    expect(await workspaceAuditActions(app, a.workspace_id)).toContainEqual({
      action: "environment.legacy_rp_disabled",
      subject_id: env.id,
    })
    // The Environment now reports the active RP ID.
    expect((await app.management(`/v1/environments/${env.id}`)).json.rp_id).toBe("login.example.com")
  })

  it("concurrent disable-legacy: exactly one succeeds", async () => {
    const env = await newEnv("RP race")
    await query(app, "update environments set active_rp_id = 'race.example.com', legacy_rp_id = $2 where id = $1", [
      env.id,
      env.rp_id,
    ])
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        app.management(`/v1/environments/${env.id}/rp-migration/disable-legacy`, {
          body: { confirm_rp_id: env.rp_id },
        }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409])
  })
})

describe("tenant isolation and Environment-pinned keys", () => {
  const everyRoute = (envId: string) => [
    { path: `/v1/environments/${envId}` },
    { path: `/v1/environments/${envId}`, method: "PATCH", body: { name: "Hijacked", status: "suspended" } },
    { path: `/v1/environments/${envId}`, method: "DELETE" },
    { path: `/v1/environments/${envId}/settings` },
    { path: `/v1/environments/${envId}/settings`, method: "PATCH", body: { impersonation_enabled: true } },
    { path: `/v1/environments/${envId}/theme` },
    {
      path: `/v1/environments/${envId}/theme`,
      method: "PUT",
      body: { primary_color: "#000000" },
      headers: { "if-match": "*" },
    },
    { path: `/v1/environments/${envId}/theme/preview-css` },
    { path: `/v1/environments/${envId}/rp-migration` },
    { path: `/v1/environments/${envId}/rp-migration/disable-legacy`, method: "POST", body: { confirm_rp_id: "x" } },
  ]

  it("a key of Workspace A gets 404 for every route of an Environment of Workspace B; B's Environment is unchanged", async () => {
    const before = await app.management(`/v1/environments/${b.environment_id}`, { key: b.api_key })
    for (const r of everyRoute(b.environment_id)) expectProblem(await app.management(r.path, r), 404, "not_found")
    expectProblem(await app.management(`/v1/environments?project_id=${b.project_id}`), 404, "not_found")
    const after = await app.management(`/v1/environments/${b.environment_id}`, { key: b.api_key })
    expect(after.json).toEqual(before.json)
    expect(
      (await app.management(`/v1/environments/${b.environment_id}/settings`, { key: b.api_key })).json
        .impersonation_enabled,
    ).toBe(false)
    expect(
      (await app.management(`/v1/environments/${b.environment_id}/theme`, { key: b.api_key })).headers["etag"],
    ).toBe(`"${b.environment_id}.theme.1"`)
  })

  it("a pinned key reaches only its Environment (404 elsewhere) and cannot create Environments", async () => {
    const other = await newEnv("Sibling")
    const pinned = await apiKey(app, {
      workspaceId: a.workspace_id,
      environmentId: a.environment_id,
      scopes: ["environments:read", "environments:write"],
    })
    for (const r of everyRoute(other.id))
      expectProblem(await app.management(r.path, { ...r, key: pinned.secret }), 404, "not_found")
    const list = await app.management(`/v1/environments?project_id=${a.project_id}&limit=100`, { key: pinned.secret })
    expect(list.json.data.map((e: { id: string }) => e.id)).toEqual([a.environment_id])
    expect((await app.management(`/v1/environments/${a.environment_id}`, { key: pinned.secret })).status).toBe(200)
    const renamed = await app.management(`/v1/environments/${a.environment_id}`, {
      method: "PATCH",
      body: { name: "Pinned rename" },
      key: pinned.secret,
    })
    expect(renamed.status).toBe(200)
    expectProblem(
      await createEnv({ project_id: a.project_id, type: "test", name: "P" }, { key: pinned.secret }),
      403,
      "forbidden",
    )
  })
})
