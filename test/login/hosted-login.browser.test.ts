import { createServer, type Server } from "node:http"
import { launchChromium } from "../support/browser.js"
import type { AddressInfo } from "node:net"
import { decodeJwt } from "jose"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  type LoginClientInfo,
  pkce,
  type SmtpSink,
  startSmtpSink,
  transactionStatus,
  uniqueEmail,
} from "./support.js"

// A real browser (Chromium through playwright-core) on the real Interaction Domain
// host env-<id>.login.localhost:<port>: Chromium resolves *.localhost to loopback itself.

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let smtp: SmtpSink
let browser: Browser
let callbackServer: Server
const callbacks: Array<URL> = []

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  callbackServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (url.pathname === "/callback") callbacks.push(url) // not /favicon.ico
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end("<!doctype html><title>Callback</title><p>Signed in</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  const port = (callbackServer.address() as AddressInfo).port
  client = await createClient(app, b, { redirect_uris: [`http://127.0.0.1:${port}/callback`] })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await smtp?.close()
})

/**
 * After a verified code the page completes and leaves for the client. Where the passkey
 * script (src/passkeys/hosted-login) offers to create a passkey first, decline it.
 */
const landOnCallback = async (page: Page) => {
  const notNow = page.getByRole("button", { name: "Not now" })
  const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
    () => true,
    () => false,
  )
  const landed = page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 }).then(() => false)
  if (await Promise.race([offered, landed])) await notNow.click()
  await page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 })
}

it("authorize -> Hosted Login (email, code from SMTP) -> the client's redirect URI with code and state -> tokens", async () => {
  const { verifier, challenge } = pkce()
  const state = "browser-state-1"
  const nonce = "browser-nonce-1"
  const email = uniqueEmail("browser")
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email",
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  })
  const context = await browser.newContext()
  const page = await context.newPage()
  const cspViolations: Array<string> = []
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text())
  })
  try {
    await page.goto(`${b.issuer}/oauth2/authorize?${query}`)
    // on the Interaction Domain, at the clean page URL (the hand-off token is gone)
    expect(page.url()).toBe(`http://${b.interaction_domain}/login`)
    await expect.poll(() => page.getByRole("heading", { name: "Sign in" }).isVisible()).toBe(true)
    const txn = await page.locator("#login").getAttribute("data-transaction-id")
    const cookies = await context.cookies(`http://${b.interaction_domain}`)
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.secure])).toEqual([
      ["authservice_login", true, "Lax", false],
    ])

    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    const code = await smtp.waitForCode(email)
    await page.getByLabel("Code", { exact: true }).fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    await landOnCallback(page).catch(async (e) => {
      throw new Error(
        `${String(e)}; page: ${page.url()} status=${await page.locator("#status").textContent()} error=${await page.locator("#error").textContent()}`,
      )
    })
    const landed = callbacks.at(-1)!
    expect(landed.searchParams.get("state")).toBe(state)
    const authorizationCode = landed.searchParams.get("code")!
    expect(authorizationCode).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // RFC 9207 (docs/decisions/rp-libraries.md): the authorization response names its issuer.
    expect(landed.searchParams.get("iss")).toBe(b.issuer)
    expect(cspViolations).toEqual([])

    // The token endpoint (built by the back half) exchanges the code with the verifier.
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code: authorizationCode,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    })
    const token = await app.issuer(b.environment_id, "/oauth2/token", {
      method: "POST",
      body: form.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    })
    expect(token.status, token.text).toBe(200)
    expect(token.json.token_type).toBe("Bearer")
    const idToken = decodeJwt(token.json.id_token)
    expect(idToken.nonce).toBe(nonce)
    expect(idToken.email).toBe(email)
    expect(idToken.amr).toEqual(["email_otp"])
    // the transaction behind it is consumed, and its page is finished
    expect(await transactionStatus(app, txn!)).toBe("consumed")
    const again = await app.request(b.interaction_domain, "/login", {
      headers: { cookie: `authservice_login=${cookies[0]!.value}` },
    })
    expect(again.text).toContain('data-error="login_finished"')
  } finally {
    await context.close()
  }
})

it("a wrong code shows an accessible error and the right one still works", async () => {
  const { challenge } = pkce()
  const email = uniqueEmail("browser-wrong")
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid",
    state: "s2",
    nonce: "n2",
    code_challenge: challenge,
    code_challenge_method: "S256",
  })
  const context = await browser.newContext()
  const page = await context.newPage()
  try {
    await page.goto(`${b.issuer}/oauth2/authorize?${query}`)
    const txn = await page.locator("#login").getAttribute("data-transaction-id")
    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    const code = await smtp.waitForCode(email)
    await page.getByLabel("Code", { exact: true }).fill(code === "000000" ? "111111" : "000000")
    await page.getByRole("button", { name: "Verify" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not valid")
    expect(await transactionStatus(app, txn!)).toBe("challenge_issued")
    await page.getByLabel("Code", { exact: true }).fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    await landOnCallback(page)
    expect(callbacks.at(-1)!.searchParams.get("state")).toBe("s2")
  } finally {
    await context.close()
  }
})

it("an invalid authorize request lands on the Hosted Login error page, not on the client", async () => {
  const before = callbacks.length
  const context = await browser.newContext()
  const page = await context.newPage()
  try {
    const query = new URLSearchParams({
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: `${client.redirect_uri}x`,
      scope: "openid",
      state: "s",
      nonce: "n",
      code_challenge: pkce().challenge,
      code_challenge_method: "S256",
    })
    await page.goto(`${b.issuer}/oauth2/authorize?${query}`)
    expect(new URL(page.url()).host).toBe(b.interaction_domain)
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Invalid sign-in request")
    expect(callbacks.length).toBe(before)
  } finally {
    await context.close()
  }
})
