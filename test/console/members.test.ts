import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createPlatformUser, mintDashboardSession } from "../../src/management/auth/dashboard.js"
import { Mailer } from "../../src/platform/mailer.js"
import { type TestApp, startApp } from "../support/app.js"

// Invitations and member roles, the console backend's Owner-only writes (docs/decisions/admin-console.md,
// "Members"), and a Member refused Owner-only actions by the console backend and by the Management API.

let app: TestApp
let owner: string
let workspaceId: string

const as = (token: string, workspace: string | undefined = workspaceId) => ({
  authorization: `Bearer ${token}`,
  ...(workspace === undefined ? {} : { "x-workspace-id": workspace }),
})

beforeAll(async () => {
  app = await startApp()
  const ownerId = await app.run(createPlatformUser("owner@example.com"))
  owner = await app.run(mintDashboardSession(ownerId))
  const created = await app.management("/v1/workspaces", {
    method: "POST",
    headers: as(owner, undefined),
    body: { name: "Acme" },
  })
  expect(created.status, created.text).toBe(201)
  workspaceId = created.json.id
}, 60_000)

afterAll(async () => {
  await app?.close()
})

const invite = (token: string, body: unknown) =>
  app.management("/console/api/invitations", { method: "POST", headers: as(token), body })

describe("invitations", () => {
  it("an Owner invites an address: it becomes a member with the role, and is mailed the console URL", async () => {
    const answer = await invite(owner, { email: "New.Admin@Example.com", role: "admin" })
    expect(answer.status, answer.text).toBe(201)
    expect(answer.json).toMatchObject({ email: "new.admin@example.com", role: "admin", invitation_mailed: true })
    const mail = (
      await app.run(
        Effect.gen(function* () {
          return (yield* Mailer).sent()
        }),
      )
    ).find((m) => m.to === "new.admin@example.com")
    expect(mail?.subject).toBe("You are invited to Acme")
    expect(mail?.text).toContain(`http://${app.config.managementHost}/console/`)
    const members = await app.management("/console/api/members", { headers: as(owner) })
    expect(members.json.data.map((m: { email: string; role: string }) => [m.email, m.role]).sort()).toEqual([
      ["new.admin@example.com", "admin"],
      ["owner@example.com", "owner"],
    ])
  })

  it("refuses an address that is already a member (409) and a malformed one (400), changing nothing", async () => {
    expect((await invite(owner, { email: "owner@example.com", role: "member" })).status).toBe(409)
    const bad = await invite(owner, { email: "not-an-address", role: "member" })
    expect(bad.status).toBe(400)
    expect(bad.json.code).toBe("invalid_request")
    expect((await invite(owner, { email: "x@example.com", role: "superuser" })).status).toBe(400)
    const members = await app.management("/console/api/members", { headers: as(owner) })
    expect(members.json.data).toHaveLength(2)
  })
})

describe("a Member is refused Owner-only actions", () => {
  let member: string
  let memberId: string
  beforeAll(async () => {
    const invited = await invite(owner, { email: "member@example.com", role: "member" })
    memberId = invited.json.platform_user_id
    member = await app.run(mintDashboardSession(memberId))
  })

  it("by the console backend: invitations, role changes and removals are 403", async () => {
    const refused = await invite(member, { email: "friend@example.com", role: "owner" })
    expect(refused.status).toBe(403)
    expect(refused.json.detail).toBe("Only an Owner of the Workspace can manage its members")
    expect(
      (
        await app.management(`/console/api/members/${memberId}`, {
          method: "PATCH",
          headers: as(member),
          body: { role: "owner" },
        })
      ).status,
    ).toBe(403)
    expect(
      (await app.management(`/console/api/members/${memberId}`, { method: "DELETE", headers: as(member) })).status,
    ).toBe(403)
    const [row] = (await app.management("/console/api/members", { headers: as(member) })).json.data.filter(
      (m: { platform_user_id: string }) => m.platform_user_id === memberId,
    )
    expect(row.role).toBe("member")
  })

  it("by the Management API: writes need scopes a Member does not hold (403 insufficient_scope)", async () => {
    const project = await app.management("/v1/projects", {
      method: "POST",
      headers: as(member),
      body: { workspace_id: workspaceId, name: "Nope" },
    })
    expect(project.status).toBe(403)
    expect(project.json.code).toBe("insufficient_scope")
    const rename = await app.management(`/v1/workspaces/${workspaceId}`, {
      method: "PATCH",
      headers: as(member),
      body: { name: "Mine" },
    })
    expect(rename.status).toBe(403)
    expect((await app.management("/v1/projects?workspace_id=" + workspaceId, { headers: as(member) })).status).toBe(200)
  })

  it("an Owner changes the role; the Workspace's last Owner can be neither demoted nor removed (409)", async () => {
    const promoted = await app.management(`/console/api/members/${memberId}`, {
      method: "PATCH",
      headers: as(owner),
      body: { role: "admin" },
    })
    expect(promoted.status, promoted.text).toBe(200)
    expect(promoted.json.role).toBe("admin")
    const ownerId = (await app.management("/console/api/session", { headers: as(owner, undefined) })).json
      .platform_user_id
    const demoteSelf = await app.management(`/console/api/members/${ownerId}`, {
      method: "PATCH",
      headers: as(owner),
      body: { role: "member" },
    })
    expect(demoteSelf.status).toBe(409)
    expect(
      (await app.management(`/console/api/members/${ownerId}`, { method: "DELETE", headers: as(owner) })).status,
    ).toBe(409)
  })
})

