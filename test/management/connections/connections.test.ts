import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createPlatformUser, mintDashboardSession } from "../../../src/management/auth/dashboard.js"
import { activeSocialProviders, usableConnection } from "../../../src/management/connections/repo.js"
import { openProviderClientSecret } from "../../../src/management/connections/secret.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { countRows, query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { subjectAuditActions } from "../support/records.js"

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

const CONNECTION_ID = /^con_[a-z2-7]{32}$/
const SECRET = "provider-secret-value-0123456789"

const body = (provider: string, extra: Record<string, unknown> = {}) => ({
  provider,
  mode: "byo",
  provider_key: provider.replace("_", "-"),
  provider_client_id: `${provider}-client-id`,
  provider_client_secret: SECRET,
  ...(provider === "generic_oidc" ? { issuer: "https://idp.example.com" } : {}),
  ...extra,
})

const create = (
  env: string,
  payload: Record<string, unknown>,
  opts: { key?: string; headers?: Record<string, string> } = {},
) =>
  app.management("/v1/connections", {
    method: "POST",
    body: { environment_id: env, ...payload },
    ...(opts.key ? { key: opts.key } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
  })

const patch = (id: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.management(`/v1/connections/${id}`, { method: "PATCH", body: payload, headers })

const providers = (env: string) => app.run(activeSocialProviders(env))

describe("POST /v1/connections", () => {
  it("creates a connection; provider_client_secret is sealed and never returned", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const res = await create(env, body("google"))
    expect(res.status).toBe(201)
    expect(res.json.id).toMatch(CONNECTION_ID)
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    expect(res.json).toEqual({
      id: res.json.id,
      environment_id: env,
      provider: "google",
      mode: "byo",
      provider_key: "google",
      provider_client_id: "google-client-id",
      issuer: null,
      scopes: ["openid", "email", "profile"],
      profile_mapping: {},
      status: "active",
      owner_confirmed: false,
      callback_url: `http://env-${env.slice(4)}.login.localhost:${app.port}/v1/auth/social/google/callback`,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect(res.text).not.toContain(SECRET)
    expect(res.text).not.toContain("provider_client_secret")
    const [row] = await query<{ provider_client_secret_sealed: string }>(
      app,
      "select provider_client_secret_sealed from connections where id = $1",
      [res.json.id],
    )
    expect(row!.provider_client_secret_sealed).not.toContain(SECRET)
    expect(row!.provider_client_secret_sealed).toMatch(/^v1\./)
    const stored = await app.run(usableConnection(env, "google"))
    expect(await app.run(openProviderClientSecret(stored!))).toBe(SECRET)
    for (const path of [`/v1/connections/${res.json.id}`, `/v1/connections?environment_id=${env}`]) {
      const got = await app.management(path)
      expect(got.status).toBe(200)
      expect(got.text).not.toContain(SECRET)
      expect(got.text).not.toContain("provider_client_secret")
    }
    const audit = await query<{ details: unknown }>(app, "select details from audit_events where subject_id = $1", [
      res.json.id,
    ])
    expect(JSON.stringify(audit)).not.toContain(SECRET)
  })

  it("managed connections call back on the Canonical Issuer; scopes and profile_mapping are kept", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const res = await create(
      env,
      body("github", {
        mode: "managed",
        scopes: ["read:user"],
        profile_mapping: { name: "login", avatar_url: "avatar_url" },
        status: "disabled",
      }),
    )
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      mode: "managed",
      scopes: ["read:user"],
      profile_mapping: { name: "login", avatar_url: "avatar_url" },
      status: "disabled",
      callback_url: `http://localhost:${app.port}/e/${env}/v1/auth/social/github/callback`,
    })
  })

  it("generic_oidc needs an https issuer without query, fragment or userinfo; other providers take none", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    for (const issuer of [
      undefined,
      null,
      "http://idp.example.com",
      "https://idp.example.com/?x=1",
      "https://idp.example.com/#x",
      "https://user:pw@idp.example.com",
      "idp.example.com",
      "https://*.example.com",
      "https://idp.example.com/ tenant",
    ]) {
      const payload: Record<string, unknown> = body("generic_oidc")
      if (issuer === undefined) delete payload["issuer"]
      else payload["issuer"] = issuer
      const res = await create(env, payload)
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toContain("issuer")
    }
    expectProblem(await create(env, body("google", { issuer: "https://accounts.google.com" })), 400, "invalid_request")
    expect(await countRows(app, "connections", env)).toBe(0)
    const ok = await create(env, body("generic_oidc", { issuer: "https://idp.example.com/tenant/v2.0" }))
    expect(ok.status).toBe(201)
    expect(ok.json).toMatchObject({ issuer: "https://idp.example.com/tenant/v2.0", owner_confirmed: false })
  })

  it("refuses wrongly shaped bodies with invalid_request_body and values that break a rule with invalid_request", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    for (const payload of [
      body("facebook"),
      body("google", { mode: "shared" }),
      body("google", { provider_client_id: 12 }),
      body("google", { scopes: "openid" }),
      body("google", { scopes: ["openid", 7] }),
      body("google", { profile_mapping: { favourite_colour: "c" } }),
      body("google", { owner_confirmed: true }),
      body("google", { status: "paused" }),
      body("google", { id: "con_x" }),
      { provider: "google", mode: "byo", provider_key: "google", provider_client_id: "id" },
      body("google", { provider_key: "", provider_client_id: 12 }), // a wrong type wins over a broken rule
    ])
      expectProblem(await create(env, payload), 400, "invalid_request_body")
    for (const payload of [
      body("google", { provider_key: "Has Spaces" }),
      body("google", { provider_key: "" }),
      body("google", { provider_key: "x".repeat(65) }),
      body("google", { provider_client_secret: "" }),
      body("google", { scopes: ["openid email"] }),
      body("google", { scopes: ["openid", "openid"] }),
    ])
      expectProblem(await create(env, payload), 400, "invalid_request")
    expect(await countRows(app, "connections", env)).toBe(0)
  })

  it("one live connection per provider and per provider_key in an Environment (409), even under concurrency", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const results = await Promise.all([1, 2, 3].map(() => create(env, body("apple"))))
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409])
    for (const r of results.filter((x) => x.status === 409)) expectProblem(r, 409, "connection_already_exists")
    expectProblem(await create(env, body("microsoft", { provider_key: "apple" })), 409, "connection_already_exists")
    // Deleting frees the slot; another Environment is independent.
    const first = results.find((r) => r.status === 201)!.json
    expect((await app.management(`/v1/connections/${first.id}`, { method: "DELETE" })).status).toBe(200)
    expect((await create(env, body("apple"))).status).toBe(201)
    expect((await create(a.environment_id, body("apple"))).status).toBe(201)
  })
})

