import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createPlatformUser, mintDashboardSession } from "../../../src/management/auth/dashboard.js"
import { SCOPES } from "../../../src/tenancy/scopes.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { snapshot } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { seedIdentity, seedPasskey, seedSession } from "../support/seed.js"

let app: TestApp
let a: Bootstrapped
let b: Bootstrapped
let userA: string
let userB: string
let sessionB: string
let identityB: string
let passkeyB: string
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
  b = await app.bootstrap()
  userA = (
    await app.management("/v1/users", {
      method: "POST",
      body: { environment_id: a.environment_id, email: "alice@tenant-a.example", name: "Shared Name" },
    })
  ).json.id
  userB = (
    await app.management("/v1/users", {
      method: "POST",
      key: b.api_key,
      body: { environment_id: b.environment_id, email: "bob@tenant-b.example", name: "Shared Name" },
    })
  ).json.id
  const ownerB = { workspaceId: b.workspace_id, environmentId: b.environment_id, userId: userB }
  sessionB = await seedSession(app, ownerB)
  identityB = await seedIdentity(app, ownerB)
  passkeyB = (await seedPasskey(app, ownerB)).id
})
afterAll(async () => {
  await app?.close()
})

/** Every user route, addressed at user `u` with sub-resources `ids`. */
const routes = (u: string, ids: { session: string; identity: string; passkey: string }) =>
  [
    { method: "GET", path: `/v1/users/${u}`, scope: "users:read" },
    { method: "PATCH", path: `/v1/users/${u}`, scope: "users:write", body: { name: "hijacked" } },
    { method: "DELETE", path: `/v1/users/${u}`, scope: "users:delete" },
    { method: "POST", path: `/v1/users/${u}/block`, scope: "users:block" },
    { method: "POST", path: `/v1/users/${u}/unblock`, scope: "users:block" },
    { method: "GET", path: `/v1/users/${u}/identities`, scope: "user_identities:read" },
    { method: "DELETE", path: `/v1/users/${u}/identities/${ids.identity}`, scope: "user_identities:write" },
    { method: "GET", path: `/v1/users/${u}/passkeys`, scope: "user_passkeys:read" },
    { method: "DELETE", path: `/v1/users/${u}/passkeys/${ids.passkey}`, scope: "user_passkeys:write" },
    { method: "GET", path: `/v1/users/${u}/sessions`, scope: "user_sessions:read" },
    { method: "DELETE", path: `/v1/users/${u}/sessions/${ids.session}`, scope: "user_sessions:write" },
    { method: "DELETE", path: `/v1/users/${u}/sessions`, scope: "user_sessions:write" },
  ] as Array<{ method: string; path: string; scope: string; body?: unknown }>

