import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type FakeStripe, startFakeStripe } from "../billing/fake-stripe.js"
import { startDnsServer } from "../management/domains/dns-server.js"
import { launchChromium } from "../support/browser.js"
import { type TestApp, startApp } from "../support/app.js"
import { captureScreen, signInByEmail } from "./support.js"

// Chromium against the real server: a domain's "Retry validation" asks real DNS (node:dns
// pointed by DNS_SERVERS at a local authoritative server, as the domain tests do) and shows
// what the API found, until the TXT record is published; billing, configured with the local
// Stripe stand-in, refuses checkout links on this http console without calling the API (the
// return URLs must be https).

const STRIPE_KEY = "sk_test_console"
let app: TestApp
let browser: Browser
let dns: Awaited<ReturnType<typeof startDnsServer>>
let stripe: FakeStripe

beforeAll(async () => {
  dns = await startDnsServer()
  stripe = await startFakeStripe(STRIPE_KEY)
  app = await startApp({
    worker: true,
    env: {
      DNS_SERVERS: dns.address,
      STRIPE_SECRET_KEY: STRIPE_KEY,
      STRIPE_PRICE_ID: "price_console",
      STRIPE_WEBHOOK_SECRET: "whsec_console_test_secret",
      STRIPE_API_BASE: stripe.apiBase,
    },
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await app?.close()
  await stripe?.close()
  await dns?.close()
})

it("Domains: retry validation shows what DNS answered (no record, then active once published); billing: checkout refused on an http console without calling the API", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  try {
    await signInByEmail(app, context, page, "dns-owner@example.com", "Create a Workspace")
    await page.getByLabel("Name", { exact: true }).fill("Domains Co")
    await page.getByRole("button", { name: "Create Workspace" }).click()
    await page.getByRole("heading", { name: "Projects and apps" }).waitFor()
    await page.getByLabel("New project name").fill("Site")
    await page.getByRole("button", { name: "Create project" }).click()
    await page.getByLabel("New environment name").fill("Live")
    await page.getByRole("button", { name: "Create environment" }).click()
    await page.getByRole("heading", { name: "Register a client" }).waitFor()

    await page.getByRole("link", { name: "Domains" }).click()
    await page.getByLabel("Environment").selectOption({ label: "Site / Live (test)" })
    await page.getByLabel("Hostname").fill("login.site.example.com")
    await page.getByRole("button", { name: "Add domain" }).click()
    const domain = page.getByRole("region", { name: "login.site.example.com" })
    const fact = (name: string) => domain.locator(`dt:text('${name}') + dd`)
    await fact("Status").filter({ hasText: "pending" }).waitFor()
    const recordName = await fact("TXT record name").innerText()
    const recordValue = await fact("TXT record value").innerText()
    expect(recordName).toBe("_authservice-challenge.login.site.example.com")

    // Nothing published yet: the check fails and says what to publish.
    await app.advance("1 second")
    await domain.getByRole("button", { name: "Retry validation" }).click()
    await fact("Status").filter({ hasText: "failed" }).waitFor()
    expect(await fact("Last check").innerText()).toBe(
      `No TXT record found at ${recordName}; publish one with the value ${recordValue}`,
    )
    await captureScreen(page, "domains-validation-failed")

    // Published (beside an unrelated record): the next retry activates the domain.
    dns.setTxt(recordName, ["v=spf1 -all", recordValue])
    await app.advance("1 second")
    await domain.getByRole("button", { name: "Retry validation" }).click()
    await fact("Status").filter({ hasText: "active" }).waitFor()
    expect(await domain.locator("dt:text('Last check')").count()).toBe(0)

    // Billing is configured, with no subscription yet: Subscribe, refused here (http), nothing sent to Stripe.
    await page.getByRole("link", { name: "Usage and billing" }).click()
    const billing = page.getByRole("region", { name: "Billing" })
    expect(await billing.locator("dt:text('Subscription') + dd").innerText()).toBe("no subscription")
    await billing.getByRole("button", { name: "Subscribe" }).click()
    expect(await page.getByRole("alert").innerText()).toBe(
      "Billing links need the console to be served over https (the return URLs must be https).",
    )
    expect(stripe.requests).toEqual([])
    expect(page.url()).toMatch(/\/console\/w\/wsp_[a-z2-7]{32}\/usage$/)
    await captureScreen(page, "usage-billing-http")
  } finally {
    await context.close()
  }
}, 120_000)