describe("generic_oidc owner confirmation and activeSocialProviders", () => {
  it("a generic_oidc connection is unusable until confirmed; a changed issuer clears the confirmation", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    await create(env, body("google"))
    const oidc = (await create(env, body("generic_oidc"))).json
    expect(await providers(env)).toEqual(["google"])
    expect(await app.run(usableConnection(env, "generic_oidc"))).toBeUndefined()

    await app.advance("1 second")
    const confirmed = await patch(oidc.id, { owner_confirmed: true })
    expect(confirmed.status).toBe(200)
    expect(confirmed.json.owner_confirmed).toBe(true)
    expect(await providers(env)).toEqual(["generic_oidc", "google"])
    expect((await app.run(usableConnection(env, "generic_oidc")))?.id).toBe(oidc.id)

    // Re-sending the same issuer is no change.
    expect((await patch(oidc.id, { issuer: "https://idp.example.com" })).json.owner_confirmed).toBe(true)
    // Other fields keep the confirmation.
    expect((await patch(oidc.id, { provider_client_id: "rotated", scopes: ["openid"] })).json.owner_confirmed).toBe(
      true,
    )

    await app.advance("1 second")
    const moved = await patch(oidc.id, { issuer: "https://other-idp.example.com" })
    expect(moved.json).toMatchObject({ issuer: "https://other-idp.example.com", owner_confirmed: false })
    expect(await providers(env)).toEqual(["google"])

    await app.advance("1 second")
    const movedAndConfirmed = await patch(oidc.id, { issuer: "https://third-idp.example.com", owner_confirmed: true })
    expect(movedAndConfirmed.json).toMatchObject({ issuer: "https://third-idp.example.com", owner_confirmed: true })
    expect(await providers(env)).toEqual(["generic_oidc", "google"])

    await app.advance("1 second")
    expect(
      (await patch(oidc.id, { issuer: "https://fourth-idp.example.com", owner_confirmed: false })).json.owner_confirmed,
    ).toBe(false)
    expect(await subjectAuditActions(app, oidc.id)).toEqual([
      "connection.created",
      "connection.owner_confirmed",
      "connection.updated",
      "connection.updated",
      "connection.updated",
      "connection.owner_confirmation_cleared",
      "connection.updated",
      "connection.owner_confirmed",
      "connection.updated",
      "connection.owner_confirmation_cleared",
      "connection.updated",
    ])
  })

  it("disabled and deleted connections are not usable; issuer cannot be set on other providers", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const google = (await create(env, body("google"))).json
    const github = (await create(env, body("github"))).json
    expect(await providers(env)).toEqual(["github", "google"])
    expect((await patch(google.id, { status: "disabled" })).json.status).toBe("disabled")
    expect(await providers(env)).toEqual(["github"])
    expect((await app.management(`/v1/connections/${github.id}`, { method: "DELETE" })).json).toEqual({
      id: github.id,
      deleted: true,
    })
    expect(await providers(env)).toEqual([])
    expect((await patch(google.id, { status: "active" })).json.status).toBe("active")
    expect(await providers(env)).toEqual(["google"])
    expectProblem(await patch(google.id, { issuer: "https://accounts.google.com" }), 400, "invalid_request")
    expect(await providers(a.environment_id)).not.toContain("github")
  })
})

