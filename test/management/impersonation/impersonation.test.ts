import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import type { TestResponse } from "../../support/http.js"
import { claimsOf, postForm, userinfo, verifyJwt } from "../../oidc/support.js"
import { dashboardUser, makeEnvironment, makeKey } from "../support/callers.js"
import { query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { workspaceAuditRows } from "../support/records.js"

// POST /v1/impersonation and /v1/impersonation/stop (spec: "Other Management routes";
// Limits: reason 10 to 1000 characters, duration_minutes 1 to 15; impersonation:create,
// Owner/Admin Dashboard session only, Environment setting impersonation_enabled, not
// startable by API key; no Idempotency-Key).

let app: TestApp
let b: Bootstrapped
let owner: Awaited<ReturnType<typeof dashboardUser>>
let admin: Awaited<ReturnType<typeof dashboardUser>>
let member: Awaited<ReturnType<typeof dashboardUser>>
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  owner = await dashboardUser(app, { workspaceId: b.workspace_id, role: "owner" })
  admin = await dashboardUser(app, { workspaceId: b.workspace_id, role: "admin" })
  member = await dashboardUser(app, { workspaceId: b.workspace_id, role: "member" })
  await setImpersonation(b, true)
})
afterAll(async () => {
  await app?.close()
})

const setImpersonation = async (w: Bootstrapped, on: boolean) => {
  const res = await app.management(`/v1/environments/${w.environment_id}/settings`, {
    method: "PATCH",
    body: { impersonation_enabled: on },
    key: w.api_key,
  })
  expect(res.status).toBe(200)
}

let n = 0
const newUser = async (w: Bootstrapped = b) => {
  const res = await app.management(`/v1/users?environment_id=${w.environment_id}`, {
    method: "POST",
    key: w.api_key,
    body: { email: `imp-${++n}-${Date.now().toString(36)}@example.com`, name: "Grace" },
  })
  expect(res.status).toBe(201)
  return res.json as { id: string; email: string }
}

const REASON = "Customer ticket #4521: cannot see invoices"

const start = (headers: Record<string, string>, body: Record<string, unknown>, environmentId = b.environment_id) =>
  app.request(app.config.managementHost, `/v1/impersonation?environment_id=${environmentId}`, {
    method: "POST",
    headers,
    body,
  })

const stop = (headers: Record<string, string>) =>
  app.request(app.config.managementHost, "/v1/impersonation/stop", { method: "POST", headers })

const setCookie = (res: TestResponse) => {
  const raw = res.headers["set-cookie"]
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]
  return list.find((c) => c.startsWith("impersonation_session="))
}
const cookieValue = (res: TestResponse) => /^impersonation_session=([^;]*)/.exec(setCookie(res) ?? "")?.[1]

const rows = (environmentId: string) =>
  query<{
    id: string
    platform_user_id: string
    target_user_id: string
    reason: string
    ended_at: Date | null
    end_reason: string | null
    cookie_hash: string
  }>(
    app,
    "select id, platform_user_id, target_user_id, reason, ended_at, end_reason, cookie_hash from impersonation_sessions where environment_id = $1 order by started_at, id",
    [environmentId],
  )

