import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { signatureOf } from "../../src/webhooks/delivery/signing.js"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { ownerWithEnvironment } from "./support.js"

// Chromium against the real server: a Client's secret rotated (the new one shown once, the old
// one refused at the token endpoint), a webhook's test sent and its secret rotated (the next
// delivery signed with the new one), a stale ETag provoked from two tabs (the conflict shown and
// the Environment reloaded), the Environment suspended, resumed and deleted after confirming.

let app: TestApp
let browser: Browser
let receiver: Server
let receiverBase: string
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = []

beforeAll(async () => {
  app = await startApp({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  receiver = createServer((req, res) => {
    let body = ""
    req.on("data", (chunk) => {
      body += chunk
    })
    req.on("end", () => {
      if (req.url === "/hooks") received.push({ headers: req.headers, body })
      res.writeHead(200, { "content-type": "text/plain" })
      res.end("ok")
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", () => resolve()))
  receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()))
  await app?.close()
})

/** What the token endpoint answers a made-up code, authenticated with `secret`: who the client is comes first. */
const tokenErrorWith = async (tokenEndpoint: string, clientId: string, secret: string) => {
  const response = await fetch(tokenEndpoint, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: "not-a-code-this-server-issued",
      redirect_uri: `${receiverBase}/callback`,
      code_verifier: "a".repeat(43),
    }),
  })
  return { status: response.status, error: ((await response.json()) as { error: string }).error }
}

it("client secret rotated: the new secret shown once, the old one refused at the token endpoint; webhook test sent and secret rotated; a 412 from a stale tab shown and reloaded; suspend, resume and delete confirmed", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  try {
    const { workspaceId, environmentId, environmentLabel } = await ownerWithEnvironment(
      app,
      context,
      page,
      "owner@example.com",
    )

    // A confidential Client, then its secret rotated after confirming.
    await page.getByLabel("Client name").fill("Shop backend")
    await page.getByLabel(/^Redirect URIs/).fill(`${receiverBase}/callback`)
    await page.getByRole("button", { name: "Create client" }).click()
    const firstSecret = await page.locator("code.secret").innerText()
    const facts = page.getByRole("region", { name: "Connect your app" })
    const issuer = await facts.locator("dt:text('Issuer') + dd").innerText()
    const clientId = await facts.locator("dt:text('Client ID') + dd").innerText()
    const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
      token_endpoint: string
    }
    expect(await tokenErrorWith(discovery.token_endpoint, clientId, firstSecret)).toEqual({
      status: 400,
      error: "invalid_grant",
    })
    const clientRow = page.getByRole("row").filter({ hasText: "Shop backend" })
    await clientRow.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    expect(await page.locator("code.secret").innerText()).toBe(firstSecret)
    await clientRow.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
    await expect.poll(() => page.locator("code.secret").innerText(), { timeout: 10_000 }).not.toBe(firstSecret)
    const secondSecret = await page.locator("code.secret").innerText()
    expect(secondSecret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(await tokenErrorWith(discovery.token_endpoint, clientId, firstSecret)).toEqual({
      status: 401,
      error: "invalid_client",
    })
    expect(await tokenErrorWith(discovery.token_endpoint, clientId, secondSecret)).toEqual({
      status: 400,
      error: "invalid_grant",
    })
    // Shown once: another visit to the screen no longer shows it.
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("link", { name: "Projects and apps" }).click()
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    expect(await page.locator("code.secret").count()).toBe(0)

    // A webhook: a test sent (delivered to the receiver), then its secret rotated; the next test
    // is signed with the new secret.
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByLabel("Environment").selectOption({ label: environmentLabel })
    await page.getByLabel("Endpoint URL").fill(`${receiverBase}/hooks`)
    await page.getByRole("button", { name: "Add endpoint" }).click()
    const firstWebhookSecret = await page.locator("code.secret").innerText()
    await page.getByRole("button", { name: `${receiverBase}/hooks` }).click()
    const log = page.getByRole("region", { name: "Delivery log" })
    await log.getByRole("button", { name: "Send a test" }).click()
    // The test is sent during the request and answered there (it is not an entry of the delivery log).
    const testResult = log.getByRole("status", { name: "Test result" })
    await testResult.waitFor()
    expect(await testResult.innerText()).toMatch(/^Test delivered: HTTP 200 in \d+ ms at \d{4}-\d\d-\d\dT/)
    const signedWith = (secret: string, delivery: { headers: IncomingHttpHeaders; body: string }) =>
      String(delivery.headers["x-auth-signature"])
        .split(/[ ,]+/)
        .includes(signatureOf(secret, Number(delivery.headers["x-auth-timestamp"]), delivery.body))
    expect(received).toHaveLength(1)
    expect(signedWith(firstWebhookSecret, received[0]!)).toBe(true)

    await log.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
    await expect.poll(() => page.locator("code.secret").innerText(), { timeout: 10_000 }).not.toBe(firstWebhookSecret)
    const secondWebhookSecret = await page.locator("code.secret").innerText()
    await log.getByRole("button", { name: "Send a test" }).click()
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(2)
    expect(signedWith(secondWebhookSecret, received[1]!)).toBe(true)

    // Two tabs on the same Environment: the second suspends with the ETag it read before the
    // first did; the console shows the conflict and reloads the Environment as it now is.
    const openSettings = async (tab: Page) => {
      await tab.goto(page.url().replace(/\/[^/]+$/, "/environment"))
      await tab.getByLabel("Environment", { exact: true }).selectOption({ label: environmentLabel })
      const settings = tab.getByRole("region", { name: "Settings" })
      await settings.locator("dt:text('Status') + dd").waitFor()
      return settings
    }
    const settings = await openSettings(page)
    const otherTab = await context.newPage()
    const otherSettings = await openSettings(otherTab)
    await otherSettings.getByRole("button", { name: "Suspend" }).click()
    await otherTab.getByRole("dialog").getByRole("button", { name: "Suspend" }).click()
    await otherSettings.locator("dt:text('Status') + dd").filter({ hasText: "suspended" }).waitFor()
    await otherTab.close()

    await settings.getByRole("button", { name: "Suspend" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Suspend" }).click()
    const conflict = page.getByRole("alert").filter({ hasText: "Someone changed this meanwhile" })
    await conflict.waitFor()
    expect(await conflict.innerText()).toBe(
      "Someone changed this meanwhile. It has been reloaded: check it and apply your change again.",
    )
    await settings.locator("dt:text('Status') + dd").filter({ hasText: "suspended" }).waitFor()

    // Resume (with the reloaded ETag), suspend again after confirming, then delete after confirming.
    await settings.getByRole("button", { name: "Resume" }).click()
    await settings
      .locator("dt:text('Status') + dd")
      .filter({ hasText: /^active$/ })
      .waitFor()
    const environmentStatus = () =>
      page.evaluate(
        ([ws, id]) =>
          fetch(`/v1/environments/${id}`, { headers: { "x-workspace-id": ws! } }).then(async (r) =>
            r.ok ? (await r.json()).status : r.status,
          ),
        [workspaceId, environmentId],
      )
    expect(await environmentStatus()).toBe("active")
    await settings.getByRole("button", { name: "Delete environment" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    expect(await environmentStatus()).toBe("active")
    await settings.getByRole("button", { name: "Delete environment" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Delete environment" }).click()
    await settings.waitFor({ state: "detached" })
    expect(await environmentStatus()).not.toBe("active")
  } finally {
    await context.close()
  }
}, 180_000)
