import { randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { query } from "../login/support.js"
import { createClient, type TestClient } from "../oidc/support.js"
import {
  type Harness,
  missingDebianPackages,
  pageJson,
  signInOnHostedLogin,
  startHarness,
  startProcess,
  suiteNeeding,
} from "./support.js"

// The Apache recipe of docs/oidc-libraries.md: mod_auth_openidc (Debian's
// libapache2-mod-auth-openidc) in a real apache2, its configuration file used unmodified
// against the real server. A real Chromium signs in on Hosted Login; the module validates the
// ID token (ES256, JWKS), fetches UserInfo, refreshes with the refresh token, and logs out at
// the issuer. The module's info hook (OIDCInfoHook) shows what it holds in its session.

const PACKAGES = ["apache2", "libapache2-mod-auth-openidc"]
const missing = missingDebianPackages(PACKAGES)
const CONF = fileURLToPath(new URL("./apps/apache/mod_auth_openidc.conf", import.meta.url))

describe.skipIf(missing.length > 0)(suiteNeeding("Apache mod_auth_openidc", missing), () => {
  let h: Harness
  const stops: Array<() => Promise<void>> = []
  beforeAll(async () => {
    h = await startHarness()
  }, 60_000)
  afterAll(async () => {
    for (const stop of stops) await stop()
    await h?.close()
  })

  const serveApache = async (method: "client_secret_basic" | "client_secret_post") => {
    const port = await freePort()
    const origin = `http://127.0.0.1:${port}`
    const c: TestClient = await createClient(h.app, h.env, {
      type: "web_bff",
      method,
      redirectUris: [`${origin}/protected/redirect_uri`],
      postLogoutRedirectUris: [`${origin}/index.json`],
    })
    // Apache's workers run as www-data when started by root: the folder must be readable by them.
    const runDir = mkdtempSync(join(tmpdir(), "apache-oidc-"))
    mkdirSync(join(runDir, "htdocs", "protected", "otp-only"), { recursive: true })
    writeFileSync(join(runDir, "htdocs", "index.json"), JSON.stringify({ page: "public" }))
    writeFileSync(join(runDir, "htdocs", "protected", "index.json"), JSON.stringify({ page: "protected" }))
    writeFileSync(join(runDir, "htdocs", "protected", "otp-only", "index.json"), JSON.stringify({ page: "otp-only" }))
    for (const dir of [
      runDir,
      join(runDir, "htdocs"),
      join(runDir, "htdocs", "protected"),
      join(runDir, "htdocs", "protected", "otp-only"),
    ]) {
      chmodSync(dir, 0o755)
    }
    const asRoot = process.getuid?.() === 0
    const apache = await startProcess(
      "/usr/sbin/apache2",
      ["-X", "-f", CONF, ...(asRoot ? ["-D", "RUN_AS_ROOT"] : [])],
      {
        env: {
          ISSUER: h.env.issuer,
          APP_ORIGIN: origin,
          PORT: String(port),
          CLIENT_ID: c.id,
          CLIENT_SECRET: c.secret!,
          TOKEN_ENDPOINT_AUTH_METHOD: method,
          CRYPTO_PASSPHRASE: randomBytes(32).toString("hex"),
          RUN_DIR: runDir,
        },
        readyUrl: `${origin}/index.json`,
      },
    )
    const log = () => {
      try {
        return readFileSync(join(runDir, "error.log"), "utf8")
      } catch {
        return ""
      }
    }
    stops.push(async () => {
      await apache.close()
      rmSync(runDir, { recursive: true, force: true })
    })
    return { origin, client: c, log }
  }

  it.each(["client_secret_basic", "client_secret_post"] as const)(
    "signs in with %s (PKCE S256): ID token, UserInfo, refresh, logout at the issuer",
    async (method) => {
      const { origin, client: c, log } = await serveApache(method)
      const context = await h.browser.newContext()
      const page = await context.newPage()
      try {
        const authorizeRequest = page.waitForRequest((r) => new URL(r.url()).pathname.endsWith("/oauth2/authorize"))
        await page.goto(`${origin}/protected/index.json`)
        const authorize = new URL((await authorizeRequest).url())
        expect(authorize.searchParams.get("code_challenge_method")).toBe("S256")
        expect(authorize.searchParams.get("scope")).toBe("openid profile email offline_access")
        const email = await signInOnHostedLogin(
          h,
          page,
          (url) => url.origin === origin && url.pathname === "/protected/index.json",
          `apache-${method}`,
        )
        expect(await pageJson(page), log()).toEqual({ page: "protected" })

        await page.goto(`${origin}/protected/redirect_uri?info=json`)
        const info = await pageJson(page)
        expect(info.id_token).toMatchObject({
          iss: h.env.issuer,
          aud: c.id,
          email,
          amr: ["email_otp"],
          acr: "urn:example-auth:loa:basic",
        })
        expect(info.userinfo).toMatchObject({ sub: info.id_token.sub, email, email_verified: true })
        expect(info.refresh_token).toMatch(/^rt_/)
        const otpOnly = `${origin}/protected/otp-only/index.json`
        const beforeRefresh = await context.request.get(otpOnly, { maxRedirects: 0 })
        expect([beforeRefresh.status(), await beforeRefresh.json()]).toEqual([200, { page: "otp-only" }])

        // the info hook refreshes when the access token is older than the interval (0: now)
        await page.goto(`${origin}/protected/redirect_uri?info=json&access_token_refresh_interval=0`)
        const refreshed = await pageJson(page)
        expect(refreshed.access_token, log()).not.toBe(info.access_token)
        expect(refreshed.refresh_token).not.toBe(info.refresh_token)
        expect(refreshed.refresh_token).toMatch(/^rt_/)
        // the module keeps the refreshed ID token's claims: amr and acr now describe the refresh
        expect(refreshed.id_token).toMatchObject({
          sub: info.id_token.sub,
          sid: info.id_token.sid,
          auth_time: info.id_token.auth_time,
          amr: ["refresh_token"],
          acr: "urn:example-auth:loa:basic",
        })
        // so a `Require claim amr:...` rule no longer holds: the same signed-in user is refused
        const afterRefresh = await context.request.get(otpOnly, { maxRedirects: 0 })
        expect(afterRefresh.status()).toBe(401)

        await page.goto(`${origin}/protected/redirect_uri?logout=${encodeURIComponent(`${origin}/index.json`)}`)
        await page.waitForURL((url) => url.origin === origin && url.pathname === "/index.json", { timeout: 15_000 })
        expect(await pageJson(page)).toEqual({ page: "public" })
        expect(
          await query(h.app, "select revoked_reason from login_sessions where id = $1", [info.id_token.sid]),
        ).toEqual([{ revoked_reason: "user_logout" }])
      } finally {
        await context.close()
      }
    },
  )
})
