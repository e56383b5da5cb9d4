import { expect } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { query } from "../login/support.js"
import { createClient, type TestClient } from "../oidc/support.js"
import { type Harness, pageJson, signInOnHostedLogin, startProcess } from "./support.js"

/**
 * The recipes beyond JavaScript whose app serves the same four JSON routes (`/login`, `/me`,
 * `/refresh`, `/logout`; test/rp-libraries/apps): one confidential client per run, the app
 * process started with the recipe's variables, and one walk through sign-in, UserInfo,
 * refresh and logout at the issuer.
 */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post"

export interface RecipeApp {
  readonly command: string
  readonly args?: ReadonlyArray<string>
  /** Variables beyond the recipe's own (ISSUER, APP_ORIGIN, PORT, CLIENT_ID, CLIENT_SECRET, TOKEN_ENDPOINT_AUTH_METHOD). */
  readonly env?: Record<string, string>
}

export const walkRecipe = async (
  h: Harness,
  recipe: RecipeApp,
  method: ClientAuthMethod,
  label: string,
  stops: Array<() => Promise<void>>,
) => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const c: TestClient = await createClient(h.app, h.env, {
    type: "web_bff",
    method,
    redirectUris: [`${origin}/callback`],
    postLogoutRedirectUris: [`${origin}/`],
  })
  const app = await startProcess(recipe.command, recipe.args ?? [], {
    env: {
      ISSUER: h.env.issuer,
      APP_ORIGIN: origin,
      PORT: String(port),
      CLIENT_ID: c.id,
      CLIENT_SECRET: c.secret!,
      TOKEN_ENDPOINT_AUTH_METHOD: method,
      ...recipe.env,
    },
    readyUrl: `${origin}/`,
  })
  stops.push(app.close)
  const context = await h.browser.newContext()
  const page = await context.newPage()
  try {
    const authorizeRequest = page.waitForRequest((r) => new URL(r.url()).pathname.endsWith("/oauth2/authorize"))
    await page.goto(`${origin}/login`)
    const authorize = new URL((await authorizeRequest).url())
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256")
    expect(authorize.searchParams.get("nonce")).toEqual(expect.any(String))
    const email = await signInOnHostedLogin(h, page, (url) => url.origin === origin && url.pathname === "/me", label)
    const me = await pageJson(page)
    expect(me.id_token_claims, app.output()).toMatchObject({
      iss: h.env.issuer,
      aud: c.id,
      email,
      nonce: authorize.searchParams.get("nonce"),
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
    })
    expect(me.userinfo).toMatchObject({ sub: me.id_token_claims.sub, email, email_verified: true })

    await page.goto(`${origin}/refresh`)
    const refreshed = await pageJson(page)
    expect(refreshed.id_token_claims, app.output()).toMatchObject({
      iss: h.env.issuer,
      aud: c.id,
      sub: me.id_token_claims.sub,
      sid: me.id_token_claims.sid,
      auth_time: me.id_token_claims.auth_time,
      amr: ["refresh_token"],
    })
    expect(refreshed.rotated).toBe(true)
    await page.goto(`${origin}/me`)
    expect((await pageJson(page)).userinfo).toMatchObject({ email })

    await page.goto(`${origin}/logout`)
    await page.waitForURL((url) => url.origin === origin && url.pathname === "/", { timeout: 15_000 })
    expect(await pageJson(page)).toEqual({ authenticated: false })
    // The issuer ended the login session too (id_token_hint named it).
    expect(
      await query(h.app, "select revoked_reason from login_sessions where id = $1", [me.id_token_claims.sid]),
    ).toEqual([{ revoked_reason: "user_logout" }])
  } finally {
    await context.close()
  }
}
