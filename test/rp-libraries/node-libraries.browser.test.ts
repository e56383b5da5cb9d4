import * as oauth from "oauth4webapi"
import * as oidc from "openid-client"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { publicApi, uniqueEmail } from "../login/support.js"
import { createClient, queryRows, type TestClient } from "../oidc/support.js"
import { type Harness, listen, signInOnHostedLogin, startHarness } from "./support.js"

// openid-client (v6) and oauth4webapi, unmodified, as a server-side web app (web_bff) uses
// them: discovery, the authorization URL, Hosted Login in a real Chromium, then the callback
// validated by the library (state, iss per RFC 9207 because discovery announces it, PKCE,
// nonce, ES256 ID token) and the code exchanged with the client's registered method.
// Authorize refusals reach the library as an RFC 6749 4.1.2.1 error response.

let h: Harness
let site: Awaited<ReturnType<typeof listen>>
let basicClient: TestClient
let postClient: TestClient
const SCOPE = "openid profile email offline_access"

beforeAll(async () => {
  h = await startHarness()
  site = await listen((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>app</title><p>app")
  })
  basicClient = await createClient(h.app, h.env, {
    type: "web_bff",
    method: "client_secret_basic",
    redirectUris: [`${site.base}/callback`],
  })
  postClient = await createClient(h.app, h.env, {
    type: "web_bff",
    method: "client_secret_post",
    redirectUris: [`${site.base}/callback`],
  })
  // A client that may not ask for offline_access: its refusal is returnable (invalid_scope).
  await queryRows(h.app, "update clients set allowed_scopes = '{openid,profile,email}' where id = $1", [postClient.id])
}, 60_000)
afterAll(async () => {
  await site?.close()
  await h?.close()
})

const atCallback = (url: URL) => url.origin === site.base && url.pathname === "/callback"

/** The browser's trip: the library's authorization URL -> Hosted Login -> back at the app. */
const visit = async (url: URL, signIn: (page: Page) => Promise<unknown>) => {
  const context = await h.browser.newContext()
  const page = await context.newPage()
  try {
    await page.goto(url.href)
    await signIn(page)
    return new URL(page.url())
  } finally {
    await context.close()
  }
}

/** What a library call throws (undefined when it does not). */
const refusalOf = (call: () => unknown): unknown => {
  try {
    call()
    return undefined
  } catch (e) {
    return e
  }
}

/** The person reads the error page and follows its "Return to ..." link. */
const returnFromErrorPage = async (page: Page, rule: string) => {
  await page.waitForURL((u) => u.host === h.env.interaction_domain && u.pathname === "/login/error", {
    timeout: 15_000,
  })
  expect(await page.locator("#rule").innerText()).toContain(rule)
  await page.getByRole("link", { name: /Return to/ }).click()
  await page.waitForURL(atCallback, { timeout: 15_000 })
}

describe("openid-client (v6)", () => {
  it("ClientSecretBasic web app: the callback's iss, state and nonce are checked, then UserInfo and refresh", async () => {
    const config = await oidc.discovery(
      new URL(h.env.issuer),
      basicClient.id,
      undefined,
      oidc.ClientSecretBasic(basicClient.secret!),
      {
        execute: [oidc.allowInsecureRequests],
      },
    )
    expect(config.serverMetadata().authorization_response_iss_parameter_supported).toBe(true)
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: `${site.base}/callback`,
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    let email = ""
    const callback = await visit(url, async (page) => {
      email = await signInOnHostedLogin(h, page, atCallback, "openid-client")
    })
    expect(callback.searchParams.get("iss")).toBe(h.env.issuer)

    // A callback without iss is refused by the library now that discovery announces RFC 9207.
    const stripped = new URL(callback)
    stripped.searchParams.delete("iss")
    const withoutIss = await oidc
      .authorizationCodeGrant(config, stripped, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
      })
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: Error },
      )
    expect(withoutIss?.cause?.message).toMatch(/"iss"/)

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    const claims = tokens.claims()!
    expect(claims).toMatchObject({
      iss: h.env.issuer,
      aud: basicClient.id,
      nonce,
      email,
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
    })
    expect(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)).toMatchObject({ sub: claims.sub, email })
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.claims()).toMatchObject({
      amr: ["refresh_token"],
      acr: "urn:example-auth:loa:basic",
      auth_time: claims.auth_time,
    })
  })

  it("a custom UI (Public API): complete answers iss; the redirect built from code, state and iss is accepted by authorizationCodeGrant", async () => {
    const config = await oidc.discovery(
      new URL(h.env.issuer),
      basicClient.id,
      undefined,
      oidc.ClientSecretBasic(basicClient.secret!),
      {
        execute: [oidc.allowInsecureRequests],
      },
    )
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const created = await publicApi(h.app, h.env, "/auth/transactions", {
      body: {
        client_id: basicClient.id,
        redirect_uri: `${site.base}/callback`,
        scope: "openid email",
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      },
    })
    expect(created.status, created.text).toBe(201)
    const txn = created.json.transaction_id as string
    const email = uniqueEmail("custom-ui")
    const start = await publicApi(h.app, h.env, `/auth/transactions/${txn}/email/start`, { body: { email } })
    expect(start.status, start.text).toBe(202)
    const otp = await h.smtp.waitForCode(email)
    const verify = await publicApi(h.app, h.env, `/auth/transactions/${txn}/email/verify`, {
      body: { challenge_id: start.json.challenge_id, code: otp },
    })
    expect(verify.status, verify.text).toBe(200)
    const complete = await publicApi(h.app, h.env, `/auth/transactions/${txn}/complete`, { method: "POST" })
    expect(complete.status, complete.text).toBe(200)
    expect(complete.json).toMatchObject({ state, redirect_uri: `${site.base}/callback`, iss: h.env.issuer })

    // What docs/oidc-libraries.md tells a custom UI to hand to the library: redirect_uri + code, state and iss.
    const callback = new URL(complete.json.redirect_uri)
    callback.searchParams.set("code", complete.json.authorization_code)
    callback.searchParams.set("state", complete.json.state)
    callback.searchParams.set("iss", complete.json.iss)
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    expect(tokens.claims()).toMatchObject({ iss: h.env.issuer, aud: basicClient.id, nonce, email, amr: ["email_otp"] })
  })

  it("a refused request (scope not allowed) reaches authorizationCodeGrant as AuthorizationResponseError invalid_scope", async () => {
    const config = await oidc.discovery(
      new URL(h.env.issuer),
      postClient.id,
      undefined,
      oidc.ClientSecretPost(postClient.secret!),
      {
        execute: [oidc.allowInsecureRequests],
      },
    )
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: `${site.base}/callback`,
      scope: SCOPE,
      state,
      nonce: oidc.randomNonce(),
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    const callback = await visit(url, (page) => returnFromErrorPage(page, "not in its allowed_scopes"))
    const refused = await oidc
      .authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(refused).toBeInstanceOf(oidc.AuthorizationResponseError)
    expect((refused as oidc.AuthorizationResponseError).error).toBe("invalid_scope")
  })
})

