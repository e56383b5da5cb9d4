import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import {
  countRows,
  createClient,
  type LoginClientInfo,
  pkce,
  query,
  RESOURCE,
  type SmtpSink,
  startSmtpSink,
  transactionStatus,
  uniqueEmail,
} from "./support.js"

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let smtp: SmtpSink

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  client = await createClient(app, b, { allowed_resources: [RESOURCE, `${RESOURCE}/v2`] })
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const params = (overrides: Record<string, string | Array<string> | undefined> = {}) => {
  const base: Record<string, string | Array<string> | undefined> = {
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email",
    state: "st-1",
    nonce: "n-1",
    code_challenge: pkce().challenge,
    code_challenge_method: "S256",
    ...overrides,
  }
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, one)
  }
  return q.toString()
}
const authorize = (query: string) => app.issuer(b.environment_id, `/oauth2/authorize?${query}`)
const interactionOrigin = () => `http://${b.interaction_domain}`

const cookieOf = (res: TestResponse) => {
  const set = ([] as Array<string>).concat(res.headers["set-cookie"] ?? [])
  return set[0]!.split(";")[0]!
}

/** authorize -> hand-off -> cookie: what a browser does before the page. */
const beginHostedLogin = async (overrides: Record<string, string | Array<string> | undefined> = {}) => {
  const res = await authorize(params(overrides))
  expect(res.status, res.text).toBe(302)
  const location = new URL(String(res.headers["location"]))
  const hand = await app.request(b.interaction_domain, `${location.pathname}${location.search}`)
  expect(hand.status).toBe(200)
  const cookie = cookieOf(hand)
  const page = await app.request(b.interaction_domain, "/login", { headers: { cookie } })
  expect(page.status).toBe(200)
  const txn = /data-transaction-id="(txn_[a-z2-7]{32})"/.exec(page.text)![1]!
  expect(hand.text).toContain(`data-transaction-id="${txn}"`)
  return { cookie, txn, handoff: `${location.pathname}${location.search}` }
}

