import { html } from "hono/html"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mountAuthRoutes, requireSession } from "../../packages/hono/src/index.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { launchChromium } from "../support/browser.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import { type RelyingParty, startRelyingParty } from "./support.js"

// A real Chromium signs in to a Hono app through mountAuthRoutes and the Hosted Login page
// (Email OTP read from a real SMTP sink), reads the protected page, keeps its session across
// an access-token expiry (the server's TestClock, which is also the helper's clock, moves past
// the 300 s lifetime: the helper refreshes), signs out with the page's POST form (Origin and
// Sec-Fetch-Site from the browser itself), and is refused afterwards.

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let rp: RelyingParty
let browser: Browser
const grants: Array<string> = []

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  rp = await startRelyingParty(
    app,
    b,
    (hono, auth) => {
      mountAuthRoutes(hono, auth)
      hono.get("/", (c) => c.html(html`<!doctype html><title>Home</title><a href="/profile">Profile</a>`))
      hono.get("/profile", requireSession(auth, { onUnauthenticated: "redirect" }), (c) =>
        c.html(html`<!doctype html>
<title>Profile</title><h1 id="email">${c.get("authUser").email}</h1>
<form method="post" action="/auth/logout"><button>Sign out</button></form>`),
      )
      hono.get("/api/data", requireSession(auth), (c) => c.json({ sub: c.get("authUser").sub }))
      hono.get("/signed-out", (c) => c.html(html`<!doctype html><title>Signed out</title><p>Signed out</p>`))
    },
    {
      fetch: (input, init) => {
        const url = input instanceof Request ? input.url : String(input)
        if (url.endsWith("/oauth2/token"))
          grants.push(new URLSearchParams(String(init?.body ?? "")).get("grant_type") ?? "")
        return fetch(input, init)
      },
    },
  )
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await rp?.close()
  await app?.close()
  await smtp?.close()
})

/** After the code is verified Hosted Login may offer a passkey first: decline it. */
const declinePasskeyThenLand = async (page: Page, path: string) => {
  const notNow = page.getByRole("button", { name: "Not now" })
  const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
    () => true,
    () => false,
  )
  const landed = page.waitForURL((url) => url.pathname === path, { timeout: 15_000 }).then(() => false)
  if (await Promise.race([offered, landed])) await notNow.click()
  await page.waitForURL((url) => url.pathname === path, { timeout: 15_000 })
}

describe("Chromium through mountAuthRoutes and Hosted Login", () => {
  it("signs in, reads the protected page, survives an access-token expiry, logs out and is refused afterwards", async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    try {
      const email = uniqueEmail("hono-browser")
      // the protected page sends the visitor to the sign-in, and back afterwards
      await page.goto(`${rp.origin}/profile`)
      expect(new URL(page.url()).host).toBe(b.interaction_domain)
      await page.getByLabel("Email address").fill(email)
      await page.getByRole("button", { name: "Continue with email" }).click()
      await page.getByLabel("Code", { exact: true }).fill(await smtp.waitForCode(email))
      await page.getByRole("button", { name: "Verify" }).click()
      await declinePasskeyThenLand(page, "/profile")
      expect(page.url()).toBe(`${rp.origin}/profile`)
      expect(await page.locator("#email").textContent()).toBe(email)
      expect(grants).toEqual(["authorization_code"])

      const cookies = await context.cookies(rp.origin)
      const session = cookies.find((c) => c.name === "authservice_session")!
      expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" })
      expect(cookies.find((c) => c.name === "authservice_login")).toBeUndefined()

      // the access token expires (300 s) on the server and for the helper alike
      await app.advance("6 minutes")
      const reload = await page.reload()
      expect(reload!.status()).toBe(200)
      expect(await page.locator("#email").textContent()).toBe(email)
      expect(grants).toEqual(["authorization_code", "refresh_token"])
      const renewed = (await context.cookies(rp.origin)).find((c) => c.name === "authservice_session")!
      expect(renewed.value).not.toBe(session.value)
      const api = await page.goto(`${rp.origin}/api/data`)
      expect(api!.status()).toBe(200)
      expect(grants.length).toBe(2) // the renewed cookie was used: no second refresh

      // sign out with the page's own form: the browser sends Origin and Sec-Fetch-Site itself
      await page.goto(`${rp.origin}/profile`)
      await page.getByRole("button", { name: "Sign out" }).click()
      await page.waitForURL(`${rp.origin}/signed-out`, { timeout: 15_000 })
      expect((await context.cookies(rp.origin)).map((c) => c.name)).not.toContain("authservice_session")

      const refused = await page.goto(`${rp.origin}/api/data`)
      expect(refused!.status()).toBe(401)
      expect(await refused!.json()).toMatchObject({ status: 401, code: "unauthorized" })
      // the protected page starts a new sign-in: Hosted Login asks for the email again
      await page.goto(`${rp.origin}/profile`)
      expect(new URL(page.url()).host).toBe(b.interaction_domain)
      // the page renders its form after load: wait for it rather than sample it once
      await page.getByLabel("Email address").waitFor({ state: "visible", timeout: 15_000 })
    } finally {
      await context.close()
    }
  })
})