describe("PATCH, GET, DELETE /v1/connections/{id}", () => {
  it("PATCH replaces the sealed secret, honours If-Match and never echoes the secret", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const created = (await create(env, body("microsoft"))).json
    const res = await patch(
      created.id,
      { provider_client_secret: "new-secret-value", profile_mapping: { email: "upn" } },
      { "if-match": `"${created.id}.1"` },
    )
    expect(res.status).toBe(200)
    expect(res.headers["etag"]).toBe(`"${created.id}.2"`)
    expect(res.text).not.toContain("new-secret-value")
    expect(res.json.profile_mapping).toEqual({ email: "upn" })
    expect(await app.run(openProviderClientSecret((await app.run(usableConnection(env, "microsoft")))!))).toBe(
      "new-secret-value",
    )
    expectProblem(
      await patch(created.id, { status: "disabled" }, { "if-match": `"${created.id}.1"` }),
      412,
      "precondition_failed",
    )
    expectProblem(
      await app.management(`/v1/connections/${created.id}`, {
        method: "DELETE",
        headers: { "if-match": `"${created.id}.1"` },
      }),
      412,
      "precondition_failed",
    )
    const got = await app.management(`/v1/connections/${created.id}`)
    expect(got.headers["etag"]).toBe(`"${created.id}.2"`)
    expect(got.json.status).toBe("active")
    expectProblem(await patch(created.id, {}), 400, "invalid_request")
    for (const bad of [
      { provider: "google" },
      { mode: "managed" },
      { provider_key: "x" },
      { issuer: null },
      { owner_confirmed: "yes" },
    ]) {
      expectProblem(await patch(created.id, bad), 400, "invalid_request_body")
    }
    for (const bad of [{ provider_client_secret: "" }, { provider_client_id: "" }, { scopes: ["openid email"] }]) {
      expectProblem(await patch(created.id, bad), 400, "invalid_request")
    }
    const [row] = await query<{ version: number }>(app, "select version from connections where id = $1", [created.id])
    expect(row!.version).toBe(2)
  })

  it("concurrent PATCHes with the same If-Match: exactly one wins", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const created = (await create(env, body("generic_oidc"))).json
    const results = await Promise.all(
      [true, false, true].map((v) => patch(created.id, { owner_confirmed: v }, { "if-match": `"${created.id}.1"` })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412])
  })

  it("unknown or deleted connections are 404 connection_not_found", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const created = (await create(env, body("google"))).json
    await app.management(`/v1/connections/${created.id}`, { method: "DELETE" })
    for (const id of [created.id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "nope"]) {
      expectProblem(await app.management(`/v1/connections/${id}`), 404, "connection_not_found")
      expectProblem(await patch(id, { status: "active" }), 404, "connection_not_found")
      expectProblem(await app.management(`/v1/connections/${id}`, { method: "DELETE" }), 404, "connection_not_found")
    }
    expect((await app.management(`/v1/connections?environment_id=${env}`)).json.data).toEqual([])
    expect(await subjectAuditActions(app, created.id)).toEqual(["connection.created", "connection.deleted"])
  })
})

