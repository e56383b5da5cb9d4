import fc from "fast-check"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { createClient, type TestClient } from "../oidc/support.js"
import { expectOAuthError, expectProblem, paramsFor, RUNS, refusedChangesNothing, snapshot } from "./support.js"

let app: TestApp
let b: Bootstrapped
let spa: TestClient
let bff: TestClient

beforeAll(async () => {
  // Limits raised: the properties are about decoding and rules, not about rate limiting.
  app = await startApp({
    env: {
      RATE_LIMIT_CLIENT_PER_MINUTE: "1000000",
      RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
      RATE_LIMIT_TOKEN_CEILING_PER_MINUTE: "1000000",
      RATE_LIMIT_INTROSPECT_PER_MINUTE: "1000000",
      RATE_LIMIT_INTROSPECT_CEILING_PER_MINUTE: "1000000",
      RATE_LIMIT_MANAGEMENT_PER_MINUTE: "1000000",
    },
  })
  b = await app.bootstrap()
  spa = await createClient(app, b)
  bff = await createClient(app, b, { type: "web_bff" })
})
afterAll(async () => {
  await app?.close()
})

const valid = () => ({
  client_id: [spa.id, bff.id],
  client_secret: [bff.secret!],
  redirect_uri: [spa.redirectUri, bff.redirectUri],
  post_logout_redirect_uri: [spa.postLogoutRedirectUri],
  grant_type: ["authorization_code", "refresh_token", "client_credentials", "password"],
  response_type: ["code", "token", "code id_token"],
  code_challenge: ["E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],
  code_challenge_method: ["S256", "plain"],
  code_verifier: ["dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"],
  scope: ["openid", "openid email offline_access", "admin"],
  token_type_hint: ["access_token", "refresh_token", "id_token"],
  prompt: ["login", "none", "consent"],
  response_mode: ["query", "fragment", "form_post"],
  resource: ["https://api.example.com"],
})

const form = (path: string, body: string, headers: Record<string, string> = {}) =>
  app.issuer(b.environment_id, path, {
    method: "POST",
    body,
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
  })

const basic = `Basic ${Buffer.from(`${"cli_x"}:${"y"}`).toString("base64")}`
const authHeaders = () =>
  fc.constantFrom<Record<string, string>>(
    {},
    { authorization: basic },
    { authorization: `Basic ${Buffer.from(`${bff.id}:${bff.secret}`).toString("base64")}` },
    { authorization: "Basic !!!" },
    { authorization: "Bearer x" },
    { "x-management-api-key": "sk_live_nope" },
  )

/** One OAuth endpoint: every answer is an OAuth error of the spec or a success, and a refusal changes nothing. */
const property = (
  name: string,
  params: fc.Arbitrary<string>,
  send: (p: string, headers: Record<string, string>) => Promise<TestResponse>,
  check: (res: TestResponse, context: string) => void,
) =>
  fc.assert(
    fc.asyncProperty(params, authHeaders(), async (p, headers) => {
      const before = await snapshot(app)
      const res = await send(p, headers)
      const context = `${name} ${p.slice(0, 300)} ${JSON.stringify(headers)}`
      expect(res.status, `${context} -> ${res.text}`).toBeLessThan(500)
      check(res, context)
      await refusedChangesNothing(app, before, res, context)
    }),
    { numRuns: RUNS * 2 },
  )

const TOKEN_PARAMS = [
  "grant_type",
  "code",
  "redirect_uri",
  "code_verifier",
  "client_id",
  "client_secret",
  "refresh_token",
  "scope",
  "resource",
]

it("token endpoint parameters: an OAuth error (RFC 6749 §5.2) with its status, never a 500; nothing changes", async () => {
  await property(
    "POST /oauth2/token",
    paramsFor(TOKEN_PARAMS, valid()),
    (p, h) => form("/oauth2/token", p, h),
    (res, context) => {
      // Random codes and refresh tokens never exist: every answer is a refusal.
      expectOAuthError(res, context)
      expect(res.headers["cache-control"], context).toBe("no-store")
    },
  )
}, 120_000)

it("revoke parameters: 200 for any token (RFC 7009 §2.2) or an OAuth error, never a 500; nothing changes", async () => {
  await property(
    "POST /oauth2/revoke",
    paramsFor(["token", "token_type_hint", "client_id", "client_secret"], valid()),
    (p, h) => form("/oauth2/revoke", p, h),
    (res, context) => {
      if (res.status !== 200) expectOAuthError(res, context)
    },
  )
  // A 200 for a token that does not exist changes nothing either (checked above for refusals only).
  const before = await snapshot(app)
  const res = await form("/oauth2/revoke", `token=rt_nope.1.nope&client_id=${spa.id}`)
  expect(res.status).toBe(200)
  expect(await snapshot(app)).toEqual(before)
}, 120_000)

it("introspect parameters: {active:false} or an OAuth error, never a 500; nothing changes", async () => {
  await property(
    "POST /oauth2/introspect",
    paramsFor(["token", "token_type_hint", "client_id", "client_secret"], valid()),
    (p, h) => form("/oauth2/introspect", p, h),
    (res, context) => {
      if (res.status === 200) expect(res.json, context).toEqual({ active: false })
      else expectOAuthError(res, context)
    },
  )
}, 120_000)

const AUTHORIZE_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "scope",
  "state",
  "nonce",
  "code_challenge",
  "code_challenge_method",
  "prompt",
  "response_mode",
  "resource",
  "login_hint",
]

