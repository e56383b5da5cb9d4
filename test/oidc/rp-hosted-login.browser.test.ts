import { createServer, type Server } from "node:http"
import { launchChromium } from "../support/browser.js"
import type { AddressInfo } from "node:net"
import * as oauth from "oauth4webapi"
import * as oidc from "openid-client"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, type LoginClientInfo, type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"

// The whole Authorization Code flow as relying parties see it: real, unmodified openid-client (v6)
// and oauth4webapi run discovery, build the authorization request, a real browser (Chromium
// through playwright-core) signs in on Hosted Login with an Email OTP read from a real
// SMTP sink, and the libraries exchange the code, validate the ID token, call UserInfo, refresh,
// revoke and log out, against the running server over a socket. The only concession is each
// library's documented insecure-HTTP option (the test issuer is http://localhost:<port>/e/<env>).

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let smtp: SmtpSink
let browser: Browser
let callbackServer: Server
let callbackBase: string
const callbacks: Array<URL> = []
const SCOPE = "openid profile email offline_access"

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  callbackServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", callbackBase)
    if (url.pathname === "/callback") callbacks.push(url)
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end("<!doctype html><title>Callback</title><p>Done</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  callbackBase = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`
  client = await createClient(app, b, {
    redirect_uris: [`${callbackBase}/callback`],
    post_logout_redirect_uris: [`${callbackBase}/signed-out`],
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await smtp?.close()
})

/** Hosted Login with Email OTP in the browser; returns the callback URL the browser landed on. */
const signInOnHostedLogin = async (authorizationUrl: URL, email: string): Promise<URL> => {
  const context = await browser.newContext()
  const page = await context.newPage()
  try {
    const before = callbacks.length
    await page.goto(authorizationUrl.href)
    expect(new URL(page.url()).host).toBe(b.interaction_domain)
    await page.getByLabel("Email address").fill(email)
    await page.getByRole("button", { name: "Continue with email" }).click()
    const code = await smtp.waitForCode(email)
    await page.getByLabel("Code", { exact: true }).fill(code)
    await page.getByRole("button", { name: "Verify" }).click()
    await landOnCallback(page)
    expect(callbacks.length).toBe(before + 1)
    return callbacks.at(-1)!
  } finally {
    await context.close()
  }
}

/** After the code is verified the page may offer a passkey first (src/passkeys/hosted-login): decline it. */
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

describe("relying-party libraries through /oauth2/authorize and Hosted Login", () => {
  it("openid-client: discovery -> authorize -> Hosted Login -> code exchange -> ID token -> userinfo -> refresh -> revoke -> logout", async () => {
    const config = await oidc.discovery(new URL(b.issuer), client.client_id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    })
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: client.redirect_uri,
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    const email = uniqueEmail("openid-client")
    const callback = await signInOnHostedLogin(url, email)

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    const claims = tokens.claims()!
    expect(claims).toMatchObject({
      iss: b.issuer,
      aud: client.client_id,
      nonce,
      email,
      email_verified: true,
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
    })
    expect(tokens.scope).toBe(SCOPE)

    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)
    expect(info).toMatchObject({ sub: claims.sub, email, email_verified: true })

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.claims()).toMatchObject({ sub: claims.sub, amr: ["refresh_token"], auth_time: claims.auth_time })
    await oidc.tokenRevocation(config, refreshed.refresh_token!)
    const refused = await oidc.refreshTokenGrant(config, refreshed.refresh_token!).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((refused as oidc.ResponseBodyError).error).toBe("invalid_grant")

    const logout = oidc.buildEndSessionUrl(config, {
      id_token_hint: refreshed.id_token!,
      post_logout_redirect_uri: `${callbackBase}/signed-out`,
      state: "bye",
    })
    const res = await fetch(logout, { redirect: "manual" })
    expect(res.status).toBe(302)
    expect(res.headers.get("location")).toBe(`${callbackBase}/signed-out?state=bye`)
    const afterLogout = await oidc.fetchUserInfo(config, refreshed.access_token, claims.sub).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(afterLogout).toBeInstanceOf(oidc.WWWAuthenticateChallengeError)
  })

  it("oauth4webapi: discovery -> authorize -> Hosted Login -> code exchange -> ID token -> userinfo -> refresh -> revoke", async () => {
    const insecure = { [oauth.allowInsecureRequests]: true } as const
    const issuer = new URL(b.issuer)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
    )
    const rp: oauth.Client = { client_id: client.client_id }
    const auth = oauth.None()
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce = oauth.generateRandomNonce()
    const url = new URL(as.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: client.client_id,
      redirect_uri: client.redirect_uri,
      response_type: "code",
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v)
    const email = uniqueEmail("oauth4webapi")
    const callback = await signInOnHostedLogin(url, email)

    const params = oauth.validateAuthResponse(as, rp, callback, state)
    const result = await oauth.processAuthorizationCodeResponse(
      as,
      rp,
      await oauth.authorizationCodeGrantRequest(as, rp, auth, params, client.redirect_uri, verifier, insecure),
      { expectedNonce: nonce, requireIdToken: true },
    )
    const claims = oauth.getValidatedIdTokenClaims(result)!
    expect(claims).toMatchObject({ iss: b.issuer, aud: client.client_id, nonce, email })

    const access = await oauth.validateJwtAccessToken(
      as,
      new Request("http://rs.example/", {
        headers: { authorization: `Bearer ${result.access_token}` },
      }),
      b.issuer,
      { ...insecure, signingAlgorithms: ["ES256"] },
    )
    expect(access).toMatchObject({ sub: claims.sub, client_id: client.client_id, scope: SCOPE })

    const info = await oauth.processUserInfoResponse(
      as,
      rp,
      claims.sub,
      await oauth.userInfoRequest(as, rp, result.access_token, insecure),
    )
    expect(info).toMatchObject({ sub: claims.sub, email })

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      rp,
      await oauth.refreshTokenGrantRequest(as, rp, auth, result.refresh_token!, insecure),
    )
    expect(oauth.getValidatedIdTokenClaims(refreshed)).toMatchObject({ sub: claims.sub, amr: ["refresh_token"] })
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, rp, auth, refreshed.refresh_token!, insecure),
    )
    const refused = await oauth
      .processRefreshTokenResponse(
        as,
        rp,
        await oauth.refreshTokenGrantRequest(as, rp, auth, refreshed.refresh_token!, insecure),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect((refused as oauth.ResponseBodyError).error).toBe("invalid_grant")
  })
})