describe("the console backend's rules", () => {
  it("who is signed in needs a Dashboard session: none is 401, an API key is 403", async () => {
    expect((await app.management("/console/api/session")).status).toBe(401)
    const b = await app.bootstrap()
    expect(
      (await app.management("/console/api/session", { headers: { authorization: `Bearer ${b.api_key}` } })).status,
    ).toBe(403)
  })

  // A plain request: no API key of the suite's bootstrap is added.
  const byCookie = (path: string, token: string, options: { method?: "POST"; origin?: string } = {}) =>
    app.request(app.config.managementHost, path, {
      ...(options.method ? { method: options.method } : {}),
      headers: { cookie: `dashboard_session=${token}`, ...(options.origin ? { origin: options.origin } : {}) },
    })

  it("sign-out by cookie follows the dashboard CSRF rules: no dashboard Origin, 403 and the session lives on", async () => {
    const ownerId = (await app.management("/console/api/session", { headers: as(owner, undefined) })).json
      .platform_user_id
    const token = await app.run(mintDashboardSession(ownerId))
    const refused = await byCookie("/console/auth/logout", token, { method: "POST", origin: "http://evil.example" })
    expect(refused.status).toBe(403)
    expect((await byCookie("/console/auth/logout", token, { method: "POST" })).status).toBe(403)
    expect((await byCookie("/console/api/session", token)).status).toBe(200)
    const out = await byCookie("/console/auth/logout", token, {
      method: "POST",
      origin: `http://${app.config.managementHost}`,
    })
    expect(out.status).toBe(204)
    expect(String(out.headers["set-cookie"])).toMatch(/dashboard_session=; .*Max-Age=0.*HttpOnly.*SameSite=Strict/i)
    expect((await byCookie("/console/api/session", token)).status).toBe(401)
  })

  it("sign-in starts Authorization Code + PKCE S256 at the platform Environment, made once", async () => {
    const first = await app.management("/console/auth/login")
    const second = await app.management("/console/auth/login")
    expect(first.status).toBe(302)
    const url = new URL(String(first.headers["location"]))
    const again = new URL(String(second.headers["location"]))
    expect(url.pathname).toBe(again.pathname)
    expect(url.pathname).toMatch(/^\/e\/env_[a-z2-7]{32}\/oauth2\/authorize$/)
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: "code",
      code_challenge_method: "S256",
      scope: "openid email",
      redirect_uri: `http://${app.config.managementHost}/console/auth/callback`,
    })
    expect(url.searchParams.get("state")).not.toBe(again.searchParams.get("state"))
    expect(String(first.headers["set-cookie"])).toMatch(
      /^console_login=[A-Za-z0-9_-]{43}; Max-Age=600; Path=\/console\/auth; HttpOnly; SameSite=Lax$/,
    )
  })

  it("a callback whose state is not the browser's goes back to the console with state_mismatch, signing nobody in", async () => {
    const started = await app.management("/console/auth/login")
    const state = new URL(String(started.headers["location"])).searchParams.get("state")!
    const forged = await app.management(`/console/auth/callback?code=x&state=${state}`, {
      headers: { cookie: "console_login=someone-else" },
    })
    expect(forged.status).toBe(302)
    expect(forged.headers["location"]).toBe("/console/?signin_error=state_mismatch")
    expect(String(forged.headers["set-cookie"])).not.toContain("dashboard_session")
    const badCode = await app.management(`/console/auth/callback?code=not-a-code&state=${state}`, {
      headers: { cookie: `console_login=${state}` },
    })
    expect(badCode.headers["location"]).toBe("/console/?signin_error=code_exchange_failed")
  })
})