describe("tenant isolation", () => {
  it("a key of Workspace A reaches nothing of Workspace B: every route 404, nothing changes", async () => {
    const before = await snapshot(app, b.environment_id)
    for (const r of routes(userB, { session: sessionB, identity: identityB, passkey: passkeyB })) {
      // B's Environment named explicitly: the Environment itself is invisible
      const viaB = await app.management(`${r.path}?environment_id=${b.environment_id}`, {
        method: r.method,
        ...(r.body ? { body: r.body } : {}),
      })
      expectProblem(viaB, 404, "not_found")
      // A's own Environment: B's user does not exist there
      const viaA = await app.management(`${r.path}?environment_id=${a.environment_id}`, {
        method: r.method,
        ...(r.body ? { body: r.body } : {}),
      })
      expectProblem(viaA, 404, "user_not_found")
    }
    expectProblem(await app.management(`/v1/users?environment_id=${b.environment_id}`), 404, "not_found")
    expectProblem(
      await app.management("/v1/users", {
        method: "POST",
        body: { environment_id: b.environment_id, email: "x@tenant-b.example" },
      }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/audit-events?environment_id=${b.environment_id}`), 404, "not_found")
    expect(await snapshot(app, b.environment_id)).toEqual(before)
  })

  it("A's sub-resource routes never reach B's identities, passkeys or sessions", async () => {
    const before = await snapshot(app, b.environment_id)
    for (const r of routes(userA, { session: sessionB, identity: identityB, passkey: passkeyB }).filter((r) =>
      /identities\/|passkeys\/|sessions\//.test(r.path),
    )) {
      const res = await app.management(`${r.path}?environment_id=${a.environment_id}`, { method: r.method })
      expect(res.status).toBe(404)
    }
    expect(await snapshot(app, b.environment_id)).toEqual(before)
  })

  it("lists never leak another tenant's users or audit events, even by search", async () => {
    const list = await app.management(`/v1/users?environment_id=${a.environment_id}&search=shared`)
    expect(list.json.data.map((u: { id: string }) => u.id)).toEqual([userA])
    const all = await app.management(`/v1/users?environment_id=${a.environment_id}&limit=100`)
    expect(all.text).not.toContain(userB)
    expect(all.text).not.toContain("tenant-b")
    const audit = await app.management(`/v1/audit-events?environment_id=${a.environment_id}&limit=100`)
    expect(audit.status).toBe(200)
    expect(audit.json.data.length).toBeGreaterThan(0)
    expect(
      audit.json.data.every(
        (e: { workspace_id: string; environment_id: string }) =>
          e.workspace_id === a.workspace_id && e.environment_id === a.environment_id,
      ),
    ).toBe(true)
    expect(audit.text).not.toContain(userB)
  })

  it("a key pinned to one Environment gets 404 for another Environment of its own Workspace", async () => {
    const second = await makeEnvironment(app, a.workspace_id, a.project_id)
    const pinned = await makeKey(app, { workspaceId: a.workspace_id, environmentId: a.environment_id, scopes: SCOPES })
    const inSecond = (
      await app.management("/v1/users", {
        method: "POST",
        body: { environment_id: second, email: "second@tenant-a.example" },
      })
    ).json.id
    expect(
      (await app.management(`/v1/users/${userA}?environment_id=${a.environment_id}`, { key: pinned })).status,
    ).toBe(200)
    expectProblem(
      await app.management(`/v1/users/${inSecond}?environment_id=${second}`, { key: pinned }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/users?environment_id=${second}`, { key: pinned }), 404, "not_found")
    expectProblem(
      await app.management(`/v1/users/${inSecond}/block?environment_id=${second}`, { method: "POST", key: pinned }),
      404,
      "not_found",
    )
    expectProblem(
      await app.management("/v1/users", {
        method: "POST",
        key: pinned,
        body: { environment_id: second, email: "p@tenant-a.example" },
      }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/audit-events?environment_id=${second}`, { key: pinned }), 404, "not_found")
    // the pinned key, addressing its own Environment, cannot see a user of the other one either
    expectProblem(
      await app.management(`/v1/users/${inSecond}?environment_id=${a.environment_id}`, { key: pinned }),
      404,
      "user_not_found",
    )
  })
})

describe("scopes", () => {
  const subIds = async () => {
    const owner = { workspaceId: a.workspace_id, environmentId: a.environment_id, userId: userA }
    return {
      session: await seedSession(app, owner),
      identity: await seedIdentity(app, owner),
      passkey: (await seedPasskey(app, owner)).id,
    }
  }

  it("each route needs its own scope (403 insufficient_scope without it, nothing changes); :write never implies :read", async () => {
    const ids = await subIds()
    const allRoutes = [
      ...routes(userA, ids),
      { method: "GET", path: "/v1/users", scope: "users:read" },
      {
        method: "POST",
        path: "/v1/users",
        scope: "users:write",
        body: { environment_id: a.environment_id, email: "scoped@tenant-a.example" },
      },
      { method: "GET", path: "/v1/audit-events", scope: "audit_events:read" },
    ]
    const before = await snapshot(app, a.environment_id)
    for (const r of allRoutes) {
      const others = SCOPES.filter((s) => s !== r.scope)
      const key = await makeKey(app, { workspaceId: a.workspace_id, scopes: others })
      const res = await app.management(`${r.path}?environment_id=${a.environment_id}`, {
        method: r.method,
        key,
        ...(r.body ? { body: r.body } : {}),
      })
      expectProblem(res, 403, "insufficient_scope")
    }
    expect(await snapshot(app, a.environment_id)).toEqual(before)
    const writeOnly = await makeKey(app, {
      workspaceId: a.workspace_id,
      scopes: ["users:write", "user_sessions:write", "user_identities:write", "user_passkeys:write"],
    })
    for (const path of [
      `/v1/users/${userA}`,
      "/v1/users",
      `/v1/users/${userA}/sessions`,
      `/v1/users/${userA}/identities`,
      `/v1/users/${userA}/passkeys`,
    ]) {
      expectProblem(
        await app.management(`${path}?environment_id=${a.environment_id}`, { key: writeOnly }),
        403,
        "insufficient_scope",
      )
    }
  })

  it("a key holding only the route's scope may call it", async () => {
    const ids = await subIds()
    const only = async (scope: string) => makeKey(app, { workspaceId: a.workspace_id, scopes: [scope] })
    const readOnly = await only("users:read")
    expect((await app.management(`/v1/users?environment_id=${a.environment_id}`, { key: readOnly })).status).toBe(200)
    expect(
      (
        await app.management(`/v1/users/${userA}/sessions/${ids.session}?environment_id=${a.environment_id}`, {
          method: "DELETE",
          key: await only("user_sessions:write"),
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await app.management(`/v1/users/${userA}/block?environment_id=${a.environment_id}`, {
          method: "POST",
          key: await only("users:block"),
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await app.management(`/v1/users/${userA}/unblock?environment_id=${a.environment_id}`, {
          method: "POST",
          key: await only("users:block"),
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await app.management(`/v1/audit-events?environment_id=${a.environment_id}`, {
          key: await only("audit_events:read"),
        })
      ).status,
    ).toBe(200)
  })

  it("without credentials: 401 unauthorized", async () => {
    const res = await app.request(app.config.managementHost, `/v1/users?environment_id=${a.environment_id}`)
    expectProblem(res, 401, "unauthorized")
  })

  it("Dashboard sessions: a Member reads but cannot write; an Admin writes", async () => {
    const member = await app.run(
      createPlatformUser("member@dash.example", { workspaceId: a.workspace_id, role: "member" }),
    )
    const admin = await app.run(
      createPlatformUser("admin@dash.example", { workspaceId: a.workspace_id, role: "admin" }),
    )
    const memberToken = await app.run(mintDashboardSession(member))
    const adminToken = await app.run(mintDashboardSession(admin))
    const as = (token: string) => ({ authorization: `Bearer ${token}`, "x-workspace-id": a.workspace_id })
    expect(
      (
        await app.request(app.config.managementHost, `/v1/users/${userA}?environment_id=${a.environment_id}`, {
          headers: as(memberToken),
        })
      ).status,
    ).toBe(200)
    expectProblem(
      await app.request(app.config.managementHost, `/v1/users/${userA}?environment_id=${a.environment_id}`, {
        method: "PATCH",
        headers: as(memberToken),
        body: { name: "member edit" },
      }),
      403,
      "insufficient_scope",
    )
    const edited = await app.request(
      app.config.managementHost,
      `/v1/users/${userA}?environment_id=${a.environment_id}`,
      {
        method: "PATCH",
        headers: as(adminToken),
        body: { name: "admin edit" },
      },
    )
    expect(edited.status).toBe(200)
    const [audit] = (
      await app.management(
        `/v1/audit-events?environment_id=${a.environment_id}&action=user.updated&subject_id=${userA}`,
      )
    ).json.data
    expect(audit).toMatchObject({ actor_type: "workspace_member", actor_id: admin })
  })
})
