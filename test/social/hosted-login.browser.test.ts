import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { decodeJwt } from "jose"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import {
  createClient,
  type LoginClientInfo,
  pkce,
  query,
  type SmtpSink,
  startSmtpSink,
  uniqueEmail,
} from "../login/support.js"
import { createUser } from "../passkeys/support/helpers.js"
import { startOidcProvider } from "./oidc-provider.js"
import { createConnection } from "./support.js"

// Chromium on the Hosted Login page: the generic OIDC button starts social login, the real
// oidc-provider (HTTPS on loopback) signs the user in, our callback brings the browser back
// to /login, which completes and returns to the client with a code.

let op: Awaited<ReturnType<typeof startOidcProvider>>
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let browser: Browser
let smtp: SmtpSink
let callbackServer: Server
const callbacks: Array<URL> = []

beforeAll(async () => {
  op = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  callbackServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (url.pathname === "/callback") callbacks.push(url)
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8" })
      .end("<!doctype html><title>Callback</title><p>Signed in</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  client = await createClient(app, b, {
    redirect_uris: [`http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`],
  })
  const connection = await createConnection(app, b, {
    provider: "generic_oidc",
    provider_key: "corp-sso",
    provider_client_id: "authservice-rp",
    provider_client_secret: "op-client-secret",
    issuer: op.issuer,
  })
  op.addRedirectUri(connection.callback_url)
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await op?.close()
  await smtp?.close()
})

const authorizeUrl = (state: string, challenge: string) =>
  `${b.issuer}/oauth2/authorize?${new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email profile",
    state,
    nonce: `${state}-nonce`,
    code_challenge: challenge,
    code_challenge_method: "S256",
  })}`

/** The token request for the code the client's callback received. */
const redeem = (callback: URL, verifier: string) =>
  app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: callback.searchParams.get("code")!,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    }).toString(),
  })

it("authorize -> Hosted Login 'Continue with single sign-on' -> oidc-provider -> back to /login -> client callback -> tokens amr social; the next authorization continues as that user", async () => {
  const email = uniqueEmail("browser-sso")
  op.setAccount({ sub: "op-browser-1", email, email_verified: true, name: "Browser User" })
  const { verifier, challenge } = pkce()
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email profile",
    state: "browser-social-state",
    nonce: "browser-social-nonce",
    code_challenge: challenge,
    code_challenge_method: "S256",
  })
  // Chromium does not know the run's test CA (the server side trusts it through NODE_EXTRA_CA_CERTS).
  const context = await browser.newContext({ ignoreHTTPSErrors: true })
  const page = await context.newPage()
  const cspViolations: Array<string> = []
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text())
  })
  try {
    await page.goto(`${b.issuer}/oauth2/authorize?${q}`)
    expect(page.url()).toBe(`http://${b.interaction_domain}/login`)
    const button = page.getByRole("button", { name: "Continue with single sign-on" })
    await button.waitFor({ state: "visible", timeout: 15_000 })
    await button.click()
    await page.waitForURL((url) => url.pathname === "/callback", { timeout: 20_000 })
    const landed = callbacks.at(-1)!
    expect(landed.searchParams.get("state")).toBe("browser-social-state")
    const token = await redeem(landed, verifier)
    expect(token.status, token.text).toBe(200)
    const [user] = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [email])
    expect(decodeJwt(token.json.id_token)).toMatchObject({
      sub: user!.id,
      amr: ["social"],
      acr: "urn:example-auth:loa:basic",
      nonce: "browser-social-nonce",
      email,
    })

    // The social sign-in opened a Hosted Login session (docs/decisions/hosted-login-sso.md): its
    // cookie is set, and the next authorization from this browser continues as that user in one
    // click, with the social sign-in's auth_time.
    const sso = (await context.cookies(`http://${b.interaction_domain}`)).find((c) => c.name === "authservice_sso")
    expect(sso).toMatchObject({ httpOnly: true, sameSite: "Lax" })
    const again = pkce()
    await page.goto(authorizeUrl("browser-social-again", again.challenge))
    const continueAs = page.getByRole("button", { name: `Continue as ${email.slice(0, 1)}***@e***.com` })
    await continueAs.waitFor({ state: "visible", timeout: 15_000 })
    await continueAs.click()
    await page.waitForURL((url) => url.pathname === "/callback", { timeout: 20_000 })
    const continued = callbacks.at(-1)!
    expect(continued.searchParams.get("state")).toBe("browser-social-again")
    const second = await redeem(continued, again.verifier)
    expect(second.status, second.text).toBe(200)
    const first = decodeJwt(token.json.id_token)
    expect(decodeJwt(second.json.id_token)).toMatchObject({
      sub: user!.id,
      amr: ["social"],
      auth_time: first["auth_time"],
      nonce: "browser-social-again-nonce",
    })
    expect(cspViolations).toEqual([])
  } finally {
    await context.close()
  }
})

