import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { decodeJwt } from "jose"
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { createClient, type LoginClientInfo, pkce, query, uniqueEmail } from "../login/support.js"
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
let callbackServer: Server
const callbacks: Array<URL> = []

beforeAll(async () => {
  op = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  app = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  b = await app.bootstrap()
  callbackServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (url.pathname === "/callback") callbacks.push(url)
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>Callback</title><p>Signed in</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  client = await createClient(app, b, { redirect_uris: [`http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`] })
  const connection = await createConnection(app, b, {
    provider: "generic_oidc", provider_key: "corp-sso", provider_client_id: "authservice-rp", provider_client_secret: "op-client-secret", issuer: op.issuer,
  })
  op.addRedirectUri(connection.callback_url)
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await op?.close()
})

it("authorize -> Hosted Login 'Continue with single sign-on' -> oidc-provider -> back to /login -> client callback -> tokens amr social", async () => {
  const email = uniqueEmail("browser-sso")
  op.setAccount({ sub: "op-browser-1", email, email_verified: true, name: "Browser User" })
  const { verifier, challenge } = pkce()
  const q = new URLSearchParams({
    response_type: "code", client_id: client.client_id, redirect_uri: client.redirect_uri, scope: "openid email profile",
    state: "browser-social-state", nonce: "browser-social-nonce", code_challenge: challenge, code_challenge_method: "S256",
  })
  // Chromium does not know the run's test CA (the server side trusts it through NODE_EXTRA_CA_CERTS).
  const context = await browser.newContext({ ignoreHTTPSErrors: true })
  const page = await context.newPage()
  const cspViolations: Array<string> = []
  page.on("console", (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) cspViolations.push(m.text()) })
  try {
    await page.goto(`${b.issuer}/oauth2/authorize?${q}`)
    expect(page.url()).toBe(`http://${b.interaction_domain}/login`)
    const button = page.getByRole("button", { name: "Continue with single sign-on" })
    await button.waitFor({ state: "visible", timeout: 15_000 })
    await button.click()
    await page.waitForURL((url) => url.pathname === "/callback", { timeout: 20_000 })
    const landed = callbacks.at(-1)!
    expect(landed.searchParams.get("state")).toBe("browser-social-state")
    const token = await app.issuer(b.environment_id, "/oauth2/token", {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code", code: landed.searchParams.get("code")!, redirect_uri: client.redirect_uri,
        code_verifier: verifier, client_id: client.client_id,
      }).toString(),
    })
    expect(token.status, token.text).toBe(200)
    const [user] = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [email])
    expect(decodeJwt(token.json.id_token)).toMatchObject({ sub: user!.id, amr: ["social"], acr: "urn:example-auth:loa:basic", nonce: "browser-social-nonce", email })
    expect(cspViolations).toEqual([])
  } finally {
    await context.close()
  }
})
