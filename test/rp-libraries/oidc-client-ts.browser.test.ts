import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import type { Page } from "playwright-core"
import { decodeJwt } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, postForm, type TestClient } from "../oidc/support.js"
import { type Harness, listen, signInOnHostedLogin, startHarness } from "./support.js"

// oidc-client-ts, a browser library, unmodified: its own browser bundle runs in a real
// Chromium on a single-page app served from loopback (another origin than the issuer). It
// reads discovery cross-origin (CORS *), redirects to /oauth2/authorize, the person signs in
// on Hosted Login, and it exchanges the code, loads UserInfo, refreshes and revokes with
// fetch from the app's Origin (registered in allowed_origins). Settings: docs/oidc-libraries.md.

// The package's own browser bundle (global `oidc`), found next to its package.json.
const require = createRequire(import.meta.url)
const BUNDLE = readFileSync(
  join(dirname(require.resolve("oidc-client-ts/package.json")), "dist/browser/oidc-client-ts.min.js"),
  "utf8",
)

// The app's script: one UserManager per page load, as a SPA would create it.
const APP_JS = `
window.makeManager = function () {
  return new oidc.UserManager({
    authority: window.SETTINGS.issuer,
    client_id: window.SETTINGS.clientId,
    redirect_uri: location.origin + "/callback",
    response_type: "code",
    scope: "openid profile email offline_access",
    loadUserInfo: true,
  })
}
`

const PAGE = `<!doctype html><meta charset="utf-8"><title>SPA</title>
<script src="/oidc-client-ts.js"></script><script src="/settings.js"></script><script src="/app.js"></script>
<p>SPA</p>`

let h: Harness
let site: Awaited<ReturnType<typeof listen>>
let spa: TestClient

beforeAll(async () => {
  h = await startHarness()
  site = await listen((req, res) => {
    const path = (req.url ?? "/").split("?")[0]
    const send = (type: string, body: string) => res.writeHead(200, { "content-type": type }).end(body)
    if (path === "/oidc-client-ts.js") return send("text/javascript", BUNDLE)
    if (path === "/app.js") return send("text/javascript", APP_JS)
    if (path === "/settings.js")
      return send("text/javascript", `window.SETTINGS = ${JSON.stringify({ issuer: h.env.issuer, clientId: spa.id })}`)
    return send("text/html; charset=utf-8", PAGE)
  })
  spa = await createClient(h.app, h.env, { redirectUris: [`${site.base}/callback`], allowedOrigins: [site.base] })
}, 60_000)
afterAll(async () => {
  await site?.close()
  await h?.close()
})

/** Starts signinRedirect on the app's page; the browser then leaves for /oauth2/authorize. */
const startSignin = async (page: Page, args: { nonce?: string }) => {
  await page.goto(`${site.base}/`)
  await page.evaluate((a) => {
    void (window as any).makeManager().signinRedirect(a)
  }, args)
}

describe("oidc-client-ts in Chromium", () => {
  it("reads discovery and the JWKS cross-origin (CORS *), as any browser code can", async () => {
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${site.base}/`)
      const seen = await page.evaluate(async (issuer) => {
        const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()
        const jwks = await (await fetch(discovery.jwks_uri)).json()
        return { issuer: discovery.issuer, kty: jwks.keys[0].kty, alg: jwks.keys[0].alg }
      }, h.env.issuer)
      expect(seen).toEqual({ issuer: h.env.issuer, kty: "EC", alg: "ES256" })
    } finally {
      await context.close()
    }
  })

  it("signinRedirect({ nonce }) -> Hosted Login -> signinCallback (code + PKCE, UserInfo) -> signinSilent (refresh) -> revokeTokens", async () => {
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await startSignin(page, { nonce: "spa-nonce-1" })
      const email = await signInOnHostedLogin(
        h,
        page,
        (url) => url.origin === site.base && url.pathname === "/callback",
        "oidc-client-ts",
      )
      expect(new URL(page.url()).searchParams.get("iss")).toBe(h.env.issuer)
      const user = await page.evaluate(async () => {
        const u = await (window as any).makeManager().signinCallback()
        return {
          profile: u.profile,
          scope: u.scope,
          idToken: u.id_token,
          accessToken: u.access_token,
          hasRefresh: typeof u.refresh_token === "string",
        }
      })
      // profile = ID token claims (protocol claims such as amr filtered out by the library) + UserInfo
      expect(user.profile).toMatchObject({ sub: expect.any(String), email, email_verified: true })
      expect(user.scope).toBe("openid profile email offline_access")
      expect(user.hasRefresh).toBe(true)
      expect(decodeJwt(user.idToken)).toMatchObject({
        nonce: "spa-nonce-1",
        aud: spa.id,
        iss: h.env.issuer,
        amr: ["email_otp"],
      })

      const refreshed = await page.evaluate(async () => {
        const u = await (window as any).makeManager().signinSilent()
        return { idToken: u.id_token, accessToken: u.access_token, refreshToken: u.refresh_token }
      })
      expect(refreshed.accessToken).not.toBe(user.accessToken)
      const refreshedId = decodeJwt(refreshed.idToken)
      // After a refresh amr/acr say how THIS token was obtained; auth_time stays the first login's.
      expect(refreshedId).toMatchObject({
        amr: ["refresh_token"],
        acr: "urn:example-auth:loa:basic",
        auth_time: decodeJwt(user.idToken).auth_time,
      })

      await page.evaluate(async () => {
        await (window as any).makeManager().revokeTokens(["refresh_token"])
      })
      const after = await postForm(h.app, h.env, "/oauth2/token", {
        grant_type: "refresh_token",
        refresh_token: refreshed.refreshToken,
        client_id: spa.id,
      })
      expect(after.status).toBe(400)
      expect(after.json.error).toBe("invalid_grant")
    } finally {
      await context.close()
    }
  })

  it("with its defaults (no nonce) the error page names the rule, and its link brings the error to signinCallback", async () => {
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await startSignin(page, {})
      await page.waitForURL((url) => url.host === h.env.interaction_domain && url.pathname === "/login/error", {
        timeout: 15_000,
      })
      await expect.poll(() => page.locator("#rule").innerText()).toContain("must send a nonce with scope openid")
      await page.getByRole("link", { name: /Return to/ }).click()
      await page.waitForURL((url) => url.origin === site.base && url.pathname === "/callback", { timeout: 15_000 })
      const callback = new URL(page.url())
      expect(callback.searchParams.get("code")).toBeNull()
      expect(callback.searchParams.get("iss")).toBe(h.env.issuer)
      const refused = await page.evaluate(async () => {
        try {
          await (window as any).makeManager().signinCallback()
          return undefined
        } catch (e) {
          return { name: (e as any).name, error: (e as any).error, description: (e as any).error_description }
        }
      })
      expect(refused).toEqual({
        name: "ErrorResponse",
        error: "invalid_request",
        description: "nonce is required when the openid scope is requested",
      })
    } finally {
      await context.close()
    }
  })
})
