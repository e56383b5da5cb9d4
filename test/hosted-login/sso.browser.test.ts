import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as oidc from "openid-client"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium } from "../support/browser.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  type LoginClientInfo,
  query,
  type SmtpSink,
  startSmtpSink,
  uniqueEmail,
} from "../login/support.js"

// Single sign-on at Hosted Login in a real browser (Chromium through playwright-core), with
// openid-client (v6, unmodified but for its insecure-HTTP option) for the tokens
// (docs/decisions/hosted-login-sso.md): a second authorization from the same browser continues
// as the signed-in user with one click and the real sign-in's auth_time; logout, a block and a
// Management session revoke end it.

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let browser: Browser
let callbackServer: Server
let callbackBase: string
let first: LoginClientInfo
let second: LoginClientInfo
let firstConfig: oidc.Configuration
let secondConfig: oidc.Configuration
const SCOPE = "openid email"

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  callbackServer = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end("<!doctype html><title>App</title><p>Back at the app</p>")
  })
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", () => resolve()))
  callbackBase = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`
  first = await createClient(app, b, {
    name: "First App",
    redirect_uris: [`${callbackBase}/first/callback`],
    post_logout_redirect_uris: [`${callbackBase}/signed-out`],
  })
  second = await createClient(app, b, { name: "Second App", redirect_uris: [`${callbackBase}/second/callback`] })
  const discover = (c: LoginClientInfo) =>
    oidc.discovery(new URL(b.issuer), c.client_id, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] })
  firstConfig = await discover(first)
  secondConfig = await discover(second)
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()))
  await app?.close()
  await smtp?.close()
})

const masked = (email: string) => `${email.slice(0, 1)}***@e***.com`

/** One authorization by openid-client: the browser goes to its URL; `act` takes it through Hosted Login. */
const authorize = async (
  page: Page,
  config: oidc.Configuration,
  client: LoginClientInfo,
  act: (page: Page) => Promise<void>,
) => {
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
  await page.goto(url.href)
  await page.waitForURL((u) => u.host === b.interaction_domain, { timeout: 15_000 })
  await act(page)
  await page.waitForURL((u) => u.href.startsWith(client.redirect_uri), { timeout: 15_000 })
  const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  })
  return { tokens, claims: tokens.claims()! }
}

/** A real sign-in with Email OTP (a passkey offered afterwards is declined). */
const signInWithEmail = (email: string) => async (page: Page) => {
  await page.getByLabel("Email address").fill(email)
  await page.getByRole("button", { name: "Continue with email" }).click()
  await page.getByLabel("Code", { exact: true }).fill(await smtp.waitForCode(email))
  await page.getByRole("button", { name: "Verify" }).click()
  const notNow = page.getByRole("button", { name: "Not now" })
  const offered = notNow.waitFor({ state: "visible", timeout: 15_000 }).then(
    () => true,
    () => false,
  )
  const landed = page.waitForURL((u) => u.origin === callbackBase, { timeout: 15_000 }).then(() => false)
  if (await Promise.race([offered, landed])) await notNow.click()
}

/** The page offers "Continue as" the masked email, and no email field until "Use another account". */
const continueAs = (email: string) => async (page: Page) => {
  const button = page.getByRole("button", { name: `Continue as ${masked(email)}` })
  await button.waitFor({ state: "visible", timeout: 15_000 })
  await expect.poll(() => page.locator("#continue-as-note").innerText()).toBe(`You are signed in as ${masked(email)}.`)
  expect(await page.getByRole("button", { name: "Use another account" }).isVisible()).toBe(true)
  expect(await page.getByLabel("Email address").count()).toBe(0)
  await button.click()
}

/** What the page offers on arrival: "Continue as ..." or the sign-in methods. */
const offerOnArrival = async (page: Page, client: LoginClientInfo) => {
  const url = oidc.buildAuthorizationUrl(client === first ? firstConfig : secondConfig, {
    redirect_uri: client.redirect_uri,
    scope: SCOPE,
    state: "s",
    nonce: "n",
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
    code_challenge_method: "S256",
  })
  await page.goto(url.href)
  const offer = page.locator("#continue-as")
  const email = page.getByLabel("Email address")
  await Promise.race([offer.waitFor({ timeout: 15_000 }), email.waitFor({ timeout: 15_000 })])
  return (await offer.count()) > 0 ? await offer.innerText() : "sign-in methods"
}

const withContext = async (run: (page: Page, context: BrowserContext) => Promise<void>) => {
  const context = await browser.newContext()
  try {
    await run(await context.newPage(), context)
  } finally {
    await context.close()
  }
}

const userIdOf = async (email: string) =>
  (await query<{ id: string }>(app, "select id from users where email = $1", [email]))[0]!.id

describe("single sign-on at Hosted Login", () => {
  it("another client, then the same client again: one click, no code mailed, the same user, auth_time of the real sign-in", async () => {
    await withContext(async (page, context) => {
      const email = uniqueEmail("sso")
      const signedIn = await authorize(page, firstConfig, first, signInWithEmail(email))
      expect(signedIn.claims).toMatchObject({ aud: first.client_id, email, amr: ["email_otp"] })
      const cookie = (await context.cookies(`http://${b.interaction_domain}`)).find(
        (c) => c.name === "authservice_sso",
      )!
      expect([cookie.httpOnly, cookie.sameSite]).toEqual([true, "Lax"])

      // time passes between the two authorizations, so a new sign-in would move auth_time
      await app.advance("2 minutes")
      const mails = smtp.messagesTo(email).length
      const onSecond = await authorize(page, secondConfig, second, continueAs(email))
      expect(onSecond.claims).toMatchObject({
        aud: second.client_id,
        sub: signedIn.claims.sub,
        email,
        amr: ["email_otp"],
        auth_time: signedIn.claims.auth_time,
      })
      expect(onSecond.claims.iat).toBeGreaterThan(signedIn.claims.auth_time!)
      const again = await authorize(page, firstConfig, first, continueAs(email))
      expect(again.claims).toMatchObject({ sub: signedIn.claims.sub, auth_time: signedIn.claims.auth_time })
      expect(smtp.messagesTo(email).length).toBe(mails)
      const info = await oidc.fetchUserInfo(secondConfig, onSecond.tokens.access_token, signedIn.claims.sub)
      expect(info).toMatchObject({ sub: signedIn.claims.sub, email })
    })
  })

  it("'Use another account' shows the sign-in methods; signing in as someone else makes the next offer theirs", async () => {
    await withContext(async (page) => {
      const one = uniqueEmail("sso-one")
      const other = uniqueEmail("sso-other")
      const first1 = await authorize(page, firstConfig, first, signInWithEmail(one))
      const switched = await authorize(page, secondConfig, second, async (p) => {
        await p.getByRole("button", { name: "Use another account" }).click()
        await signInWithEmail(other)(p)
      })
      expect(switched.claims).toMatchObject({ email: other })
      expect(switched.claims.sub).not.toBe(first1.claims.sub)
      expect(await offerOnArrival(page, first)).toBe(`Continue as ${masked(other)}`)
    })
  })

  it("RP-initiated logout with id_token_hint ends it: the next authorization asks to sign in", async () => {
    await withContext(async (page) => {
      const email = uniqueEmail("sso-logout")
      const signedIn = await authorize(page, firstConfig, first, signInWithEmail(email))
      expect(await offerOnArrival(page, second)).toBe(`Continue as ${masked(email)}`)
      await page.goto(
        oidc.buildEndSessionUrl(firstConfig, {
          id_token_hint: signedIn.tokens.id_token!,
          post_logout_redirect_uri: `${callbackBase}/signed-out`,
        }).href,
      )
      await page.waitForURL((u) => u.href === `${callbackBase}/signed-out`, { timeout: 15_000 })
      expect(await offerOnArrival(page, second)).toBe("sign-in methods")
    })
  })

  it("a block ends it, even on a page that offered it before: the click falls back to signing in", async () => {
    await withContext(async (page) => {
      const email = uniqueEmail("sso-block")
      await authorize(page, firstConfig, first, signInWithEmail(email))
      expect(await offerOnArrival(page, second)).toBe(`Continue as ${masked(email)}`)
      const blocked = await app.management(
        `/v1/users/${await userIdOf(email)}/block?environment_id=${b.environment_id}`,
        { method: "POST", body: {} },
      )
      expect(blocked.status, blocked.text).toBe(200)
      await page.locator("#continue-as").click()
      await expect.poll(() => page.locator("#error").innerText()).toBe("Your earlier sign-in has ended. Sign in again.")
      expect(await page.getByLabel("Email address").isVisible()).toBe(true)
      expect(page.url().startsWith(`http://${b.interaction_domain}/`)).toBe(true)
      expect(await offerOnArrival(page, second)).toBe("sign-in methods")
      // unblocking does not bring it back: a block revoked every session of the user
      await app.management(`/v1/users/${await userIdOf(email)}/unblock?environment_id=${b.environment_id}`, {
        method: "POST",
        body: {},
      })
      expect(await offerOnArrival(page, second)).toBe("sign-in methods")
    })
  })

  it("a Management revoke of one session it produced (here the continuation's, not the first) ends it", async () => {
    await withContext(async (page) => {
      const email = uniqueEmail("sso-revoke")
      await authorize(page, firstConfig, first, signInWithEmail(email))
      const continued = await authorize(page, secondConfig, second, continueAs(email))
      expect(await offerOnArrival(page, first)).toBe(`Continue as ${masked(email)}`)
      const revoked = await app.management(
        `/v1/users/${await userIdOf(email)}/sessions/${continued.claims["sid"]}?environment_id=${b.environment_id}`,
        { method: "DELETE" },
      )
      expect(revoked.status, revoked.text).toBe(200)
      expect(await offerOnArrival(page, first)).toBe("sign-in methods")
      const refused = await oidc.fetchUserInfo(secondConfig, continued.tokens.access_token, continued.claims.sub).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError)
    })
  })
})
