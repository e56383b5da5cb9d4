import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseConfig } from "../../src/platform/config.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { runCliJson, runEntry } from "../support/processes.js"
import { sqlRows } from "../webhooks/support.js"

const DASHBOARD = "https://dashboard.example.com"

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp({ env: { DASHBOARD_ORIGINS: `${DASHBOARD}, http://localhost:5173` } })
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const cliEnv = () => ({
  DATABASE_URL: app.databaseUrl,
  MASTER_KEY: Buffer.from(app.config.masterKey!).toString("base64url"),
  PORT: String(app.port),
})
let n = 0
const email = (label: string) => `${label}.${process.pid}.${++n}@dashboard.example`

/** A platform user (Owner of `b`'s Workspace) and a Dashboard session, made by the operator commands. */
const signIn = async (label: string, workspace: string | undefined = b.workspace_id) => {
  const address = email(label)
  const user = await runCliJson(
    [
      "platform-user",
      "create",
      "--email",
      address,
      ...(workspace ? ["--workspace", workspace, "--role", "owner"] : []),
    ],
    cliEnv(),
  )
  expect(user.code, user.stderr).toBe(0)
  const session = await runCliJson(["dashboard-session", "create", "--email", address], cliEnv())
  expect(session.code, session.stderr).toBe(0)
  return { user: user.json!, session: session.json! }
}

const workspaceCount = async () =>
  (await sqlRows<{ n: number }>(app, "select count(*)::int as n from workspaces"))[0]!.n

const createWorkspace = (headers: Record<string, string>, body: unknown = { name: "Cookie Corp" }) =>
  app.request(app.config.managementHost, "/v1/workspaces", { method: "POST", body, headers })

describe("operator commands: platform users and Dashboard sessions", () => {
  it("--help of each command, exit 0, nothing touched", async () => {
    for (const command of [
      ["platform-user", "create"],
      ["dashboard-session", "create"],
    ]) {
      const out = await runEntry("src/cli.ts", [...command, "--help"], {})
      expect(out.code).toBe(0)
      expect(out.stdout).toContain(`usage: npm run cli -- ${command.join(" ")}`)
    }
  }, 60_000)

  it("platform-user create prints JSON; the session it signs in reaches POST /workspaces, members and impersonation", async () => {
    const { user, session } = await signIn("owner")
    expect(user).toEqual({
      platform_user_id: expect.stringMatching(/^usr_[a-z2-7]{32}$/),
      email: expect.any(String),
      workspace_id: b.workspace_id,
      role: "owner",
    })
    expect(session).toEqual({
      platform_user_id: user["platform_user_id"],
      dashboard_session: expect.stringMatching(/^dsh_[A-Za-z0-9_-]{43}$/),
      expires_at: new Date(Date.parse(session["expires_at"])).toISOString(),
      management_url: `http://${app.config.managementHost}`,
      set_cookie: `dashboard_session=${session["dashboard_session"]}; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict`,
    })
    const cookie = `dashboard_session=${session["dashboard_session"]}`
    const created = await createWorkspace({ cookie, origin: DASHBOARD })
    expect(created.status, created.text).toBe(201)
    const members = await app.request(app.config.managementHost, `/v1/workspaces/${b.workspace_id}/members`, {
      headers: { cookie, "x-workspace-id": b.workspace_id },
    })
    expect(members.status, members.text).toBe(200)
    expect(JSON.stringify(members.json)).toContain(user["platform_user_id"])
    // Impersonation: Owner Dashboard sessions only.
    expect(
      (
        await app.management(`/v1/environments/${b.environment_id}/settings`, {
          method: "PATCH",
          body: { impersonation_enabled: true },
        })
      ).status,
    ).toBe(200)
    const target = await app.management(`/v1/users?environment_id=${b.environment_id}`, {
      body: { email: email("target"), name: "Grace" },
    })
    expect(target.status).toBe(201)
    const impersonation = await app.request(
      app.config.managementHost,
      `/v1/impersonation?environment_id=${b.environment_id}`,
      {
        method: "POST",
        headers: { cookie, origin: DASHBOARD, "x-workspace-id": b.workspace_id },
        body: { user_id: target.json.id, reason: "Ticket #1: cannot see invoices", duration_minutes: 5 },
      },
    )
    expect(impersonation.status, impersonation.text).toBe(201)
  }, 60_000)

  it("refusals change nothing: an existing email, an unknown Workspace, a bad role, a session for nobody", async () => {
    const { user } = await signIn("dup")
    const users = async () => (await sqlRows<{ n: number }>(app, "select count(*)::int as n from platform_users"))[0]!.n
    const before = await users()
    const again = await runEntry(
      "src/cli.ts",
      ["platform-user", "create", "--email", user["email"], "--json"],
      cliEnv(),
    )
    expect([again.code, again.stdout]).toEqual([1, ""])
    expect(again.stderr).toContain("exists already")
    const unknown = await runEntry(
      "src/cli.ts",
      ["platform-user", "create", "--email", email("x"), "--workspace", "wsp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"],
      cliEnv(),
    )
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      1,
      "authservice cli: No Workspace wsp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ])
    const role = await runEntry(
      "src/cli.ts",
      ["platform-user", "create", "--email", email("x"), "--workspace", b.workspace_id, "--role", "root"],
      cliEnv(),
    )
    expect([role.code, role.stderr]).toEqual([2, expect.stringContaining("--role must be one of owner, admin, member")])
    const nobody = await runEntry("src/cli.ts", ["dashboard-session", "create", "--email", email("nobody")], cliEnv())
    expect([nobody.code, nobody.stderr]).toEqual([1, expect.stringContaining("No platform user")])
    expect(await users()).toBe(before)
  }, 120_000)
})