describe("GET /v1/connections", () => {
  it("pages by keyset and filters by provider", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const made: Array<string> = []
    for (const p of ["google", "apple", "github", "microsoft", "generic_oidc"])
      made.push((await create(env, body(p))).json.id)
    const first = await app.management(`/v1/connections?environment_id=${env}&limit=3`)
    const second = await app.management(
      `/v1/connections?environment_id=${env}&limit=3&cursor=${first.json.next_cursor}`,
    )
    expect(second.json.next_cursor).toBeNull()
    expect([...first.json.data, ...second.json.data].map((c: { id: string }) => c.id)).toEqual([...made].sort())
    const gh = await app.management(`/v1/connections?environment_id=${env}&provider=github`)
    expect(gh.json.data.map((c: { provider: string }) => c.provider)).toEqual(["github"])
    expectProblem(
      await app.management(`/v1/connections?environment_id=${env}&provider=facebook`),
      400,
      "invalid_request",
    )
    expectProblem(await app.management("/v1/connections"), 400, "invalid_request")
  })
})

describe("scopes and tenant isolation", () => {
  it("connections:write does not imply connections:read", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const writer = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["connections:write"] })
    const created = await create(env, body("google"), { key: writer })
    expect(created.status).toBe(201)
    expectProblem(
      await app.management(`/v1/connections?environment_id=${env}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/connections/${created.json.id}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    const reader = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["connections:read"] })
    expectProblem(await create(env, body("apple"), { key: reader }), 403, "insufficient_scope")
    expectProblem(
      await app.management(`/v1/connections/${created.json.id}`, {
        method: "PATCH",
        body: { owner_confirmed: true },
        key: reader,
      }),
      403,
      "insufficient_scope",
    )
  })

  it("Dashboard sessions: an Owner may confirm a generic_oidc connection, a Member only reads; X-Workspace-Id picks the Workspace", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const oidc = (await create(env, body("generic_oidc"))).json
    const session = async (role: "owner" | "member") => {
      const userId = await app.run(
        createPlatformUser(`${role}.${oidc.id}@example.com`, { workspaceId: a.workspace_id, role }),
      )
      return app.run(mintDashboardSession(userId))
    }
    const as = (token: string, workspaceId = a.workspace_id) => ({
      authorization: `Bearer ${token}`,
      "x-workspace-id": workspaceId,
    })
    const member = await session("member")
    const owner = await session("owner")
    expect((await app.management(`/v1/connections/${oidc.id}`, { headers: as(member) })).status).toBe(200)
    expectProblem(
      await app.management(`/v1/connections/${oidc.id}`, {
        method: "PATCH",
        body: { owner_confirmed: true },
        headers: as(member),
      }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/connections/${oidc.id}`, {
        method: "PATCH",
        body: { owner_confirmed: true },
        headers: as(owner, b.workspace_id),
      }),
      403,
      "forbidden",
    )
    const confirmed = await app.management(`/v1/connections/${oidc.id}`, {
      method: "PATCH",
      body: { owner_confirmed: true },
      headers: as(owner),
    })
    expect(confirmed.json.owner_confirmed).toBe(true)
    expect(await providers(env)).toEqual(["generic_oidc"])
    const [audit] = await query<{ actor_type: string }>(
      app,
      "select actor_type from audit_events where subject_id = $1 and action = 'connection.owner_confirmed'",
      [oidc.id],
    )
    expect(audit!.actor_type).toBe("workspace_member")
  })

  it("Workspace B's key gets 404 for A's connections and cannot list A's Environment", async () => {
    const mine = (await create(a.environment_id, body("google", { provider_key: "google-a" }))).json
    const theirs = (await create(b.environment_id, body("google"), { key: b.api_key })).json
    const bKey = { key: b.api_key }
    expectProblem(await app.management(`/v1/connections/${mine.id}`, bKey), 404, "connection_not_found")
    expectProblem(
      await app.management(`/v1/connections/${mine.id}`, { ...bKey, method: "PATCH", body: { status: "disabled" } }),
      404,
      "connection_not_found",
    )
    expectProblem(
      await app.management(`/v1/connections/${mine.id}`, { ...bKey, method: "DELETE" }),
      404,
      "connection_not_found",
    )
    expectProblem(await app.management(`/v1/connections?environment_id=${a.environment_id}`, bKey), 404, "not_found")
    expectProblem(await create(a.environment_id, body("github"), bKey), 404, "not_found")
    const bList = await app.management(`/v1/connections?environment_id=${b.environment_id}`, bKey)
    expect(bList.json.data.map((c: { id: string }) => c.id)).toEqual([theirs.id])
    const aList = await app.management(`/v1/connections?environment_id=${a.environment_id}`)
    expect(aList.json.data.map((c: { id: string }) => c.id)).not.toContain(theirs.id)
    const [row] = await query<{ status: string; version: number }>(
      app,
      "select status, version from connections where id = $1",
      [mine.id],
    )
    expect(row).toEqual({ status: "active", version: 1 })
  })

  it("an Environment-pinned key reaches only its Environment's connections", async () => {
    const env2 = await makeEnvironment(app, a.workspace_id, a.project_id)
    const env3 = await makeEnvironment(app, a.workspace_id, a.project_id)
    const pinned = await makeKey(app, {
      workspaceId: a.workspace_id,
      environmentId: env2,
      scopes: ["connections:read", "connections:write"],
    })
    const other = (await create(env3, body("google"))).json
    expectProblem(await app.management(`/v1/connections/${other.id}`, { key: pinned }), 404, "connection_not_found")
    expectProblem(await app.management(`/v1/connections?environment_id=${env3}`, { key: pinned }), 404, "not_found")
    expect((await create(env2, body("google"), { key: pinned })).status).toBe(201)
  })
})

describe("Idempotency-Key on connection writes", () => {
  it("replays the creation instead of answering 409", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const headers = { "idempotency-key": "connection-create" }
    const first = await create(env, body("google"), { headers })
    const again = await create(env, body("google"), { headers })
    expect(again.status).toBe(201)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.json).toEqual(first.json)
    expect(await countRows(app, "connections", env)).toBe(1)
    expectProblem(await create(env, body("apple"), { headers }), 409, "idempotency_key_conflict")
  })
})