describe("POST /impersonation", () => {
  it("an Owner starts it: 201 with the actor, target user, reason, expiry and forbidden scopes; cookie set; audited", async () => {
    const user = await newUser()
    const res = await start(owner.headers, { user_id: user.id, reason: REASON, duration_minutes: 5 })
    expect(res.status).toBe(201)
    expect(res.headers["x-request-id"]).toMatch(/^req_/)
    expect(res.headers["cache-control"]).toBe("no-store")
    const expiresAt = new Date(app.now() + 5 * 60_000).toISOString()
    expect(res.json).toEqual({
      id: expect.stringMatching(/^imp_[a-z2-7]{32}$/),
      environment_id: b.environment_id,
      actor: { type: "workspace_member", id: owner.id },
      target_user: { id: user.id, email: user.email, name: "Grace" },
      reason: REASON,
      duration_minutes: 5,
      started_at: new Date(app.now()).toISOString(),
      expires_at: expiresAt,
      forbidden_scopes: ["openid", "email", "offline_access"],
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 300,
      scope: "profile",
    })
    const cookie = setCookie(res)!
    expect(cookie).toMatch(/^impersonation_session=[A-Za-z0-9_-]{43}; /)
    expect(cookie).toContain("Max-Age=300")
    expect(cookie).toContain("Path=/")
    expect(cookie).toContain("HttpOnly")
    expect(cookie).toContain("SameSite=Strict")
    expect(cookie).not.toContain("Domain=")

    const [row] = await rows(b.environment_id).then((all) => all.filter((r) => r.id === res.json.id))
    expect(row).toMatchObject({ platform_user_id: owner.id, target_user_id: user.id, reason: REASON, ended_at: null })
    expect(row!.cookie_hash).toBe(createHash("sha256").update(cookieValue(res)!).digest("hex"))

    const audits = (await workspaceAuditRows(app, b.workspace_id, "impersonation.started")).filter(
      (a) => a.details.impersonation_id === res.json.id,
    )
    expect(audits).toEqual([
      expect.objectContaining({
        actor_type: "workspace_member",
        actor_id: owner.id,
        environment_id: b.environment_id,
        subject_type: "user",
        subject_id: user.id,
        result: "success",
        request_id: res.headers["x-request-id"],
        details: { impersonation_id: res.json.id, reason: REASON, duration_minutes: 5, expires_at: expiresAt },
      }),
    ])
  })

  it("the access token is the user's, with an act claim naming the Dashboard user, and no forbidden scope", async () => {
    const user = await newUser()
    const res = await start(admin.headers, { user_id: user.id, reason: REASON, duration_minutes: 15 })
    expect(res.status).toBe(201)
    const { payload, header } = await verifyJwt(app, b, res.json.access_token, "at+jwt")
    expect(header).toMatchObject({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) })
    expect(payload).toMatchObject({
      iss: b.issuer,
      sub: user.id,
      aud: b.issuer,
      scope: "profile",
      sid: res.json.id,
      sv: 1,
      act: { sub: admin.id, actor_type: "workspace_member" },
      acr: "urn:example-auth:loa:basic",
    })
    expect(payload.exp).toBe(Math.floor(Date.parse(res.json.expires_at) / 1000))
    for (const scope of res.json.forbidden_scopes) expect(String(payload["scope"]).split(" ")).not.toContain(scope)
    expect(payload).not.toHaveProperty("client_id")
    expect(payload).not.toHaveProperty("email")
    // The service's own stateful endpoints refuse it: no login session stands behind it.
    expectProblem(await userinfo(app, b, res.json.access_token), 401, "invalid_token")
    const introspectKey = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["introspect"] })
    const introspected = await postForm(
      app,
      b,
      "/oauth2/introspect",
      { token: res.json.access_token },
      { "x-management-api-key": introspectKey },
    )
    expect(introspected.status).toBe(200)
    expect(introspected.json).toEqual({ active: false })
    await app.advance("15 minutes")
    await expect(verifyJwt(app, b, res.json.access_token, "at+jwt")).rejects.toThrow()
  })

  it("reason 10 to 1000 characters and duration_minutes 1 to 15: the bounds pass, beyond is 400 invalid_request; a wrong shape is 400 invalid_request_body", async () => {
    const user = await newUser()
    for (const [reason, duration] of [
      ["x".repeat(10), 1],
      ["y".repeat(1000), 15],
      ["é".repeat(10), 3],
      ["👩‍💻".repeat(3) + "abcd", 2],
    ] as const) {
      expect((await start(owner.headers, { user_id: user.id, reason, duration_minutes: duration })).status).toBe(201)
    }
    const before = (await rows(b.environment_id)).length
    // Well-typed values outside the spec's limits break a rule.
    const outOfBounds: Array<Record<string, unknown>> = [
      { user_id: user.id, reason: "x".repeat(9), duration_minutes: 5 },
      { user_id: user.id, reason: "x".repeat(1001), duration_minutes: 5 },
      { user_id: user.id, reason: " ".repeat(20), duration_minutes: 5 },
      { user_id: user.id, reason: REASON, duration_minutes: 0 },
      { user_id: user.id, reason: REASON, duration_minutes: 16 },
    ]
    for (const body of outOfBounds) expectProblem(await start(owner.headers, body), 400, "invalid_request")
    // Wrong shape: a non-integer or a string where an integer is due, a missing or an unknown field.
    const misshapen: Array<Record<string, unknown>> = [
      { user_id: user.id, reason: REASON, duration_minutes: 1.5 },
      { user_id: user.id, reason: REASON, duration_minutes: "5" },
      { user_id: user.id, reason: REASON },
      { user_id: user.id, duration_minutes: 5 },
      { reason: REASON, duration_minutes: 5 },
      { user_id: user.id, reason: REASON, duration_minutes: 5, scopes: ["openid"] },
      { user_id: user.id, reason: "short", duration_minutes: "5" }, // a wrong type wins over a broken rule
    ]
    for (const body of misshapen) expectProblem(await start(owner.headers, body), 400, "invalid_request_body")
    expectProblem(
      await app.request(app.config.managementHost, `/v1/impersonation?environment_id=${b.environment_id}`, {
        method: "POST",
        headers: owner.headers,
        body: "{oops",
      }),
      400,
      "invalid_request_body",
    )
    expect((await rows(b.environment_id)).length).toBe(before)
  })

  it("API keys are refused (403 forbidden) even with impersonation:create; Members get 403 insufficient_scope", async () => {
    const user = await newUser()
    const before = (await rows(b.environment_id)).length
    const body = { user_id: user.id, reason: REASON, duration_minutes: 5 }
    const res = await start({ authorization: `Bearer ${b.api_key}` }, body)
    expectProblem(res, 403, "forbidden")
    expect(setCookie(res)).toBeUndefined()
    const only = await makeKey(app, { workspaceId: b.workspace_id, scopes: ["impersonation:create"] })
    expectProblem(await start({ authorization: `Bearer ${only}` }, body), 403, "forbidden")
    expectProblem(await start(member.headers, body), 403, "insufficient_scope")
    expectProblem(
      await app.request(app.config.managementHost, `/v1/impersonation?environment_id=${b.environment_id}`, {
        method: "POST",
        body,
      }),
      401,
      "unauthorized",
    )
    expectProblem(await start({ authorization: `Bearer ${owner.token}` }, body), 400, "invalid_request")
    // A member of another Workspace naming this one.
    const stranger = await dashboardUser(app, { workspaceId: (await app.bootstrap()).workspace_id, role: "owner" })
    expectProblem(await start({ ...stranger.headers, "x-workspace-id": b.workspace_id }, body), 403, "forbidden")
    expect((await rows(b.environment_id)).length).toBe(before)
  })

  it("the Environment setting impersonation_enabled must be on (403 impersonation_disabled)", async () => {
    const w = await app.bootstrap()
    const wOwner = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const user = await newUser(w)
    const body = { user_id: user.id, reason: REASON, duration_minutes: 5 }
    const res = await start(wOwner.headers, body, w.environment_id)
    expectProblem(res, 403, "impersonation_disabled")
    expect(setCookie(res)).toBeUndefined()
    expect(await rows(w.environment_id)).toHaveLength(0)
    expect(await workspaceAuditRows(app, w.workspace_id, "impersonation.started")).toHaveLength(0)
    await setImpersonation(w, true)
    expect((await start(wOwner.headers, body, w.environment_id)).status).toBe(201)
    await setImpersonation(w, false)
    expectProblem(await start(wOwner.headers, body, w.environment_id), 403, "impersonation_disabled")
  })

  it("the Environment and the user must be reachable; blocked and deleted users cannot be impersonated", async () => {
    const body = (userId: string) => ({ user_id: userId, reason: REASON, duration_minutes: 5 })
    const user = await newUser()
    expectProblem(
      await app.request(app.config.managementHost, "/v1/impersonation", {
        method: "POST",
        headers: owner.headers,
        body: body(user.id),
      }),
      400,
      "invalid_request",
    )
    const other = await app.bootstrap()
    await setImpersonation(other, true)
    expectProblem(await start(owner.headers, body(user.id), other.environment_id), 404, "not_found")
    expectProblem(await start(owner.headers, body("usr_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")), 404, "user_not_found")
    const second = await makeEnvironment(app, b.workspace_id, b.project_id)
    const elsewhere = await newUser({ ...b, environment_id: second })
    expectProblem(await start(owner.headers, body(elsewhere.id)), 404, "user_not_found")
    const blocked = await newUser()
    await app.management(`/v1/users/${blocked.id}/block?environment_id=${b.environment_id}`, { method: "POST" })
    expectProblem(await start(owner.headers, body(blocked.id)), 409, "user_blocked")
    const deleted = await newUser()
    await app.management(`/v1/users/${deleted.id}?environment_id=${b.environment_id}`, { method: "DELETE" })
    expectProblem(await start(owner.headers, body(deleted.id)), 409, "user_pending_deletion")
  })

  it("Idempotency-Key is not supported: each start is a new impersonation, replacing the caller's previous one", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const wAdmin = await dashboardUser(app, { workspaceId: w.workspace_id, role: "admin" })
    const user = await newUser(w)
    const body = { user_id: user.id, reason: REASON, duration_minutes: 5 }
    const first = await start({ ...wAdmin.headers, "idempotency-key": "same" }, body, w.environment_id)
    const second = await start({ ...wAdmin.headers, "idempotency-key": "same" }, body, w.environment_id)
    expect([first.status, second.status]).toEqual([201, 201])
    expect(second.headers["idempotent-replayed"]).toBeUndefined()
    expect(second.json.id).not.toBe(first.json.id)
    expect(cookieValue(second)).not.toBe(cookieValue(first))
    const stored = await rows(w.environment_id)
    expect(Object.fromEntries(stored.map((r) => [r.id, r.end_reason]))).toEqual({
      [first.json.id]: "replaced",
      [second.json.id]: null,
    })
    expect((await workspaceAuditRows(app, w.workspace_id, "impersonation.stopped")).map((a) => a.details)).toEqual([
      { impersonation_id: first.json.id, reason: "replaced", impersonator_id: wAdmin.id },
    ])
  })
})