describe("GET /oauth2/authorize: without a usable client_id and redirect_uri, a 400 invalid_request page of the issuer's own, nothing created", () => {
  const cases: Array<[string, Record<string, string | Array<string> | undefined>, string]> = [
    ["missing client_id", { client_id: undefined }, "client_id is required"],
    ["an empty client_id", { client_id: "" }, "client_id is required"],
    ["a repeated client_id", { client_id: ["cli_a", "cli_b"] }, "client_id must not be repeated"],
    ["missing redirect_uri", { redirect_uri: undefined }, "redirect_uri is required"],
    [
      "a repeated redirect_uri",
      { redirect_uri: ["https://a.example/cb", "https://b.example/cb"] },
      "redirect_uri must not be repeated",
    ],
  ]
  for (const [name, overrides, rule] of cases) {
    for (const accept of ["text/html", "application/json"]) {
      it(`${name} (Accept: ${accept})`, async () => {
        const before = await countRows(app, "auth_transactions")
        const res = await app.issuer(b.environment_id, `/oauth2/authorize?${params(overrides)}`, {
          headers: { accept },
        })
        expect(res.status, res.text).toBe(400)
        expect(res.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(res.headers["location"]).toBeUndefined()
        expect(res.headers["cache-control"]).toBe("no-store")
        expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
        // The page loads nothing (the issuer-failure page's inline style, admitted by its hash).
        expect(res.headers["content-security-policy"]).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+';/)
        expect(res.text).toContain('data-error="invalid_request"')
        expect(res.text).toContain(`<code>invalid_request</code>: <span id="rule">${rule}</span>`)
        expect(res.text).toContain("cannot be sent to the application (RFC 6749 4.1.2.1)")
        expect(res.text).not.toMatch(/<link\b/)
        expect(res.text).not.toMatch(/<script\b/)
        expect(await countRows(app, "auth_transactions")).toBe(before)
      })
    }
  }
})

/** The error response at the client's redirect URI (RFC 6749 4.1.2.1), as a map of its query. */
const errorAtClient = (res: TestResponse) => {
  expect(res.status, res.text).toBe(302)
  expect(res.headers["cache-control"]).toBe("no-store")
  const location = new URL(String(res.headers["location"]))
  expect(`${location.origin}${location.pathname}`).toBe(client.redirect_uri)
  return Object.fromEntries(location.searchParams)
}

describe("GET /oauth2/authorize: once the client and redirect URI are trusted, syntax errors reach the client (RFC 6749 4.1.2.1) as the spec's invalid_request, nothing created", () => {
  const cases: Array<[string, Record<string, string | Array<string> | undefined>, string]> = [
    ["missing response_type", { response_type: undefined }, "response_type is required"],
    ["response_type token", { response_type: "token" }, "unsupported response_type: only code is supported"],
    [
      "response_type code id_token",
      { response_type: "code id_token" },
      "unsupported response_type: only code is supported",
    ],
    ["missing scope", { scope: undefined }, "scope is required"],
    ["an empty scope", { scope: "" }, "scope must be space-delimited scope tokens"],
    ["an unknown scope token", { scope: "openid admin" }, "unknown scope: admin"],
    [
      "missing code_challenge",
      { code_challenge: undefined },
      "code_challenge is required: PKCE with S256 is required for every client, confidential ones included",
    ],
    [
      "a 42-character code_challenge",
      { code_challenge: "a".repeat(42) },
      "code_challenge must be 43 base64url characters (BASE64URL(SHA256(code_verifier)))",
    ],
    ["missing code_challenge_method", { code_challenge_method: undefined }, "code_challenge_method is required (S256)"],
    [
      "code_challenge_method plain",
      { code_challenge_method: "plain" },
      "code_challenge_method plain is not supported; use S256",
    ],
    ["an empty nonce", { nonce: "" }, "nonce must be 1 to 512 characters"],
    ["a 513-character nonce", { nonce: "n".repeat(513) }, "nonce must be 1 to 512 characters"],
    ["a repeated nonce", { nonce: ["a", "b"] }, "nonce must not be repeated"],
    [
      "21 resource values",
      { resource: Array.from({ length: 21 }, (_, i) => `${RESOURCE}/${i}`) },
      "at most 20 resource values are allowed",
    ],
    [
      "a resource with a fragment",
      { resource: `${RESOURCE}#f` },
      "each resource must be an absolute URI without a fragment",
    ],
  ]
  for (const [name, overrides, description] of cases) {
    it(`${name}: error, error_description, state, iss`, async () => {
      const before = await countRows(app, "auth_transactions")
      expect(errorAtClient(await authorize(params(overrides)))).toEqual({
        error: "invalid_request",
        error_description: description,
        state: "st-1",
        iss: b.issuer,
      })
      expect(await countRows(app, "auth_transactions")).toBe(before)
    })
  }

  it("state is returned only when the request sent it once (missing, repeated), and as sent (empty, too long)", async () => {
    expect(errorAtClient(await authorize(params({ state: undefined })))).toEqual({
      error: "invalid_request",
      error_description: "state is required for every client (1 to 512 characters)",
      iss: b.issuer,
    })
    expect(errorAtClient(await authorize(params({ state: ["a", "b"] })))).toEqual({
      error: "invalid_request",
      error_description: "state must not be repeated",
      iss: b.issuer,
    })
    expect(errorAtClient(await authorize(params({ state: "" })))).toEqual({
      error: "invalid_request",
      error_description: "state must be 1 to 512 characters",
      state: "",
      iss: b.issuer,
    })
    const long = "s".repeat(513)
    expect(errorAtClient(await authorize(params({ state: long })))).toEqual({
      error: "invalid_request",
      error_description: "state must be 1 to 512 characters",
      state: long,
      iss: b.issuer,
    })
  })

  it("a redirect URI's own query is kept beside the error", async () => {
    const withQuery = await createClient(app, b, { redirect_uris: ["https://app.example.com/cb?tenant=7"] })
    const res = await authorize(
      params({ client_id: withQuery.client_id, redirect_uri: withQuery.redirect_uri, code_challenge_method: "plain" }),
    )
    const location = new URL(String(res.headers["location"]))
    expect(`${location.origin}${location.pathname}`).toBe("https://app.example.com/cb")
    expect(Object.fromEntries(location.searchParams)).toEqual({
      tenant: "7",
      error: "invalid_request",
      error_description: "code_challenge_method plain is not supported; use S256",
      state: "st-1",
      iss: b.issuer,
    })
  })

  it("a Request Object is refused (OIDC Core 6): request_not_supported, request_uri_not_supported, before any other rule", async () => {
    const before = await countRows(app, "auth_transactions")
    expect(errorAtClient(await authorize(params({ request: "eyJhbGciOiJub25lIn0.e30." })))).toEqual({
      error: "request_not_supported",
      error_description: expect.stringContaining("request parameter"),
      state: "st-1",
      iss: b.issuer,
    })
    expect(
      errorAtClient(
        await authorize(params({ request_uri: "urn:ietf:params:oauth:request_uri:abc", response_type: undefined })),
      ),
    ).toEqual({
      error: "request_uri_not_supported",
      error_description: expect.stringContaining("request_uri"),
      state: "st-1",
      iss: b.issuer,
    })
    expect(await countRows(app, "auth_transactions")).toBe(before)
  })
})

describe("POST /oauth2/authorize (form body, OIDC Core 3.1.2.1) answers as GET does", () => {
  const post = (body: string, contentType = "application/x-www-form-urlencoded") =>
    app.issuer(b.environment_id, "/oauth2/authorize", {
      method: "POST",
      body,
      headers: { "content-type": contentType },
    })

  it("success: a bound transaction and the hand-off", async () => {
    const before = await countRows(app, "auth_transactions", "source = 'authorize'")
    const res = await post(params())
    expect(res.status, res.text).toBe(302)
    const location = new URL(String(res.headers["location"]))
    expect(`${location.origin}${location.pathname}`).toBe(`${interactionOrigin()}/login/continue`)
    expect(await countRows(app, "auth_transactions", "source = 'authorize'")).toBe(before + 1)
    const hand = await app.request(b.interaction_domain, `${location.pathname}${location.search}`)
    expect(hand.status).toBe(200)
    expect(hand.text).toMatch(/data-transaction-id="txn_[a-z2-7]{32}"/)
  })

  it("refusals: the same answers as GET (the error response, the error page, the issuer's page); the query of a POST is not read", async () => {
    expect(errorAtClient(await post(params({ code_challenge: undefined })))).toMatchObject({
      error: "invalid_request",
      state: "st-1",
    })
    const noNonce = await post(params({ nonce: undefined }))
    expect(new URL(String(noNonce.headers["location"])).pathname).toBe("/login/error")
    const bare = await app.issuer(b.environment_id, `/oauth2/authorize?${params()}`, { method: "POST" })
    expect([bare.status, bare.headers["content-type"]]).toEqual([400, "text/html; charset=utf-8"])
    expect(bare.text).toContain("client_id is required")
    const json = await post(JSON.stringify({ client_id: client.client_id }), "application/json")
    expect(json.status).toBe(400)
    expect(json.text).toContain("client_id is required")
  })
})

/** The Hosted Login error page URL; returnable failures also name the client, redirect URI and state (test/rp-libraries/authorize-errors.test.ts). */
const errorLocation = (error: string, target?: { client_id: string; redirect_uri: string; state: string }) =>
  `${interactionOrigin()}/login/error?${new URLSearchParams({ error, ...target }).toString()}`

describe("GET /oauth2/authorize: client rule failures go to the Hosted Login error page (the page alone may link back)", () => {
  it.each([
    ["an unknown client", () => ({ client_id: "cli_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }), "unknown_client"],
    [
      "a redirect URI that is not registered byte for byte",
      () => ({ redirect_uri: `${client.redirect_uri}/` }),
      "redirect_uri_mismatch",
    ],
    [
      "a redirect URI on another host",
      () => ({ redirect_uri: "https://attacker.example.com/callback" }),
      "redirect_uri_mismatch",
    ],
    ["a resource that is not allowed", () => ({ resource: "https://other.example.com" }), "resource_not_allowed"],
    ["openid without a nonce", () => ({ nonce: undefined }), "nonce_required"],
  ] as const)("%s", async (_name, overrides, error) => {
    const before = await countRows(app, "auth_transactions")
    const res = await authorize(params(overrides()))
    expect(res.status).toBe(302)
    const returnable = error === "resource_not_allowed" || error === "nonce_required"
    expect(res.headers["location"]).toBe(
      errorLocation(
        error,
        returnable ? { client_id: client.client_id, redirect_uri: client.redirect_uri, state: "st-1" } : undefined,
      ),
    )
    expect(await countRows(app, "auth_transactions")).toBe(before)
    // an HTML page whatever the browser accepts
    const page = await app.request(b.interaction_domain, `/login/error?error=${error}`, {
      headers: { accept: "application/json" },
    })
    expect(page.status).toBe(400)
    expect(page.headers["content-type"]).toContain("text/html")
    expect(page.text).toContain('<p id="rule">')
    expect(page.text).toContain(`data-error="${error}"`)
  })

  it("a disabled client and a scope the client may not request", async () => {
    const disabled = await createClient(app, b, { status: "disabled" })
    const res = await authorize(
      params({ client_id: disabled.client_id, redirect_uri: disabled.redirect_uri, code_challenge: undefined }),
    )
    // A disabled client is refused before any syntax rule, on the page (with a way back: test/rp-libraries/protocol.test.ts).
    expect(res.headers["location"]).toBe(
      errorLocation("client_disabled", {
        client_id: disabled.client_id,
        redirect_uri: disabled.redirect_uri,
        state: "st-1",
      }),
    )
    const narrow = await createClient(app, b, { allowed_scopes: ["openid"] })
    const res2 = await authorize(
      params({ client_id: narrow.client_id, redirect_uri: narrow.redirect_uri, scope: "openid offline_access" }),
    )
    expect(res2.headers["location"]).toBe(
      errorLocation("scope_not_allowed", {
        client_id: narrow.client_id,
        redirect_uri: narrow.redirect_uri,
        state: "st-1",
      }),
    )
  })
})

describe("GET /oauth2/authorize: success", () => {
  it("creates a bound transaction and redirects to the Interaction Domain hand-off", async () => {
    const before = await countRows(app, "auth_transactions", "source = 'authorize'")
    await app.advance("1 second") // the newest transaction below is this one
    const res = await authorize(
      params({
        prompt: "login",
        max_age: "0",
        login_hint: "someone@example.com",
        resource: [RESOURCE, `${RESOURCE}/v2`],
      }),
    )
    expect(res.status).toBe(302)
    expect(res.headers["cache-control"]).toBe("no-store")
    const location = new URL(String(res.headers["location"]))
    expect(location.origin).toBe(interactionOrigin())
    expect(location.pathname).toBe("/login/continue")
    expect(location.searchParams.get("handoff")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(await countRows(app, "auth_transactions", "source = 'authorize'")).toBe(before + 1)
    const rows = await query<{ resources: Array<string>; status: string; browser_binding_hash: string | null }>(
      app,
      "select resources, status, browser_binding_hash from auth_transactions where source = 'authorize' order by created_at desc, id limit 1",
    )
    expect(rows[0]).toEqual({ resources: [RESOURCE, `${RESOURCE}/v2`], status: "created", browser_binding_hash: null })
  })

  it("the hand-off sets an HttpOnly, SameSite=Lax cookie (not Secure on http localhost) once, and answers the page", async () => {
    const res = await authorize(params())
    const location = new URL(String(res.headers["location"]))
    const hand = await app.request(b.interaction_domain, `${location.pathname}${location.search}`)
    expect(hand.status).toBe(200)
    expect(hand.headers["content-type"]).toBe("text/html; charset=utf-8")
    expect(hand.headers["referrer-policy"]).toBe("no-referrer")
    expect(hand.text).toMatch(/data-transaction-id="txn_[a-z2-7]{32}"/)
    const setCookie = String(([] as Array<string>).concat(hand.headers["set-cookie"] ?? [])[0])
    expect(setCookie).toMatch(/^authservice_login=[A-Za-z0-9_-]{43};/)
    expect(setCookie).toContain("HttpOnly")
    expect(setCookie).toMatch(/SameSite=Lax/i)
    expect(setCookie).toContain("Path=/")
    expect(setCookie).toContain("Max-Age=600")
    expect(setCookie).not.toContain("Secure")
    expect(setCookie).not.toContain("Domain=")
    // only the hash of the cookie's secret is stored
    const secret = setCookie.split(";")[0]!.split("=")[1]!
    expect(await countRows(app, "auth_transactions", "browser_binding_hash = $1", [secret])).toBe(0)
    // single use: another browser gets nothing; the browser holding the cookie gets its page back on reload
    const again = await app.request(b.interaction_domain, `${location.pathname}${location.search}`)
    expect(again.status).toBe(400)
    expect(again.text).toContain('data-error="login_link_expired"')
    expect(again.headers["set-cookie"]).toBeUndefined()
    const reload = await app.request(b.interaction_domain, `${location.pathname}${location.search}`, {
      headers: { cookie: setCookie.split(";")[0]! },
    })
    expect(reload.status).toBe(200)
    expect(reload.headers["set-cookie"]).toBeUndefined()
    expect(reload.text).toContain("data-transaction-id=")
  })

  it("the hand-off token lives 60 seconds", async () => {
    const res = await authorize(params())
    const location = new URL(String(res.headers["location"]))
    await app.advance("60 seconds")
    const hand = await app.request(b.interaction_domain, `${location.pathname}${location.search}`)
    expect(hand.status).toBe(400)
    expect(hand.text).toContain('data-error="login_link_expired"')
  })

  it("a hand-off token of another Environment does nothing here", async () => {
    const res = await authorize(params())
    const location = new URL(String(res.headers["location"]))
    const other = await app.bootstrap()
    const hand = await app.request(other.interaction_domain, `${location.pathname}${location.search}`)
    expect(hand.status).toBe(400)
  })
})

describe("Hosted Login page", () => {
  it("is a strict-CSP HTML page for the cookie's transaction, with script and styles as separate files", async () => {
    const { cookie, txn } = await beginHostedLogin()
    const page = await app.request(b.interaction_domain, "/login", { headers: { cookie } })
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
    const csp = String(page.headers["content-security-policy"])
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain("unsafe-inline")
    expect(page.headers["referrer-policy"]).toBe("no-referrer")
    expect(page.headers["cache-control"]).toBe("no-store")
    expect(page.text).toContain(`data-transaction-id="${txn}"`)
    expect(page.text).toContain(`data-client-id="${client.client_id}"`)
    // no inline script or style
    const scripts = page.text.match(/<script\b[^>]*>/g) ?? []
    expect(scripts).toContain('<script src="/login/assets/login.js" defer>')
    for (const tag of scripts) expect(tag).toMatch(/^<script src="\/login\/assets\/[a-z]+\.js" defer>$/)
    expect(page.text).not.toMatch(/\sstyle=|<style\b|\son[a-z]+=/)
    const js = await app.request(b.interaction_domain, "/login/assets/login.js")
    expect([js.status, js.headers["content-type"]]).toEqual([200, "text/javascript; charset=utf-8"])
    const css = await app.request(b.interaction_domain, "/login/assets/login.css")
    expect([css.status, css.headers["content-type"]]).toEqual([200, "text/css; charset=utf-8"])
  })

  it("without a cookie, or with an unknown one: the error page", async () => {
    const none = await app.request(b.interaction_domain, "/login")
    expect(none.status).toBe(400)
    expect(none.text).toContain('data-error="no_login_session"')
    expect(none.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
    const unknown = await app.request(b.interaction_domain, "/login", {
      headers: { cookie: "authservice_login=forged" },
    })
    expect(unknown.text).toContain('data-error="no_login_session"')
  })

  it("after 10 minutes the page says the sign-in expired", async () => {
    const { cookie, txn } = await beginHostedLogin()
    await app.advance("10 minutes")
    const page = await app.request(b.interaction_domain, "/login", { headers: { cookie } })
    expect(page.text).toContain('data-error="login_expired"')
    expect(await transactionStatus(app, txn)).toBe("expired")
  })
})

describe("Hosted Login drives only the transaction of its cookie (no transaction fixation)", () => {
  it("the Public API refuses a bound transaction without its cookie (404), also at {issuer}/v1", async () => {
    const { cookie, txn } = await beginHostedLogin()
    const withCookie = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}`, { headers: { cookie } })
    expect(withCookie.status).toBe(200)
    const without = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}`)
    expect([without.status, without.json.code]).toEqual([404, "auth_transaction_not_found"])
    const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/email/start`, {
      body: { email: uniqueEmail() },
    })
    expect([start.status, start.json.code]).toEqual([404, "auth_transaction_not_found"])
    const viaIssuer = await app.issuer(b.environment_id, `/v1/auth/transactions/${txn}/cancel`, {
      method: "POST",
      headers: { cookie },
    })
    expect([viaIssuer.status, viaIssuer.json.code]).toEqual([404, "auth_transaction_not_found"])
    // another browser's cookie does not open it either
    const other = await beginHostedLogin()
    const crossed = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}`, {
      headers: { cookie: other.cookie },
    })
    expect([crossed.status, crossed.json.code]).toEqual([404, "auth_transaction_not_found"])
    expect(await transactionStatus(app, txn)).toBe("created")
  })

  it("end to end over HTTP: email, code from SMTP, verify, complete -> code for the client's redirect URI", async () => {
    const { cookie, txn } = await beginHostedLogin({ state: "xyz state" })
    const email = uniqueEmail()
    const headers = { cookie, origin: interactionOrigin() }
    const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/email/start`, {
      body: { email },
      headers,
    })
    expect(start.status).toBe(202)
    const code = await smtp.waitForCode(email)
    const verify = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/email/verify`, {
      body: { challenge_id: start.json.challenge_id, code },
      headers,
    })
    expect(verify.status).toBe(200)
    const complete = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/complete`, {
      method: "POST",
      headers,
    })
    expect(complete.status).toBe(200)
    expect(complete.json).toMatchObject({ state: "xyz state", redirect_uri: client.redirect_uri })
    expect(await transactionStatus(app, txn)).toBe("code_issued")
    const page = await app.request(b.interaction_domain, "/login", { headers: { cookie } })
    expect(page.text).toContain('data-error="login_finished"')
  })
})

describe("Secure cookie when the public scheme is https", () => {
  it("uses the __Host- prefix and the Secure attribute", async () => {
    const secure = await startApp({ env: { PUBLIC_SCHEME: "https" } })
    try {
      const sb = await secure.bootstrap()
      const c = await createClient(secure, sb, { redirect_uris: ["https://app.example.com/callback"] })
      const q = new URLSearchParams({
        response_type: "code",
        client_id: c.client_id,
        redirect_uri: c.redirect_uri,
        scope: "openid",
        state: "s",
        nonce: "n",
        code_challenge: pkce().challenge,
        code_challenge_method: "S256",
      })
      const res = await secure.issuer(sb.environment_id, `/oauth2/authorize?${q}`)
      const location = new URL(String(res.headers["location"]))
      expect(location.protocol).toBe("https:")
      const hand = await secure.request(sb.interaction_domain, `${location.pathname}${location.search}`)
      const setCookie = String(([] as Array<string>).concat(hand.headers["set-cookie"] ?? [])[0])
      expect(setCookie).toMatch(/^__Host-authservice_login=/)
      expect(setCookie).toContain("Secure")
      expect(setCookie).toContain("HttpOnly")
      // public hosts that may not be local: no development mailbox, even without SMTP
      expect((await secure.request(sb.interaction_domain, "/login/dev-mailbox")).status).toBe(404)
    } finally {
      await secure.close()
    }
  })
})
