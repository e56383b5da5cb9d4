import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { query } from "../passkeys/support/helpers.js"
import { addVirtualAuthenticator, captureScreen, codeFromDevMailbox, consoleOrigin } from "./support.js"

// The console signs its users in through the service itself (docs/decisions/admin-console.md):
// Chromium drives the real server: the console's sign-in sends the browser to the platform
// Environment's Hosted Login, the code comes from the development mailbox, a passkey is created
// with a virtual authenticator, and sign-out ends both the Dashboard session and the login session.

let app: TestApp
let browser: Browser

beforeAll(async () => {
  app = await startApp({ worker: true })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await app?.close()
})

it("first Owner: Email OTP from the development mailbox, a passkey, a Workspace; sign-out revokes both sessions; passkey sign-in", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const cspViolations: Array<string> = []
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text())
  })
  const { cdp, authenticatorId } = await addVirtualAuthenticator(context, page)
  const email = "first-owner@example.com"
  try {
    const landing = await page.goto(`${consoleOrigin(app)}/console/`)
    expect(landing!.headers()["content-security-policy"]).toContain("script-src 'self'")
    expect(landing!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'")
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()
    await captureScreen(page, "sign-in")

    // 1. Sign in: the platform Environment's Hosted Login, Email OTP, then a passkey.
    await page.getByRole("link", { name: "Sign in" }).click()
    await page.waitForURL((u) => u.pathname === "/login")
    const interactionDomain = new URL(page.url()).host
    expect(interactionDomain).toMatch(/^env-[a-z2-7]{32}\.login\.localhost:\d+$/)
    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    await page.getByLabel("Code", { exact: true }).waitFor()
    const code = await codeFromDevMailbox(context, interactionDomain, email)
    await page.getByLabel("Code", { exact: true }).fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    await page.getByRole("button", { name: "Create a passkey" }).click()
    await page.waitForURL((u) => u.host === app.config.managementHost && u.pathname === "/console/")
    await page.getByRole("heading", { name: "Create a Workspace" }).waitFor()

    const cookie = (await context.cookies(consoleOrigin(app))).find((c) => c.name === "dashboard_session")!
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", secure: false, path: "/" })
    expect(cookie.value).toMatch(/^dsh_/)
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId })
    expect(credentials).toHaveLength(1)
    const [owner] = await query<{ id: string }>(app, "select id from platform_users where email = $1", [email])
    expect(owner).toBeDefined()
    await captureScreen(page, "create-workspace")

    // 2. The first Workspace: its creator is the Owner.
    await page.getByLabel("Name", { exact: true }).fill("Acme")
    await page.getByRole("button", { name: "Create Workspace" }).click()
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    const session = await page.evaluate(() => fetch("/console/api/session").then((r) => r.json()))
    expect(session).toMatchObject({ email, workspaces: [{ name: "Acme", role: "owner" }] })

    // 3. Sign out: the Dashboard session and the platform login session are both revoked.
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("heading", { name: "Sign in to the console" }).waitFor()
    const dashboard = await query<{ revoked_at: Date | null }>(
      app,
      "select revoked_at from dashboard_sessions where platform_user_id = $1",
      [owner!.id],
    )
    expect(dashboard.map((d) => d.revoked_at !== null)).toEqual([true])
    const login = await query<{ revoked_at: Date | null; revoked_reason: string | null }>(
      app,
      "select s.revoked_at, s.revoked_reason from login_sessions s join console_sessions c on c.login_session_id = s.id",
    )
    expect(login).toHaveLength(1)
    expect(login[0]).toMatchObject({ revoked_reason: "user_logout" })
    expect(login[0]!.revoked_at).not.toBeNull()
    const stale = await app.request(app.config.managementHost, "/console/api/session", {
      headers: { cookie: `dashboard_session=${cookie.value}` },
    })
    expect(stale.status).toBe(401)

    // 4. Sign in again with the passkey alone: no email typed, no code.
    await page.getByRole("link", { name: "Sign in" }).click()
    await page.waitForURL((u) => u.pathname === "/login")
    await page.getByRole("button", { name: "Sign in with a passkey" }).click()
    await page.waitForURL((u) => u.host === app.config.managementHost && u.pathname.startsWith("/console/"))
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    await page.getByText(email).waitFor()
    await captureScreen(page, "projects")
    expect(cspViolations).toEqual([])
  } finally {
    await context.close()
  }
}, 120_000)