it("an address of an existing account: back on /login the page asks for that account's Email OTP, then links and signs in", async () => {
  const email = uniqueEmail("browser-link")
  const existing = await createUser(app, b, email)
  op.setAccount({ sub: "op-browser-link", email, email_verified: true })
  const context = await browser.newContext({ ignoreHTTPSErrors: true })
  const page = await context.newPage()
  try {
    await page.goto(authorizeUrl("browser-link-state", pkce().challenge))
    await page.getByRole("button", { name: "Continue with single sign-on" }).click()
    await page.waitForURL((url) => url.pathname === "/login" && url.host === b.interaction_domain, { timeout: 20_000 })
    const note = page.locator("#link-note")
    await note.waitFor({ state: "visible", timeout: 15_000 })
    expect(await note.textContent()).toContain("already exists")
    // only the proofs are offered: no social buttons on this step
    expect(await page.getByRole("button", { name: "Continue with single sign-on" }).count()).toBe(0)
    expect(await query(app, "select id from identities where user_id = $1", [existing.id])).toEqual([])
    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    const code = await smtp.waitForCode(email)
    await page.getByLabel("Code").fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    const notNow = page.getByRole("button", { name: "Not now" })
    const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
      () => true,
      () => false,
    )
    const landed = page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 }).then(() => false)
    if (await Promise.race([offered, landed])) await notNow.click()
    await page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 })
    expect(callbacks.at(-1)!.searchParams.get("state")).toBe("browser-link-state")
    const identities = await query<{ provider: string; provider_subject: string }>(
      app,
      "select provider, provider_subject from identities where user_id = $1",
      [existing.id],
    )
    expect(identities).toEqual([{ provider: "corp-sso", provider_subject: "op-browser-link" }])
  } finally {
    await context.close()
  }
})

it("an address the provider did not verify: back on /login the page asks for an Email OTP to that address only, then creates the account and signs in", async () => {
  const email = uniqueEmail("browser-unverified")
  op.setAccount({ sub: "op-browser-unverified", email, email_verified: false, name: "Unverified Person" })
  const context = await browser.newContext({ ignoreHTTPSErrors: true })
  const page = await context.newPage()
  try {
    await page.goto(authorizeUrl("browser-unverified-state", pkce().challenge))
    await page.getByRole("button", { name: "Continue with single sign-on" }).click()
    await page.waitForURL((url) => url.pathname === "/login" && url.host === b.interaction_domain, { timeout: 20_000 })
    const note = page.locator("#link-note")
    await note.waitFor({ state: "visible", timeout: 15_000 })
    expect(await note.textContent()).toContain("did not confirm the address")
    // Email OTP is the only proof offered; nobody exists yet
    await page.getByLabel("Email address").waitFor({ state: "visible", timeout: 15_000 })
    expect(
      await page.locator("section.method").evaluateAll((els) => els.map((e) => e.getAttribute("data-method"))),
    ).toEqual(["email_otp"])
    expect(await query(app, "select id from users where email_normalized = $1", [email])).toEqual([])
    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    const code = await smtp.waitForCode(email)
    await page.getByLabel("Code").fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    const notNow = page.getByRole("button", { name: "Not now" })
    const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
      () => true,
      () => false,
    )
    const landed = page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 }).then(() => false)
    if (await Promise.race([offered, landed])) await notNow.click()
    await page.waitForURL((url) => url.pathname === "/callback", { timeout: 15_000 })
    expect(callbacks.at(-1)!.searchParams.get("state")).toBe("browser-unverified-state")
    const [user] = await query<{ id: string; email_verified: boolean; name: string }>(
      app,
      "select id, email_verified, name from users where email_normalized = $1",
      [email],
    )
    expect(user).toMatchObject({ email_verified: true, name: "Unverified Person" })
    expect(
      await query(app, "select provider, provider_subject from identities where user_id = $1", [user!.id]),
    ).toEqual([{ provider: "corp-sso", provider_subject: "op-browser-unverified" }])
  } finally {
    await context.close()
  }
})

// Last in this file: it adds Connections of every provider to the Environment.
it("a button per active provider (Google, Apple, GitHub, Microsoft, single sign-on), none for a disabled or deleted one", async () => {
  const ids: Record<string, string> = {}
  for (const provider of ["google", "apple", "github", "microsoft"]) {
    ids[provider] = (
      await createConnection(app, b, {
        provider,
        provider_key: provider,
        provider_client_id: `${provider}-client`,
        provider_client_secret: "s",
      })
    ).id
  }
  const buttonsOnTheLoginPage = async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await context.newPage()
    try {
      await page.goto(authorizeUrl("buttons-state", pkce().challenge))
      await page.locator("#social-generic_oidc").waitFor({ state: "visible", timeout: 15_000 })
      return await page.locator("button.social").evaluateAll((els) => els.map((e) => e.textContent))
    } finally {
      await context.close()
    }
  }
  expect(await buttonsOnTheLoginPage()).toEqual([
    "Continue with Google",
    "Continue with Apple",
    "Continue with GitHub",
    "Continue with Microsoft",
    "Continue with single sign-on",
  ])
  expect(
    (
      await app.management(`/v1/connections/${ids["microsoft"]}`, {
        method: "PATCH",
        key: b.api_key,
        body: { status: "disabled" },
      })
    ).status,
  ).toBe(200)
  expect(
    (await app.management(`/v1/connections/${ids["apple"]}`, { method: "DELETE", key: b.api_key })).status,
  ).toBeLessThan(300)
  expect(await buttonsOnTheLoginPage()).toEqual([
    "Continue with Google",
    "Continue with GitHub",
    "Continue with single sign-on",
  ])
})