describe("oauth4webapi", () => {
  const insecure = { [oauth.allowInsecureRequests]: true } as const

  it("ClientSecretPost web app: validateAuthResponse (state + iss), code exchange, ID token, RFC 9068 access token", async () => {
    const issuer = new URL(h.env.issuer)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
    )
    const rp: oauth.Client = { client_id: postClient.id }
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce = oauth.generateRandomNonce()
    const url = new URL(as.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: postClient.id,
      redirect_uri: `${site.base}/callback`,
      response_type: "code",
      scope: "openid email",
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v)
    let email = ""
    const callback = await visit(url, async (page) => {
      email = await signInOnHostedLogin(h, page, atCallback, "oauth4webapi")
    })
    const params = oauth.validateAuthResponse(as, rp, callback, state)
    const result = await oauth.processAuthorizationCodeResponse(
      as,
      rp,
      await oauth.authorizationCodeGrantRequest(
        as,
        rp,
        oauth.ClientSecretPost(postClient.secret!),
        params,
        `${site.base}/callback`,
        verifier,
        insecure,
      ),
      { expectedNonce: nonce, requireIdToken: true },
    )
    expect(oauth.getValidatedIdTokenClaims(result)).toMatchObject({ iss: h.env.issuer, aud: postClient.id, email })
    const access = await oauth.validateJwtAccessToken(
      as,
      new Request("http://rs.example/", {
        headers: { authorization: `Bearer ${result.access_token}` },
      }),
      h.env.issuer,
      { ...insecure, signingAlgorithms: ["ES256"] },
    )
    expect(access).toMatchObject({ client_id: postClient.id, scope: "openid email" })
  })

  it.each([
    [
      "no PKCE",
      { code_challenge: undefined, code_challenge_method: undefined },
      "code_challenge is required: PKCE with S256 is required for every client, confidential ones included",
    ],
    ["PKCE plain", { code_challenge_method: "plain" }, "code_challenge_method plain is not supported; use S256"],
  ] as const)(
    "%s: the browser lands on the callback at once and validateAuthResponse throws AuthorizationResponseError invalid_request with the rule",
    async (_name, overrides, rule) => {
      const issuer = new URL(h.env.issuer)
      const as = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
      )
      const rp: oauth.Client = { client_id: basicClient.id }
      const state = oauth.generateRandomState()
      const url = new URL(as.authorization_endpoint!)
      const params: Record<string, string | undefined> = {
        client_id: basicClient.id,
        redirect_uri: `${site.base}/callback`,
        response_type: "code",
        scope: "openid",
        state,
        nonce: "n",
        code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
        code_challenge_method: "S256",
        ...(overrides as Record<string, string | undefined>),
      }
      for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
      const callback = await visit(url, (page) => page.waitForURL(atCallback, { timeout: 15_000 }))
      const refused = refusalOf(() => oauth.validateAuthResponse(as, rp, callback, state))
      expect(refused).toBeInstanceOf(oauth.AuthorizationResponseError)
      expect((refused as Error).message).toBe("authorization response from the server is an error")
      expect((refused as oauth.AuthorizationResponseError).error).toBe("invalid_request")
      expect((refused as oauth.AuthorizationResponseError).error_description).toBe(rule)
    },
  )

  it("no nonce with openid: validateAuthResponse throws AuthorizationResponseError invalid_request with the rule", async () => {
    const issuer = new URL(h.env.issuer)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
    )
    const rp: oauth.Client = { client_id: basicClient.id }
    const state = oauth.generateRandomState()
    const url = new URL(as.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: basicClient.id,
      redirect_uri: `${site.base}/callback`,
      response_type: "code",
      scope: "openid",
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v)
    const callback = await visit(url, (page) => returnFromErrorPage(page, "must send a nonce with scope openid"))
    const refused = refusalOf(() => oauth.validateAuthResponse(as, rp, callback, state))
    expect(refused).toBeInstanceOf(oauth.AuthorizationResponseError)
    expect((refused as oauth.AuthorizationResponseError).error).toBe("invalid_request")
    expect((refused as oauth.AuthorizationResponseError).error_description).toBe(
      "nonce is required when the openid scope is requested",
    )
  })
})
