import { afterAll, beforeAll, expect, it } from "vitest"
import type { Browser } from "playwright-core"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, type LoginClientInfo, pkce } from "./support.js"

// GET /config `legal` on the page a person sees: the theme's terms_url and privacy_url, set through
// the Management API, are linked under the Hosted Login form; without them no links are shown.

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let browser: Browser

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await createClient(app, b)
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await app?.close()
})

const openHostedLogin = async () => {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email",
    state: "legal-state",
    nonce: "legal-nonce",
    code_challenge: pkce().challenge,
    code_challenge_method: "S256",
  })
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(`${b.issuer}/oauth2/authorize?${query}`)
  await expect.poll(() => page.getByRole("heading", { name: "Sign in" }).isVisible()).toBe(true)
  return { page, close: () => context.close() }
}

it("shows Terms and Privacy links from the theme's terms_url and privacy_url, and none without them", async () => {
  const without = await openHostedLogin()
  try {
    // the form is drawn from GET /config, so once it is there the legal links would be too
    await expect.poll(() => without.page.getByRole("button", { name: "Continue with email" }).isVisible()).toBe(true)
    expect(await without.page.locator("#legal").isHidden()).toBe(true)
    expect(await without.page.locator("#legal a").count()).toBe(0)
  } finally {
    await without.close()
  }

  const put = await app.management(`/v1/environments/${b.environment_id}/theme`, {
    method: "PUT",
    headers: { "if-match": `"${b.environment_id}.theme.1"` },
    body: { terms_url: "https://app.example.com/terms", privacy_url: "https://app.example.com/privacy" },
  })
  expect(put.status, put.text).toBe(200)
  const themed = await openHostedLogin()
  try {
    const terms = themed.page.getByRole("link", { name: "Terms" })
    await expect.poll(() => terms.isVisible()).toBe(true)
    expect(await terms.getAttribute("href")).toBe("https://app.example.com/terms")
    expect(await themed.page.getByRole("link", { name: "Privacy" }).getAttribute("href")).toBe(
      "https://app.example.com/privacy",
    )
  } finally {
    await themed.close()
  }
})