it("authorize parameters: a redirect to Hosted Login (login or error page), an error response at a registered redirect URI, or a 400 page, never a 500, a code or a redirect to an unregistered URI", async () => {
  const hosted = `http://${b.interaction_domain}/login/`
  const registered = [spa.redirectUri, bff.redirectUri]
  await fc.assert(
    fc.asyncProperty(paramsFor(AUTHORIZE_PARAMS, valid()), async (p) => {
      const before = await snapshot(app)
      const res = await app.issuer(b.environment_id, `/oauth2/authorize?${p}`)
      const context = `GET /oauth2/authorize?${p.slice(0, 300)}`
      expect(res.status, `${context} -> ${res.text}`).toBeLessThan(500)
      if (res.status === 302) {
        const location = String(res.headers["location"])
        if (location.startsWith(hosted)) {
          // Only the hand-off to the login page is a success (it creates the transaction).
          if (!location.startsWith(`${hosted}continue?handoff=`)) expect(await snapshot(app), context).toEqual(before)
        } else {
          // RFC 6749 4.1.2.1: an error response, only at a registered redirect URI, never with a code.
          const url = new URL(location)
          expect(registered, `${context} -> ${location}`).toContain(`${url.origin}${url.pathname}`)
          expect(url.searchParams.get("error"), context).toBeTruthy()
          expect(url.searchParams.has("code"), context).toBe(false)
          expect(await snapshot(app), context).toEqual(before)
        }
      } else {
        // No usable client_id or redirect_uri, or a NUL in the URL refused before any route runs
        // (the test below): the issuer's own page, never JSON.
        expect(String(res.headers["content-type"]), context).toMatch(/^text\/html/)
        expect(res.status, context).toBe(400)
        expect(res.text, context).toContain('data-error="invalid_request"')
        expect(await snapshot(app), context).toEqual(before)
      }
    }),
    { numRuns: RUNS * 3 },
  )
}, 120_000)

it("logout parameters (GET and POST): a page, a redirect or a refusal, never a 500; without a session nothing changes", async () => {
  const names = ["id_token_hint", "post_logout_redirect_uri", "state", "client_id", "ui_locales"]
  await fc.assert(
    fc.asyncProperty(paramsFor(names, valid()), fc.boolean(), async (p, viaPost) => {
      const before = await snapshot(app)
      const res = viaPost ? await form("/oauth2/logout", p) : await app.issuer(b.environment_id, `/oauth2/logout?${p}`)
      const context = `${viaPost ? "POST" : "GET"} /oauth2/logout ${p.slice(0, 300)}`
      expect(res.status, `${context} -> ${res.text}`).toBeLessThan(500)
      if (res.status >= 400 && String(res.headers["content-type"]).startsWith("application/problem+json"))
        expectProblem(res, context)
      if (res.status === 302)
        expect(String(res.headers["location"]), context).not.toMatch(/^https?:\/\/(evil|localhost:1)/)
      // No browser session and no real ID token: logging out changes nothing, answered or refused.
      expect(await snapshot(app), context).toEqual(before)
    }),
    { numRuns: RUNS * 2 },
  )
}, 120_000)

it("found by fuzzing: a NUL in a parameter is 400 invalid_request, not a server error (Postgres cannot compare text holding NUL)", async () => {
  const nul = `client_id=%00&post_logout_redirect_uri=${encodeURIComponent(spa.postLogoutRedirectUri)}&token=x&grant_type=refresh_token&refresh_token=x`
  const token = await form("/oauth2/token", nul)
  expect([token.status, token.json.error]).toEqual([400, "invalid_request"])
  // Revocation answers 200 whatever the token (RFC 7009), introspection {active:false} to an unknown caller.
  expect((await form("/oauth2/revoke", nul)).status).toBeLessThan(500)
  expect((await form("/oauth2/introspect", nul)).json).toEqual({ active: false })
  for (const res of [await form("/oauth2/logout", nul), await app.issuer(b.environment_id, `/oauth2/logout?${nul}`)]) {
    expect([res.status, res.json.code]).toEqual([400, "invalid_request"])
  }
})

it("found by probing what fuzzing found: %00 in a URL is 400 invalid_request before routing (authorize and a transaction lookup answered 500)", async () => {
  const before = await snapshot(app)
  const authorize = await app.issuer(
    b.environment_id,
    `/oauth2/authorize?client_id=%00&response_type=code&redirect_uri=x&scope=openid&nonce=n&state=s`,
  )
  // A person's browser reads it: a page (test/login/authorize-failure-pages.test.ts).
  expect([authorize.status, authorize.headers["content-type"]]).toEqual([400, "text/html; charset=utf-8"])
  expect(authorize.text).toContain('data-error="invalid_request"')
  const lookup = await app.request(b.interaction_domain, "/v1/auth/transactions/txn_%00")
  expect([lookup.status, lookup.headers["content-type"], lookup.json.code]).toEqual([
    400,
    "application/problem+json",
    "invalid_request",
  ])
  expect(await snapshot(app)).toEqual(before)
})