describe("dashboard_session cookie: CSRF checks on unsafe methods", () => {
  let cookie: string
  let bearer: string
  beforeAll(async () => {
    const { session } = await signIn("csrf", undefined)
    cookie = `dashboard_session=${session["dashboard_session"]}`
    bearer = `Bearer ${session["dashboard_session"]}`
  }, 60_000)

  it("a cookie write without Origin, from a foreign Origin, or with a non-JSON body is 403 forbidden and creates nothing", async () => {
    const before = await workspaceCount()
    for (const headers of [
      { cookie },
      { cookie, origin: "https://evil.example" },
      { cookie, origin: "null" },
      { cookie, origin: `http://${app.config.managementHost}` }, // not listed in DASHBOARD_ORIGINS here
      { cookie, origin: DASHBOARD, "content-type": "text/plain" },
      { cookie, origin: DASHBOARD, "content-type": "application/x-www-form-urlencoded" },
    ]) {
      const body =
        headers["content-type"] === "application/x-www-form-urlencoded" ? "name=Evil" : JSON.stringify({ name: "Evil" })
      const res = await createWorkspace(headers, body)
      expect([res.status, res.json?.code], JSON.stringify(headers)).toEqual([403, "forbidden"])
      expect(res.headers["content-type"]).toContain("application/problem+json")
    }
    expect(await workspaceCount()).toBe(before)
  })

  it("from a listed Origin with JSON it is accepted; reads need no Origin; a Bearer session needs neither check", async () => {
    const before = await workspaceCount()
    expect((await createWorkspace({ cookie, origin: DASHBOARD })).status).toBe(201)
    expect(
      (
        await createWorkspace({
          cookie,
          origin: "http://localhost:5173",
          "content-type": "application/json; charset=utf-8",
        })
      ).status,
    ).toBe(201)
    expect((await createWorkspace({ authorization: bearer })).status).toBe(201)
    expect(await workspaceCount()).toBe(before + 3)
    const member = (await signIn("reader")).session
    const read = await app.request(app.config.managementHost, `/v1/workspaces/${b.workspace_id}`, {
      headers: { cookie: `dashboard_session=${member["dashboard_session"]}`, "x-workspace-id": b.workspace_id },
    })
    expect(read.status).toBe(200)
  }, 60_000)

  it("a bodiless cookie write (POST /impersonation/stop) also needs the Origin", async () => {
    const stop = (headers: Record<string, string>) =>
      app.request(app.config.managementHost, "/v1/impersonation/stop", { method: "POST", headers })
    const refused = await stop({ cookie, "x-workspace-id": b.workspace_id })
    expect([refused.status, refused.json.code]).toEqual([403, "forbidden"])
  })

  it("the OpenAPI document offers the Dashboard session as bearer and as cookie, with the cookie's CSRF rule", async () => {
    const doc = (await app.management("/v1/openapi.json")).json
    expect(doc.components.securitySchemes.dashboardCookie).toMatchObject({
      type: "apiKey",
      in: "cookie",
      name: "dashboard_session",
    })
    expect(doc.components.securitySchemes.dashboardCookie.description).toContain("DASHBOARD_ORIGINS")
    expect(doc.paths["/v1/workspaces/{workspaceId}"].get.security).toEqual([
      { apiKey: [] },
      { dashboardSession: [] },
      { dashboardCookie: [] },
    ])
  })

  it("DASHBOARD_ORIGINS: default is the Management host's origin; a bad entry stops the process with one line naming it", () => {
    expect(parseConfig({}).dashboardOrigins).toEqual(["http://api.localhost:3000"])
    expect(
      parseConfig({ DASHBOARD_ORIGINS: "https://a.example.com,https://b.example.com:8443" }).dashboardOrigins,
    ).toEqual(["https://a.example.com", "https://b.example.com:8443"])
    for (const bad of [
      "https://a.example.com/path",
      "http://dashboard.example.com",
      "dashboard.example.com",
      "https://",
    ]) {
      expect(() => parseConfig({ DASHBOARD_ORIGINS: bad })).toThrow(/DASHBOARD_ORIGINS must list origins/)
    }
  })
})