describe("POST /impersonation/stop", () => {
  const startFor = async (who: typeof owner, w: Bootstrapped = b) => {
    const user = await newUser(w)
    const res = await start(who.headers, { user_id: user.id, reason: REASON, duration_minutes: 10 }, w.environment_id)
    expect(res.status).toBe(201)
    return { id: res.json.id as string, cookie: cookieValue(res)! }
  }

  it("ends the impersonation of the cookie and clears the cookie; again: stopped false, cookie cleared again", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const wOwner = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const { id, cookie } = await startFor(wOwner, w)
    const res = await stop({ ...wOwner.headers, cookie: `impersonation_session=${cookie}` })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ stopped: true, impersonation_ids: [id], ended_at: new Date(app.now()).toISOString() })
    const cleared = setCookie(res)!
    expect(cleared).toMatch(/^impersonation_session=; /)
    expect(cleared).toContain("Max-Age=0")
    expect(cleared).toContain("Path=/")
    expect((await rows(w.environment_id))[0]).toMatchObject({ id, end_reason: "stopped", ended_at: expect.any(Date) })
    expect(
      (await workspaceAuditRows(app, w.workspace_id, "impersonation.stopped")).map((a) => [a.actor_id, a.details]),
    ).toEqual([[wOwner.id, { impersonation_id: id, reason: "stopped", impersonator_id: wOwner.id }]])
    const again = await stop({ ...wOwner.headers, cookie: `impersonation_session=${cookie}` })
    expect(again.status).toBe(200)
    expect(again.json).toEqual({ stopped: false, impersonation_ids: [], ended_at: null })
    expect(setCookie(again)).toContain("Max-Age=0")
    expect(await workspaceAuditRows(app, w.workspace_id, "impersonation.stopped")).toHaveLength(1)
  })

  it("a Dashboard session without the cookie (and without X-Workspace-Id) ends its own live impersonations only", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const a = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const other = await dashboardUser(app, { workspaceId: w.workspace_id, role: "admin" })
    const mine = await startFor(a, w)
    const theirs = await startFor(other, w)
    const res = await stop({ authorization: `Bearer ${a.token}` })
    expect(res.json).toMatchObject({ stopped: true, impersonation_ids: [mine.id] })
    const stored = await rows(w.environment_id)
    expect(stored.find((r) => r.id === theirs.id)!.ended_at).toBeNull()
  })

  it("someone else's cookie is not honoured; an API key may stop one of its Workspace; unauthenticated is 401", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const a = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const intruder = await dashboardUser(app, { workspaceId: w.workspace_id, role: "admin" })
    const { id, cookie } = await startFor(a, w)
    expect((await stop({ ...intruder.headers, cookie: `impersonation_session=${cookie}` })).json.stopped).toBe(false)
    const foreignKey = (await app.bootstrap()).api_key
    expect(
      (await stop({ authorization: `Bearer ${foreignKey}`, cookie: `impersonation_session=${cookie}` })).json.stopped,
    ).toBe(false)
    expect((await stop({ authorization: `Bearer ${w.api_key}` })).json).toEqual({
      stopped: false,
      impersonation_ids: [],
      ended_at: null,
    })
    expectProblem(
      await app.request(app.config.managementHost, "/v1/impersonation/stop", {
        method: "POST",
        headers: { cookie: `impersonation_session=${cookie}` },
      }),
      401,
      "unauthorized",
    )
    expect((await rows(w.environment_id))[0]!.ended_at).toBeNull()
    const res = await stop({ authorization: `Bearer ${w.api_key}`, cookie: `impersonation_session=${cookie}` })
    expect(res.json).toMatchObject({ stopped: true, impersonation_ids: [id] })
  })

  it("race: 6 concurrent stops of one impersonation end it once", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const a = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const { cookie } = await startFor(a, w)
    const results = await Promise.all(
      Array.from({ length: 6 }, () => stop({ ...a.headers, cookie: `impersonation_session=${cookie}` })),
    )
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(200))
    expect(results.filter((r) => r.json.stopped)).toHaveLength(1)
    expect(await workspaceAuditRows(app, w.workspace_id, "impersonation.stopped")).toHaveLength(1)
  })

  it("an expired impersonation is already over: stop answers stopped false", async () => {
    const w = await app.bootstrap()
    await setImpersonation(w, true)
    const a = await dashboardUser(app, { workspaceId: w.workspace_id, role: "owner" })
    const { cookie } = await startFor(a, w)
    await app.advance("10 minutes")
    expect((await stop({ ...a.headers, cookie: `impersonation_session=${cookie}` })).json).toEqual({
      stopped: false,
      impersonation_ids: [],
      ended_at: null,
    })
  })
})

describe("token claims sanity", () => {
  it("the access token never names the impersonated user's email", async () => {
    const user = await newUser()
    const res = await start(owner.headers, { user_id: user.id, reason: REASON, duration_minutes: 2 })
    expect(JSON.stringify(claimsOf(res.json.access_token))).not.toContain(user.email)
  })
})
