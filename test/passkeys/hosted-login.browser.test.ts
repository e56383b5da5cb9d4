import { createServer, type Server } from "node:http"
import { launchChromium } from "../support/browser.js"
import type { AddressInfo } from "node:net"
import * as oidc from "openid-client"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink } from "../login/support.js"
import { registerClient } from "./support/flow.js"
import { query } from "./support/helpers.js"

// A real browser (Chromium driven by playwright-core) with a CDP virtual
// authenticator (CTAP2, internal transport, resident keys, user verification) on the real
// Interaction Domain env-<id>.login.localhost:<port> (Chromium resolves *.localhost to
// loopback and treats http://*.localhost as a secure context, so the RP ID is that host).
// openid-client (v6, its documented insecure-HTTP option only) builds the requests and
// validates the tokens.

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let browser: Browser
let callbackServer: Server
let base: string
let clientId: string

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  callbackServer = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end(`<!doctype html><title>${req.url?.startsWith("/signed-out") ? "Signed out" : "Callback"}</title><p>ok</p>`)
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  base = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`
  clientId = (
    await registerClient(app, b, {
      redirect_uris: [`${base}/callback`],
      post_logout_redirect_uris: [`${base}/signed-out`],
    })
  ).client_id
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await smtp?.close()
})

it("Email OTP login, create a passkey on the Hosted Login page, sign out, sign in again with the passkey alone, then 'Continue as' that user", async () => {
  const config = await oidc.discovery(new URL(b.issuer), clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  })
  const context = await browser.newContext()
  const page = await context.newPage()
  const cspViolations: Array<string> = []
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text())
  })
  const cdp = await context.newCDPSession(page)
  await cdp.send("WebAuthn.enable", { enableUI: false })
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })

  /** openid-client builds the authorization request; the browser runs it to the callback; openid-client validates the tokens. */
  const signIn = async (interact: () => Promise<void>) => {
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: `${base}/callback`,
      scope: "openid email",
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    await page.goto(url.href)
    expect(page.url()).toBe(`http://${b.interaction_domain}/login`)
    await expect.poll(() => page.getByRole("heading", { name: "Sign in" }).isVisible()).toBe(true)
    await interact()
    await page.waitForURL((u) => u.pathname === "/callback", { timeout: 20_000 })
    return oidc.authorizationCodeGrant(config, new URL(page.url()), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
  }

  try {
    // 1. Email OTP, then the page offers a passkey: create it with the virtual authenticator.
    const email = `browser-passkey-${Date.now()}@example.com`
    const first = await signIn(async () => {
      await page.getByLabel("Email address").fill(email)
      await page.getByRole("button", { name: "Continue with email" }).click()
      const code = await smtp.waitForCode(email)
      await page.getByLabel("Code", { exact: true }).fill(code)
      await page.getByRole("button", { name: "Verify" }).click()
      await page.getByRole("button", { name: "Create a passkey" }).click()
    })
    const firstClaims = first.claims()!
    expect(firstClaims).toMatchObject({
      iss: b.issuer,
      aud: clientId,
      email,
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
    })
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId })
    expect(credentials).toHaveLength(1)
    expect(credentials[0]).toMatchObject({
      isResidentCredential: true,
      rpId: b.interaction_domain.replace(/:\d+$/, ""),
    })
    const rows = await query<{ credential_id: string; user_handle: string; rp_id: string }>(
      app,
      "select credential_id, user_handle, rp_id from passkeys where user_id = $1",
      [firstClaims.sub],
    )
    expect(rows).toHaveLength(1)
    expect(rows[0]!.credential_id).toBe(Buffer.from(credentials[0]!.credentialId, "base64").toString("base64url"))
    expect(Buffer.from(credentials[0]!.userHandle!, "base64").toString("base64url")).toBe(rows[0]!.user_handle)

    // 2. Sign out (RP-initiated logout ends the session behind the tokens).
    await page.goto(
      oidc.buildEndSessionUrl(config, {
        id_token_hint: first.id_token!,
        post_logout_redirect_uri: `${base}/signed-out`,
      }).href,
    )
    await page.waitForURL((u) => u.pathname === "/signed-out")
    const after = await oidc.fetchUserInfo(config, first.access_token, firstClaims.sub).then(
      () => "active",
      (e: unknown) => e,
    )
    expect(after).not.toBe("active")

    // 3. Sign in with the passkey alone: no email typed.
    const second = await signIn(async () => {
      await page.getByRole("button", { name: "Sign in with a passkey" }).click()
    })
    const claims = second.claims()!
    expect(claims).toMatchObject({
      iss: b.issuer,
      aud: clientId,
      sub: firstClaims.sub,
      amr: ["passkey"],
      acr: "urn:example-auth:loa:phishing-resistant",
    })
    const me = await app.request(b.interaction_domain, "/v1/me/passkeys", {
      headers: { authorization: `Bearer ${second.access_token}` },
    })
    expect(me.status, me.text).toBe(200)
    expect(me.json.data).toHaveLength(1)
    const [used] = await query<{ sign_count: string; last_used_at: Date | null }>(
      app,
      "select sign_count::text, last_used_at from passkeys where user_id = $1",
      [claims.sub],
    )
    expect(used!.last_used_at).not.toBeNull()

    // 4. The passkey sign-in opened a Hosted Login session (docs/decisions/hosted-login-sso.md):
    // its cookie is set, and the next authorization from this browser offers "Continue as".
    const sso = (await context.cookies(`http://${b.interaction_domain}`)).find((c) => c.name === "authservice_sso")
    expect(sso).toMatchObject({ httpOnly: true, sameSite: "Lax" })
    const continued = await signIn(async () => {
      const button = page.getByRole("button", { name: `Continue as ${email.slice(0, 1)}***@e***.com` })
      await button.waitFor({ state: "visible", timeout: 15_000 })
      await button.click()
    })
    expect(continued.claims()).toMatchObject({ sub: claims.sub, amr: ["passkey"], auth_time: claims.auth_time })
    expect(cspViolations).toEqual([])
  } finally {
    await context.close()
  }
})
