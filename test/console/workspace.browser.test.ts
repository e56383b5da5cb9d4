import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as oidc from "openid-client"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { captureScreen, codeFromDevMailbox, consoleOrigin, signInByEmail } from "./support.js"

// Chromium against the real server: the Owner creates Workspaces and switches between them,
// invites a Member, creates a Project, an Environment and a Client (secret shown once), and an
// app connected with the panel's openid-client recipe signs a user in through that Client. The
// Member is refused the Owner's actions in the UI (controls disabled, the API's 403 shown).

let app: TestApp
let browser: Browser
let callbackServer: Server
let appBase: string

beforeAll(async () => {
  app = await startApp({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  callbackServer = createServer((req, res) => {
    if (req.url === "/users.csv") {
      res.writeHead(200, { "content-type": "text/csv" })
      return void res.end("email,name\r\nimported@example.com,Imported One\r\nnot-an-address,Broken\r\n")
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end("<!doctype html><title>App callback</title><p>ok</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  appBase = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
})

it("Workspaces, members, a Project, Environment and Client; the connected app signs a user in; the console blocks them (refresh refused, user.blocked delivered); API key created and revoked; domain, audit, usage, environment settings with the theme previewed live, a generic OIDC connection confirmed by the Owner, impersonation started and stopped, a CSV import with its row errors; a Member is refused Owner-only actions", async () => {
  const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await ownerContext.newPage()
  try {
    await signInByEmail(app, ownerContext, page, "owner@example.com", "Create a Workspace")
    await page.getByLabel("Name", { exact: true }).fill("Acme")
    await page.getByRole("button", { name: "Create Workspace" }).click()
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()

    // A second Workspace from the switcher, then back to the first.
    await page.getByLabel("Workspace").selectOption({ label: "+ Create Workspace" })
    await page.getByLabel("Name", { exact: true }).fill("Beta")
    await page.getByRole("button", { name: "Create Workspace" }).click()
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    expect(await page.getByLabel("Workspace").locator("option:checked").innerText()).toBe("Beta (owner)")
    await page.getByLabel("Workspace").selectOption({ label: "Acme (owner)" })
    await page.waitForURL((u) => /^\/console\/w\/wsp_[a-z2-7]{32}\/apps$/.test(u.pathname))
    const acme = /wsp_[a-z2-7]{32}/.exec(page.url())![0]

    // Members: invite a Member.
    await page.getByRole("link", { name: "Members" }).click()
    await page.getByRole("heading", { name: "Members of Acme" }).waitFor()
    await page.getByLabel("Email address").fill("member@example.com")
    await page.getByRole("button", { name: "Send invitation" }).click()
    await page.getByRole("cell", { name: "member@example.com" }).waitFor()
    await captureScreen(page, "members")

    // A Project, an Environment and a server-side Client.
    await page.getByRole("link", { name: "Projects and apps" }).click()
    await page.getByLabel("New project name").fill("Shop")
    await page.getByRole("button", { name: "Create project" }).click()
    await page.getByLabel("New environment name").fill("Staging")
    await page.getByRole("button", { name: "Create environment" }).click()
    await page.getByRole("heading", { name: "Register a client" }).waitFor()
    await page.getByLabel("Client name").fill("Shop backend")
    // The API's refusal is shown beside the field it concerns.
    await page.getByLabel(/^Redirect URIs/).fill("http://shop.example.com/callback")
    await page.getByRole("button", { name: "Create client" }).click()
    const fieldError = page.locator(".field", { has: page.getByLabel(/^Redirect URIs/) }).getByRole("alert")
    await fieldError.waitFor()
    expect(await fieldError.innerText()).toMatch(/^redirect_uris\[0\] may use http only for localhost or 127\.0\.0\.1/)
    await page.getByLabel(/^Redirect URIs/).fill(`${appBase}/callback`)
    await page.getByRole("button", { name: "Create client" }).click()
    const secret = await page.locator("code.secret").innerText()
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const facts = page.getByRole("region", { name: "Connect your app" })
    const issuer = await facts.locator("dt:text('Issuer') + dd").innerText()
    const clientId = await facts.locator("dt:text('Client ID') + dd").innerText()
    expect(await facts.locator("dt:text('Discovery URL') + dd").innerText()).toBe(
      `${issuer}/.well-known/openid-configuration`,
    )
    expect(await facts.locator("pre").first().innerText()).toContain(
      `client.discovery(new URL("${issuer}"), "${clientId}"`,
    )
    await captureScreen(page, "apps-client-created")

    // The app, connected with the panel's recipe (openid-client), signs a user in through the new Client.
    const config = await oidc.discovery(new URL(issuer), clientId, undefined, oidc.ClientSecretBasic(secret), {
      execute: [oidc.allowInsecureRequests],
    })
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const userPage = await ownerContext.newPage()
    await userPage.goto(
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: `${appBase}/callback`,
        scope: "openid email offline_access",
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      }).href,
    )
    await userPage.getByLabel("Email address").fill("shopper@example.com")
    await userPage.getByRole("button", { name: "Continue with email" }).click()
    await userPage.getByLabel("Code", { exact: true }).waitFor()
    await userPage
      .getByLabel("Code", { exact: true })
      .fill(await codeFromDevMailbox(ownerContext, new URL(userPage.url()).host, "shopper@example.com"))
    await userPage.getByRole("button", { name: "Verify" }).click()
    await userPage.getByRole("button", { name: "Not now" }).click()
    await userPage.waitForURL((u) => u.pathname === "/callback")
    const tokens = await oidc.authorizationCodeGrant(config, new URL(userPage.url()), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    expect(tokens.claims()).toMatchObject({ iss: issuer, aud: clientId, email: "shopper@example.com" })
    expect(tokens.refresh_token).toBeDefined()
    const environmentLabel = "Shop / Staging (test)"

    // A webhook for user.blocked to the app's receiver; its signing secret is shown once.
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByLabel("Endpoint URL").fill(`${appBase}/hooks`)
    await page.getByRole("button", { name: "Add endpoint" }).click()
    expect(await page.locator("code.secret").innerText()).not.toBe("")

    // Users: search, open the shopper, block them (confirmed); the app's next refresh is refused.
    await page.getByRole("link", { name: "Users" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByLabel("Search by email or name").fill("shopper")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.getByRole("button", { name: "shopper@example.com" }).click()
    const detail = page.getByRole("region", { name: "User shopper@example.com" })
    await detail.waitFor()
    await captureScreen(page, "user-detail")
    await detail.getByRole("button", { name: "Block" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Block" }).click()
    await detail.locator("dt:text('Status') + dd").filter({ hasText: "blocked" }).waitFor()
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!).then(
      () => "refreshed",
      (e: { error?: string }) => e.error,
    )
    expect(refreshed).toBe("access_denied") // spec, OAuth errors: a blocked user

    // The delivery log shows the user.blocked event delivered to the receiver.
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByRole("button", { name: `${appBase}/hooks` }).click()
    const delivered = page.getByRole("row").filter({ hasText: "user.blocked" }).filter({ hasText: "delivered" })
    for (let i = 0; i < 100 && (await delivered.count()) === 0; i++) {
      await page.getByRole("button", { name: "Refresh" }).click()
      await page.waitForTimeout(200)
    }
    expect(await delivered.first().innerText()).toMatch(
      /^user\.blocked\s+1\s+delivered\s+200\s+\d+ ms\s+\S+\s+evt_[a-z2-7]{32}\s+(▸ )?Details$/,
    )
    // The attempt's request and response, opened by keyboard (a disclosure button).
    const disclosure = delivered.first().getByRole("button", { name: "Details of attempt 1 of user.blocked" })
    await disclosure.focus()
    await page.keyboard.press("Enter")
    expect(await disclosure.getAttribute("aria-expanded")).toBe("true")
    const attempt = page.getByRole("region", { name: "Attempt 1 of user.blocked" })
    await attempt.waitFor()
    const shown = (caption: string) => attempt.getByRole("figure", { name: caption }).locator("pre").innerText()
    const requestHeaders = await shown("Request headers")
    expect(requestHeaders).toMatch(new RegExp(`^POST ${appBase}/hooks\n`))
    expect(requestHeaders).toMatch(/^x-auth-signature: v1=[0-9a-f]{64}$/m)
    expect(requestHeaders).toMatch(/^x-auth-timestamp: \d+$/m)
    expect(requestHeaders).toMatch(/^x-auth-event-id: evt_[a-z2-7]{32}$/m)
    // The signed envelope, pretty-printed.
    const envelope = JSON.parse(await shown("Request body"))
    expect(envelope).toMatchObject({ type: "user.blocked", payload: { reason: "admin_action" } })
    expect(await shown("Request body")).toContain('\n  "payload": {\n')
    expect(await attempt.getByText("HTTP 200").count()).toBe(1)
    expect(await shown("Response headers")).toMatch(/^content-type: text\/html; charset=utf-8$/m)
    expect(await shown("Response body")).toBe("<!doctype html><title>App callback</title><p>ok</p>")
    await captureScreen(page, "webhooks")
    await page.keyboard.press("Enter")
    expect(await disclosure.getAttribute("aria-expanded")).toBe("false")
    expect(await attempt.count()).toBe(0)

    // API keys: create (the secret shown once), then revoke after confirming.
    await page.getByRole("link", { name: "API keys" }).click()
    await page.getByLabel("Key name").fill("CI deploys")
    await page.getByRole("button", { name: "Create key" }).click()
    const apiKey = await page.locator("code.secret").innerText()
    expect(apiKey).toMatch(/^sk_live_/)
    expect((await app.management(`/v1/projects?workspace_id=${acme}`, { key: apiKey })).status).toBe(403)
    expect(
      (await app.management(`/v1/users?environment_id=${/env_[a-z2-7]{32}/.exec(issuer)![0]}`, { key: apiKey })).status,
    ).toBe(200)
    const keyRow = page.getByRole("row").filter({ hasText: "CI deploys" })
    await keyRow.getByRole("button", { name: "Revoke" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click()
    await keyRow.getByRole("cell", { name: "revoked" }).waitFor()
    expect(
      (await app.management(`/v1/users?environment_id=${/env_[a-z2-7]{32}/.exec(issuer)![0]}`, { key: apiKey })).status,
    ).toBe(401)
    await captureScreen(page, "api-keys")

    // Domains: the TXT record to create is shown for a new domain.
    await page.getByRole("link", { name: "Domains" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByLabel("Hostname").fill("login.shop.example.com")
    await page.getByRole("button", { name: "Add domain" }).click()
    const domain = page.getByRole("region", { name: "login.shop.example.com" })
    expect(await domain.locator("dt:text('TXT record name') + dd").innerText()).toBe(
      "_authservice-challenge.login.shop.example.com",
    )
    expect(await domain.locator("dt:text('Status') + dd").innerText()).toBe("pending")
    await captureScreen(page, "domains")

    // Audit: the block is recorded, found by its action.
    await page.getByRole("link", { name: "Audit" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByLabel("Action").fill("user.blocked")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page
      .getByRole("row")
      .filter({ hasText: "user.blocked" })
      .filter({ hasText: "workspace_member" })
      .first()
      .waitFor()
    await captureScreen(page, "audit")

    // Usage and billing: this month's MAU in the chart; billing is not configured in tests.
    await page.getByRole("link", { name: "Usage and billing" }).click()
    await page.getByText("Billing is not configured on this installation.").waitFor()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    const chart = page.getByRole("img", { name: /^Monthly active users: / })
    await chart.waitFor()
    expect(await chart.getAttribute("aria-label")).toMatch(new RegExp(`${new Date().toISOString().slice(0, 7)} 1$`))
    await captureScreen(page, "usage")

    // Environment settings: the impersonation switch, and the theme previewed live before it is saved.
    await page.getByRole("link", { name: "Environment settings" }).click()
    await page.getByLabel("Environment", { exact: true }).selectOption({ label: environmentLabel })
    const impersonation = page.getByLabel("Impersonation allowed")
    await impersonation.click()
    await expect.poll(() => impersonation.isChecked(), { timeout: 10_000 }).toBe(true)
    await page.getByLabel("Primary colour").fill("#7a1f5c")
    const previewButton = page.getByRole("figure", { name: "Hosted Login preview" }).getByText("Continue with email")
    expect(await previewButton.evaluate((e) => getComputedStyle(e).backgroundColor)).toBe("rgb(122, 31, 92)")
    await page.getByRole("button", { name: "Save theme" }).click()
    const themeUrl = `/v1/environments/${/env_[a-z2-7]{32}/.exec(issuer)![0]}/theme`
    await expect
      .poll(
        () =>
          page.evaluate(
            ([url, ws]) =>
              fetch(url!, { headers: { "x-workspace-id": ws! } })
                .then((r) => r.json())
                .then((t) => t.primary_color),
            [themeUrl, acme],
          ),
        { timeout: 10_000 },
      )
      .toBe("#7a1f5c")
    await captureScreen(page, "environment-settings")

    // Connections: the callback URL to register at the provider; a generic OIDC connection waits for the Owner.
    await page.getByRole("link", { name: "Connections" }).click()
    await page.getByLabel("Environment", { exact: true }).selectOption({ label: environmentLabel })
    await page.getByLabel("Provider", { exact: true }).selectOption("generic_oidc")
    await page.getByLabel("Key (a name for this connection)").fill("corp")
    await page.getByLabel("Issuer URL").fill("https://idp.example.com")
    await page.getByLabel("Provider client ID").fill("console-test")
    await page.getByLabel("Provider client secret").fill("s3cret-value")
    await page.getByRole("button", { name: "Add connection" }).click()
    const connection = page.getByRole("region", { name: "generic_oidc (corp)" })
    await connection.waitFor()
    expect(await connection.locator("dt:text('Callback URL') + dd code").innerText()).toMatch(/^http:\/\/.+\/callback/)
    await connection.getByRole("button", { name: "Confirm as Owner" }).click()
    await connection.locator("dt:text('Owner confirmed') + dd").filter({ hasText: "yes" }).waitFor()
    await captureScreen(page, "connections")

    // Impersonation (allowed above): unblock the shopper, start with a reason and a duration, then stop.
    await page.getByRole("link", { name: "Users" }).click()
    await page.getByLabel("Environment", { exact: true }).selectOption({ label: environmentLabel })
    await page.getByRole("button", { name: "shopper@example.com" }).click()
    await detail.getByRole("button", { name: "Unblock" }).click()
    await detail
      .locator("dt:text('Status') + dd")
      .filter({ hasText: /^active$/ })
      .waitFor()
    await page.getByLabel(/^Reason \(10 to 1000/).fill("short")
    await page.getByRole("button", { name: "Start impersonation" }).click()
    const reasonError = page.locator(".field", { has: page.getByLabel(/^Reason \(10 to 1000/) }).getByRole("alert")
    await reasonError.waitFor()
    expect(await reasonError.innerText()).toMatch(/^reason/)
    await page.getByLabel(/^Reason \(10 to 1000/).fill("Reproducing a checkout bug reported by this user")
    await page.getByRole("button", { name: "Start impersonation" }).click()
    const banner = page.getByRole("status", { name: "Impersonation" })
    await banner.waitFor()
    expect(await banner.innerText()).toContain("Impersonating shopper@example.com")
    await captureScreen(page, "impersonation")
    await banner.getByRole("button", { name: "Stop impersonation" }).click()
    await banner.waitFor({ state: "detached" })

    // Import: progress and the row errors of a CSV served by the app.
    await page.getByRole("link", { name: "Import", exact: true }).click()
    await page.getByLabel("Environment", { exact: true }).selectOption({ label: environmentLabel })
    await page.getByLabel("Source URL").fill(`${appBase}/users.csv`)
    await page.getByRole("button", { name: "Start import" }).click()
    const progress = page.getByRole("region", { name: "Import progress" }).getByRole("status")
    await progress.filter({ hasText: /^completed/ }).waitFor()
    expect(await progress.innerText()).toBe("completed: 2 of 2 rows (1 imported, 0 skipped, 1 failed)")
    await page
      .getByRole("region", { name: "Import progress" })
      .getByRole("row")
      .filter({ hasText: /invalid_field|invalid_row|missing_email/ })
      .waitFor()
    await captureScreen(page, "import")

    // The Member: Owner-only controls are disabled, and what the API refuses is shown.
    const memberContext = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const memberPage = await memberContext.newPage()
    try {
      await signInByEmail(app, memberContext, memberPage, "member@example.com", "Projects and apps")
      expect(await memberPage.getByLabel("Workspace").locator("option:checked").innerText()).toBe("Acme (member)")
      await memberPage.getByLabel("New project name").fill("Not mine")
      await memberPage.getByRole("button", { name: "Create project" }).click()
      const refused = memberPage.getByRole("alert").filter({ hasText: "Not allowed" })
      await refused.waitFor()
      expect(await refused.innerText()).toMatch(/^Not allowed: /)
      await memberPage.goto(`${consoleOrigin(app)}/console/w/${acme}/members`)
      await memberPage.getByRole("heading", { name: "Members of Acme" }).waitFor()
      expect(await memberPage.getByRole("button", { name: "Send invitation" }).isDisabled()).toBe(true)
      expect(await memberPage.getByLabel("Role of owner@example.com").isDisabled()).toBe(true)
      expect(await memberPage.getByRole("button", { name: "Remove" }).first().isDisabled()).toBe(true)
      await captureScreen(memberPage, "members-as-member")
      // The Member reads the delivery log, not an attempt's request and response (webhooks:write).
      await memberPage.goto(`${consoleOrigin(app)}/console/w/${acme}/webhooks`)
      await memberPage.getByLabel("Environment").selectOption({ label: environmentLabel })
      await memberPage.getByRole("button", { name: `${appBase}/hooks` }).click()
      await memberPage.getByRole("button", { name: "Details of attempt 1 of user.blocked" }).click()
      const notAllowed = memberPage.getByRole("alert").filter({ hasText: "Not allowed" })
      await notAllowed.waitFor()
      expect(await notAllowed.innerText()).toMatch(/^Not allowed: /)
    } finally {
      await memberContext.close()
    }
  } finally {
    await ownerContext.close()
  }
}, 180_000)
