import { Hono } from "hono"
import type { Auth } from "../../packages/hono/src/index.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { authMiddleware, createAuth, mountAuthRoutes, requireSession } from "../../packages/hono/src/index.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink, uniqueEmail } from "../login/support.js"
import {
  COOKIE_SECRET,
  CookieJar,
  hostedLoginOverHttp,
  type RelyingParty,
  rpFetch,
  signIn,
  startRelyingParty,
} from "./support.js"

// Each helper of authservice/hono against the real server over sockets: a Hono app served by
// @hono/node-server signs in through mountAuthRoutes and Hosted Login (Email OTP from a real
// SMTP sink), with the helper's clock tied to the server's TestClock so access tokens expire
// for both at once.

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let rp: RelyingParty
/**
 * Token-endpoint calls made by the helper and the answers they got; a switch that makes the
 * issuer unreachable, and one that answers the token endpoint in its place (an outage).
 */
const tokenCalls: Array<string> = []
const tokenAnswers: Array<{ status: number; error: unknown }> = []
let issuerDown = false
let tokenEndpointAnswer: (() => Response) | undefined

const countingFetch: typeof fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  if (issuerDown) throw new TypeError("fetch failed (test: issuer unreachable)")
  if (!url.endsWith("/oauth2/token")) return fetch(input, init)
  tokenCalls.push(String(init?.body ?? ""))
  const res = tokenEndpointAnswer?.() ?? (await fetch(input, init))
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined
  tokenAnswers.push({ status: res.status, error: body?.error })
  return res
}

const jsonOf = (res: Response): Promise<any> => res.json()
const grantsOf = (type: string) =>
  tokenCalls.filter((body) => new URLSearchParams(body).get("grant_type") === type).length

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  rp = await startRelyingParty(
    app,
    b,
    (hono, auth) => {
      mountAuthRoutes(hono, auth)
      hono.get("/", (c) => c.text("public"))
      hono.get("/private", requireSession(auth), (c) =>
        c.json({ user: c.get("authUser"), session: c.get("authSession"), accessToken: c.get("accessToken") }),
      )
      hono.get("/private-page", requireSession(auth, { onUnauthenticated: "redirect" }), (c) =>
        c.text(`hello ${c.get("authUser").email}`),
      )
      hono.get("/maybe", authMiddleware(auth), (c) =>
        c.json({ user: c.get("authUser") ?? null, accessToken: c.get("accessToken") ?? null }),
      )
      hono.get("/signed-out", (c) => c.text("signed out"))
      // a handler that builds its own Response: the helpers' Set-Cookie must still reach the browser
      hono.get("/raw", requireSession(auth), () => new Response("raw", { headers: { "x-raw": "1" } }))
      hono.get("/raw-maybe", authMiddleware(auth), () => new Response("raw"))
    },
    { fetch: countingFetch },
  )
}, 60_000)

afterAll(async () => {
  await rp?.close()
  await app?.close()
  await smtp?.close()
})

const sessionCookieOf = (jar: CookieJar) => jar.cookies.get(rp.auth.cookies.session)!
const openSession = (jar: CookieJar) =>
  rp.auth.sealer.open("session", sessionCookieOf(jar), app.now()) as Record<string, any>
const expectProblem = async (res: Response, status: number, code: string) => {
  expect(res.status).toBe(status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  const body = await jsonOf(res)
  expect(body).toMatchObject({ type: `https://authservice.dev/problems/${code}`, status, code })
  expect(typeof body.title).toBe("string")
  return body
}

describe("mountAuthRoutes: sign-in through Hosted Login", () => {
  it("login redirects to the issuer with PKCE S256, state, nonce and the registered redirect URI; the transaction is a sealed 10-minute cookie", async () => {
    const jar = new CookieJar()
    const res = await rpFetch(rp, jar, "/auth/login?returnTo=%2Fprivate")
    expect(res.status).toBe(302)
    const url = new URL(res.headers.get("location")!)
    expect(`${url.origin}${url.pathname}`).toBe(`${b.issuer}/oauth2/authorize`)
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: "code",
      client_id: rp.client.id,
      redirect_uri: `${rp.origin}/auth/callback`,
      scope: "openid profile email offline_access",
      code_challenge_method: "S256",
    })
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(url.searchParams.get("state")!.length).toBeGreaterThanOrEqual(32)
    expect(url.searchParams.get("nonce")!.length).toBeGreaterThanOrEqual(32)
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith("authservice_login="))!
    expect(setCookie).toMatch(/Max-Age=600/)
    expect(setCookie).toMatch(/HttpOnly/)
    expect(setCookie).toMatch(/SameSite=Lax/)
    expect(setCookie).not.toMatch(/Secure/) // http://127.0.0.1 is local development
    const value = jar.cookies.get("authservice_login")!
    expect(value).not.toContain(url.searchParams.get("state")!) // sealed, not readable
    expect(res.headers.get("cache-control")).toBe("no-store")
  })

  it("callback exchanges the code, sets the session cookie, clears the transaction and returns to returnTo", async () => {
    const { jar, email, callback } = await signIn(app, b, smtp, rp, { returnTo: "/private?tab=1" })
    expect(callback.status).toBe(302)
    expect(callback.headers.get("location")).toBe("/private?tab=1")
    expect(jar.names()).toEqual(["authservice_session"])
    const set = callback.headers.getSetCookie()
    expect(set.find((c) => c.startsWith("authservice_login="))).toMatch(/Max-Age=0/)
    const session = set.find((c) => c.startsWith("authservice_session="))!
    expect(session).toMatch(/HttpOnly/)
    expect(session).toMatch(/SameSite=Lax/)
    expect(session).toMatch(/Path=\//)

    const res = await rpFetch(rp, jar, "/private")
    expect(res.status).toBe(200)
    const body = await jsonOf(res)
    expect(body.user).toMatchObject({ email, email_verified: true })
    expect(body.user.nonce).toBeUndefined()
    expect(body.session).toMatchObject({ user: { email }, scope: ["openid", "profile", "email", "offline_access"] })
    expect(body.session.accessTokenExpiresAt).toBe(openSession(jar)["atExp"])
    // the access token is the issuer's: UserInfo accepts it
    const info = await app.issuer(b.environment_id, "/oauth2/userinfo", {
      headers: { authorization: `Bearer ${body.accessToken}` },
    })
    expect([info.status, info.json.email]).toEqual([200, email])
  })

  it("returnTo is a same-origin path only: an absolute or scheme-relative URL returns to /", async () => {
    for (const returnTo of [
      "https://evil.example/x",
      "//evil.example/x",
      "/\\evil.example",
      "javascript:alert(1)",
      "/ok\u0000",
      "/auth/login",
      "/auth/logout?x=1",
    ]) {
      const jar = new CookieJar()
      await rpFetch(rp, jar, `/auth/login?${new URLSearchParams({ returnTo })}`)
      const tx = rp.auth.sealer.open("login", jar.cookies.get("authservice_login")!, app.now())
      expect(tx?.["returnTo"], returnTo).toBe("/")
    }
    const { callback } = await signIn(app, b, smtp, rp, { returnTo: "//evil.example/x" })
    expect(callback.headers.get("location")).toBe("/")
  })

  it("callback without the transaction cookie: 400 login_transaction_missing, no session", async () => {
    const jar = new CookieJar()
    const res = await rpFetch(rp, jar, "/auth/callback?code=abc&state=xyz")
    await expectProblem(res, 400, "login_transaction_missing")
    expect(jar.names()).toEqual([])
  })

  it("callback with another state: 400 invalid_state, no token request, the transaction is gone", async () => {
    const jar = new CookieJar()
    await rpFetch(rp, jar, "/auth/login")
    const before = tokenCalls.length
    const res = await rpFetch(rp, jar, "/auth/callback?code=abc&state=forged")
    await expectProblem(res, 400, "invalid_state")
    expect(tokenCalls.length).toBe(before)
    expect(jar.names()).toEqual([])
  })

  it("callback with the issuer's error response: 400 login_failed; a replayed callback: 400 login_transaction_missing", async () => {
    const jar = new CookieJar()
    const login = await rpFetch(rp, jar, "/auth/login")
    const state = new URL(login.headers.get("location")!).searchParams.get("state")!
    // An error response carries `iss` too (RFC 9207; the issuer's discovery says so).
    const res = await rpFetch(
      rp,
      jar,
      `/auth/callback?${new URLSearchParams({ error: "access_denied", state, iss: b.issuer })}`,
    )
    const body = await expectProblem(res, 400, "login_failed")
    expect(body.detail).toBe("access_denied")
    expect(jar.names()).toEqual([])

    const done = await signIn(app, b, smtp, rp)
    const callbackUrl = new URL(done.callback.url)
    expect(done.callback.status).toBe(302)
    // the same callback again, with the old transaction cookie copied back in: one-shot
    const replay = new CookieJar()
    await expectProblem(
      await rpFetch(rp, replay, `${callbackUrl.pathname}${callbackUrl.search}`),
      400,
      "login_transaction_missing",
    )
  })

  it("a code the issuer refuses (replayed with a copy of the transaction cookie): 400 login_failed, no session", async () => {
    const jar = new CookieJar()
    const login = await rpFetch(rp, jar, "/auth/login")
    const callbackPath = await hostedLoginOverHttp(app, b, smtp, login.headers.get("location")!, uniqueEmail("replay"))
    const copy = jar.clone()
    expect((await rpFetch(rp, jar, callbackPath)).status).toBe(302)
    const replay = await rpFetch(rp, copy, callbackPath)
    const body = await expectProblem(replay, 400, "login_failed")
    expect(body.detail).toBe("invalid_grant")
    expect(copy.names()).toEqual([])
  })

  it("the token endpoint unreachable at the callback: 503, no session", async () => {
    const jar = new CookieJar()
    const login = await rpFetch(rp, jar, "/auth/login")
    const callbackPath = await hostedLoginOverHttp(app, b, smtp, login.headers.get("location")!, uniqueEmail("down"))
    issuerDown = true
    try {
      await expectProblem(await rpFetch(rp, jar, callbackPath), 503, "temporarily_unavailable")
    } finally {
      issuerDown = false
    }
    expect(jar.names()).toEqual([])
  })

  it("a transaction cookie older than 10 minutes is refused", async () => {
    const jar = new CookieJar()
    const login = await rpFetch(rp, jar, "/auth/login")
    const state = new URL(login.headers.get("location")!).searchParams.get("state")!
    await app.advance("601 seconds")
    await expectProblem(
      await rpFetch(rp, jar, `/auth/callback?code=x&state=${state}`),
      400,
      "login_transaction_missing",
    )
  })
})

describe("requireSession and authMiddleware", () => {
  it("requireSession without a session: 401 problem JSON with code unauthorized", async () => {
    const res = await rpFetch(rp, new CookieJar(), "/private")
    await expectProblem(res, 401, "unauthorized")
  })

  it("requireSession with onUnauthenticated redirect: 302 to the login route with the original path, and back there after sign-in", async () => {
    const res = await rpFetch(rp, new CookieJar(), "/private-page?x=1")
    expect(res.status).toBe(302)
    expect(res.headers.get("location")).toBe("/auth/login?returnTo=%2Fprivate-page%3Fx%3D1")
    const { jar, email, callback } = await signIn(app, b, smtp, rp, { returnTo: "/private-page?x=1" })
    expect(callback.headers.get("location")).toBe("/private-page?x=1")
    const page = await rpFetch(rp, jar, "/private-page?x=1")
    expect([page.status, await page.text()]).toEqual([200, `hello ${email}`])
  })

  it("authMiddleware never blocks: variables undefined without a session, set with one", async () => {
    const anonymous = await rpFetch(rp, new CookieJar(), "/maybe")
    expect([anonymous.status, await jsonOf(anonymous)]).toEqual([200, { user: null, accessToken: null }])
    const { jar, email } = await signIn(app, b, smtp, rp)
    const known = await rpFetch(rp, jar, "/maybe")
    expect(known.status).toBe(200)
    expect((await jsonOf(known)).user).toMatchObject({ email })
  })

  it("a tampered or foreign session cookie is refused and cleared", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const value = sessionCookieOf(jar)
    const tampered = jar.clone()
    tampered.cookies.set("authservice_session", value.slice(0, -4) + (value.endsWith("AAAA") ? "BBBB" : "AAAA"))
    const res = await rpFetch(rp, tampered, "/private")
    await expectProblem(res, 401, "unauthorized")
    expect(res.headers.getSetCookie().some((c) => /^authservice_session=;.*Max-Age=0/.test(c))).toBe(true)
    expect(tampered.names()).toEqual([])

    // a cookie sealed under a secret this app does not hold
    const other = createAuth({ ...optionsOf(rp), cookieSecret: "another-secret-of-at-least-32-characters!" })
    const foreign = new CookieJar()
    foreign.cookies.set("authservice_session", other.sealer.seal("session", openSession(jar), app.now() + 60_000))
    await expectProblem(await rpFetch(rp, foreign, "/private"), 401, "unauthorized")
    // the untouched original still works
    expect((await rpFetch(rp, jar, "/private")).status).toBe(200)
  })
})

const optionsOf = (party: RelyingParty) => ({
  issuer: party.auth.issuer,
  clientId: party.client.id,
  clientSecret: party.client.secret,
  redirectUri: party.auth.redirectUri,
  postLogoutRedirectUri: party.auth.postLogoutRedirectUri,
  cookieSecret: COOKIE_SECRET,
})

describe("refresh ahead of expiry", () => {
  it("30 seconds before the access token expires, the next request refreshes and re-seals the cookie", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const first = await jsonOf(await rpFetch(rp, jar, "/private"))
    const refreshes = grantsOf("refresh_token")
    await app.advance("260 seconds") // 40 s left: not yet
    const still = await rpFetch(rp, jar, "/private")
    expect(still.headers.getSetCookie()).toEqual([])
    expect((await jsonOf(still)).accessToken).toBe(first.accessToken)
    await app.advance("15 seconds") // 25 s left: refresh now
    const res = await rpFetch(rp, jar, "/private")
    expect(res.status).toBe(200)
    expect(res.headers.getSetCookie().some((c) => c.startsWith("authservice_session="))).toBe(true)
    const body = await jsonOf(res)
    expect(body.accessToken).not.toBe(first.accessToken)
    expect(body.session.id).toBe(first.session.id)
    expect(body.session.accessTokenExpiresAt).toBe(app.now() + 300_000)
    expect(grantsOf("refresh_token")).toBe(refreshes + 1)
  })

  it("a handler returning its own Response still sends the refreshed (or cleared) cookie", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const before = sessionCookieOf(jar)
    await app.advance("6 minutes")
    const res = await rpFetch(rp, jar, "/raw")
    expect([res.status, await res.text(), res.headers.get("x-raw")]).toEqual([200, "raw", "1"])
    expect(sessionCookieOf(jar)).not.toBe(before)
    const broken = new CookieJar()
    broken.cookies.set("authservice_session", "v1.garbage")
    const cleared = await rpFetch(rp, broken, "/raw-maybe")
    expect(await cleared.text()).toBe("raw")
    expect(broken.names()).toEqual([])
  })

  it("an expired access token is refreshed on the next request (survives expiry)", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const before = await jsonOf(await rpFetch(rp, jar, "/private"))
    await app.advance("10 minutes")
    const res = await rpFetch(rp, jar, "/private-page")
    expect(res.status).toBe(200)
    const after = await jsonOf(await rpFetch(rp, jar, "/private"))
    expect(after.accessToken).not.toBe(before.accessToken)
    const info = await app.issuer(b.environment_id, "/oauth2/userinfo", {
      headers: { authorization: `Bearer ${after.accessToken}` },
    })
    expect(info.status).toBe(200)
  })

  it("race: eight concurrent requests of one expired session make ONE refresh and all get the same new tokens", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    await app.advance("6 minutes")
    const refreshes = grantsOf("refresh_token")
    const jars = Array.from({ length: 8 }, () => jar.clone())
    const results = await Promise.all(jars.map((j) => rpFetch(rp, j, "/private")))
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200))
    const tokens = new Set(await Promise.all(results.map(async (r) => (await jsonOf(r)).accessToken)))
    expect(tokens.size).toBe(1)
    expect(grantsOf("refresh_token")).toBe(refreshes + 1)
    // a request still carrying the old cookie right after gets the same refreshed session
    const late = await rpFetch(rp, jar.clone(), "/private")
    expect((await jsonOf(late)).accessToken).toBe([...tokens][0])
    expect(grantsOf("refresh_token")).toBe(refreshes + 1)
  })

  it("a temporary refresh failure is 503 (never a redirect) and leaves the cookie; the session refreshes once the issuer is back", async () => {
    const fresh = await startRelyingParty(
      app,
      b,
      (hono, auth) => {
        mountAuthRoutes(hono, auth)
        hono.get("/private", requireSession(auth), (c) => c.json({ accessToken: c.get("accessToken") }))
        hono.get("/private-page", requireSession(auth, { onUnauthenticated: "redirect" }), (c) => c.text("ok"))
        hono.get("/maybe", authMiddleware(auth), (c) => c.json({ user: c.get("authUser") ?? null }))
      },
      { fetch: countingFetch },
    )
    try {
      const { jar } = await signIn(app, b, smtp, fresh)
      await app.advance("6 minutes")
      issuerDown = true
      const json = await rpFetch(fresh, jar, "/private")
      await expectProblem(json, 503, "temporarily_unavailable")
      expect(json.headers.get("retry-after")).toBe("5")
      expect(json.headers.getSetCookie()).toEqual([])
      const page = await rpFetch(fresh, jar, "/private-page")
      expect(page.status).toBe(503)
      expect(page.headers.get("location")).toBeNull()
      const maybe = await rpFetch(fresh, jar, "/maybe")
      expect([maybe.status, await jsonOf(maybe)]).toEqual([200, { user: null }])
      expect(maybe.headers.getSetCookie()).toEqual([])
      issuerDown = false
      expect((await rpFetch(fresh, jar, "/private")).status).toBe(200)
    } finally {
      issuerDown = false
      await fresh.close()
    }
  })

  it("invalid_grant (the refresh token was revoked) clears the session: then unauthenticated", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const rt = openSession(jar)["rt"] as string
    const revoke = await app.issuer(b.environment_id, "/oauth2/revoke", {
      method: "POST",
      body: new URLSearchParams({ token: rt }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    })
    expect(revoke.status).toBe(200)
    // still valid until the access token needs a refresh
    expect((await rpFetch(rp, jar, "/private")).status).toBe(200)
    await app.advance("6 minutes")
    const copy = jar.clone()
    const res = await rpFetch(rp, jar, "/private")
    await expectProblem(res, 401, "unauthorized")
    expect(res.headers.getSetCookie().some((c) => /^authservice_session=;.*Max-Age=0/.test(c))).toBe(true)
    expect(jar.names()).toEqual([])
    const redirected = await rpFetch(rp, copy, "/private-page")
    expect(redirected.status).toBe(302)
    expect(redirected.headers.get("location")).toBe("/auth/login?returnTo=%2Fprivate-page")
  })
})

describe("refresh refused for good ends the session; an outage does not", () => {
  const privateRoutes = (hono: Hono<any>, auth: Auth) => {
    mountAuthRoutes(hono, auth)
    hono.get("/private", requireSession(auth), (c) =>
      c.json({ user: c.get("authUser"), accessToken: c.get("accessToken") }),
    )
    hono.get("/private-page", requireSession(auth, { onUnauthenticated: "redirect" }), (c) => c.text("ok"))
    hono.get("/maybe", authMiddleware(auth), (c) => c.json({ user: c.get("authUser") ?? null }))
  }
  const clearsSession = (res: Response) =>
    res.headers.getSetCookie().some((c) => /^authservice_session=;.*Max-Age=0/.test(c))

  /** After the refusal: 401 JSON (cookie cleared), the login redirect, and authMiddleware without a user. */
  const expectEnded = async (party: Pick<RelyingParty, "origin">, jar: CookieJar) => {
    const asPage = jar.clone()
    const asMaybe = jar.clone()
    const res = await rpFetch(party, jar, "/private")
    await expectProblem(res, 401, "unauthorized")
    expect(clearsSession(res)).toBe(true)
    expect(jar.names()).toEqual([])
    const page = await rpFetch(party, asPage, "/private-page")
    expect([page.status, page.headers.get("location")]).toEqual([302, "/auth/login?returnTo=%2Fprivate-page"])
    const maybe = await rpFetch(party, asMaybe, "/maybe")
    expect([maybe.status, (await jsonOf(maybe)).user]).toEqual([200, null])
    expect(asMaybe.names()).toEqual([])
  }

  it("a user blocked through the Management API: the next refresh is 403 access_denied and ends the session (no 503 loop)", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const me = await jsonOf(await rpFetch(rp, jar, "/private"))
    const block = await app.management(`/v1/users/${me.user.sub}/block?environment_id=${b.environment_id}`, {
      method: "POST",
      key: b.api_key,
      body: { reason: "test" },
    })
    expect(block.status, block.text).toBe(200)
    await app.advance("6 minutes")
    const answers = tokenAnswers.length
    await expectEnded(rp, jar)
    expect(tokenAnswers.slice(answers)).toContainEqual({ status: 403, error: "access_denied" })
  })

  it("a rotated client secret: the callback is 400 login_failed and the next refresh (401 invalid_client) ends the session", async () => {
    const party = await startRelyingParty(app, b, privateRoutes, { fetch: countingFetch })
    try {
      const { jar } = await signIn(app, b, smtp, party)
      expect((await rpFetch(party, jar, "/private")).status).toBe(200)
      // a sign-in in flight while the secret changes
      const pending = new CookieJar()
      const login = await rpFetch(party, pending, "/auth/login")
      const callbackPath = await hostedLoginOverHttp(
        app,
        b,
        smtp,
        login.headers.get("location")!,
        uniqueEmail("rotated"),
      )
      const rotated = await app.management(`/v1/clients/${party.client.id}/rotate-secret`, {
        method: "POST",
        key: b.api_key,
      })
      expect(rotated.status, rotated.text).toBe(200)
      const answers = tokenAnswers.length
      const callback = await rpFetch(party, pending, callbackPath)
      expect((await expectProblem(callback, 400, "login_failed")).detail).toBe("invalid_client")
      expect(pending.names()).toEqual([])
      await app.advance("6 minutes")
      await expectEnded(party, jar)
      const refused = tokenAnswers.slice(answers)
      expect(refused.length).toBeGreaterThanOrEqual(2) // the callback's exchange and the refresh
      expect(refused.every((a) => a.status === 401 && a.error === "invalid_client")).toBe(true)
    } finally {
      await party.close()
    }
  })

  it("outages keep the session: 503 (never a redirect), the cookie unchanged, for 5xx, 429, 408, server_error/temporarily_unavailable and a non-OAuth body; then it refreshes", async () => {
    const party = await startRelyingParty(app, b, privateRoutes, { fetch: countingFetch })
    const json = (status: number, body: unknown) => () =>
      new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
    const outages: ReadonlyArray<readonly [string, () => Response]> = [
      ["503 temporarily_unavailable", json(503, { error: "temporarily_unavailable" })],
      ["500 server_error", json(500, { error: "server_error" })],
      [
        "502 html",
        () => new Response("<html>Bad Gateway</html>", { status: 502, headers: { "content-type": "text/html" } }),
      ],
      ["429 with an OAuth error body", json(429, { error: "invalid_request", error_description: "slow down" })],
      ["408", json(408, { error: "invalid_request" })],
      ["400 temporarily_unavailable", json(400, { error: "temporarily_unavailable" })],
      ["400 server_error", json(400, { error: "server_error" })],
      ["400 without an OAuth error", json(400, { message: "proxy says no" })],
    ]
    try {
      const { jar } = await signIn(app, b, smtp, party)
      const before = jar.cookies.get("authservice_session")
      await app.advance("6 minutes")
      for (const [why, answer] of outages) {
        tokenEndpointAnswer = answer
        const res = await rpFetch(party, jar, "/private")
        await expectProblem(res, 503, "temporarily_unavailable")
        expect(res.headers.getSetCookie(), why).toEqual([])
        const page = await rpFetch(party, jar, "/private-page")
        expect([page.status, page.headers.get("location")], why).toEqual([503, null])
        expect(jar.cookies.get("authservice_session"), why).toBe(before)
      }
      tokenEndpointAnswer = undefined
      const back = await rpFetch(party, jar, "/private")
      expect(back.status).toBe(200)
      expect(jar.cookies.get("authservice_session")).not.toBe(before)
    } finally {
      tokenEndpointAnswer = undefined
      await party.close()
    }
  })
})

describe("logout and CSRF", () => {
  it("POST logout (same origin): clears the session, RP-initiated logout at the issuer with id_token_hint; the issuer then returns to the post-logout URI", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const stolen = jar.clone()
    const idToken = openSession(jar)["it"] as string
    const res = await rpFetch(rp, jar, "/auth/logout", {
      method: "POST",
      headers: { origin: rp.origin, "sec-fetch-site": "same-origin" },
    })
    expect(res.status).toBe(303)
    const url = new URL(res.headers.get("location")!)
    expect(`${url.origin}${url.pathname}`).toBe(`${b.issuer}/oauth2/logout`)
    expect(url.searchParams.get("id_token_hint")).toBe(idToken)
    expect(url.searchParams.get("post_logout_redirect_uri")).toBe(`${rp.origin}/signed-out`)
    expect(jar.names()).toEqual([])
    await expectProblem(await rpFetch(rp, jar, "/private"), 401, "unauthorized")

    const atIssuer = await app.request(url.host, `${url.pathname}${url.search}`)
    expect(atIssuer.status).toBe(302)
    expect(atIssuer.headers["location"]).toBe(`${rp.origin}/signed-out`)
    // a copy of the old cookie dies at its next refresh: logout ended the issuer session and its refresh tokens
    await app.advance("6 minutes")
    await expectProblem(await rpFetch(rp, stolen, "/private"), 401, "unauthorized")
  })

  it("GET logout from a same-origin link works; without a session it goes straight to the post-logout URI", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const res = await rpFetch(rp, jar, "/auth/logout", { headers: { "sec-fetch-site": "same-origin" } })
    expect(res.status).toBe(302)
    expect(res.headers.get("location")).toContain(`${b.issuer}/oauth2/logout?`)
    expect(jar.names()).toEqual([])
    const none = await rpFetch(rp, new CookieJar(), "/auth/logout")
    expect([none.status, none.headers.get("location")]).toEqual([302, `${rp.origin}/signed-out`])
  })

  it("CSRF: cross-site logout (GET or POST) and POST login from another origin or without Origin are 403 and change nothing", async () => {
    const { jar } = await signIn(app, b, smtp, rp)
    const attempts: Array<[string, RequestInit & { headers: Record<string, string> }]> = [
      ["/auth/logout", { headers: { "sec-fetch-site": "cross-site" } }],
      ["/auth/logout", { headers: { "sec-fetch-site": "same-site" } }],
      ["/auth/logout", { method: "POST", headers: { origin: "https://evil.example" } }],
      ["/auth/logout", { method: "POST", headers: { origin: "null" } }],
      ["/auth/logout", { method: "POST", headers: { origin: rp.origin, "sec-fetch-site": "cross-site" } }],
      ["/auth/logout", { method: "POST", headers: {} }],
      ["/auth/login", { method: "POST", headers: { origin: "https://evil.example" } }],
      ["/auth/login", { method: "POST", headers: { "sec-fetch-site": "cross-site" } }],
      ["/auth/login", { method: "POST", headers: {} }],
    ]
    for (const [path, init] of attempts) {
      const copy = jar.clone()
      const res = await rpFetch(rp, copy, path, init)
      await expectProblem(res, 403, "csrf_rejected")
      expect(res.headers.getSetCookie(), `${init.method ?? "GET"} ${path} ${JSON.stringify(init.headers)}`).toEqual([])
      expect(copy.names()).toEqual(jar.names())
    }
    expect((await rpFetch(rp, jar, "/private")).status).toBe(200)
  })

  it("POST login from a same-origin form: 303 to the issuer, returnTo from the form body", async () => {
    const jar = new CookieJar()
    const res = await rpFetch(rp, jar, "/auth/login", {
      method: "POST",
      body: new URLSearchParams({ returnTo: "/private-page" }).toString(),
      headers: {
        origin: rp.origin,
        "sec-fetch-site": "same-origin",
        "content-type": "application/x-www-form-urlencoded",
      },
    })
    expect(res.status).toBe(303)
    expect(res.headers.get("location")).toContain(`${b.issuer}/oauth2/authorize?`)
    expect(rp.auth.sealer.open("login", jar.cookies.get("authservice_login")!, app.now())?.["returnTo"]).toBe(
      "/private-page",
    )
  })
})

describe("configuration refusals", () => {
  it("mountAuthRoutes refuses a mount path other than the auth object's basePath, and a redirect URI elsewhere", () => {
    const auth = createAuth(optionsOf(rp))
    expect(() => mountAuthRoutes(new Hono(), auth, { basePath: "/account" })).toThrow(
      /mount path "\/account" differs from the auth object's basePath "\/auth"/,
    )
    const moved = createAuth({ ...optionsOf(rp), basePath: "/account" })
    expect(() => mountAuthRoutes(new Hono(), moved)).toThrow(
      /redirectUri's path "\/auth\/callback" is not "\/account\/callback"/,
    )
    const app2 = new Hono()
    expect(mountAuthRoutes(app2, auth, { basePath: "/auth/" })).toBe(app2)
  })

  it("mountAuthRoutes refuses an app made with .basePath(): its routes would not be where requireSession and the redirect URI point", () => {
    const auth = createAuth(optionsOf(rp))
    for (const prefixed of [new Hono().basePath("/app"), new Hono().basePath("/app").basePath("/v1")]) {
      expect(() => mountAuthRoutes(prefixed, auth)).toThrow(
        /registers the login route at "\/app(\/v1)?\/auth\/login", not "\/auth\/login"/,
      )
      expect(prefixed.routes.map((r) => r.path)).not.toContain("/app/auth/callback")
    }
    // The root app, and a root app that already has routes, are accepted.
    const root = new Hono()
    root.get("/", (c) => c.text("home"))
    expect(mountAuthRoutes(root, auth).routes.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /",
      "GET /auth/login",
      "POST /auth/login",
      "GET /auth/callback",
      "GET /auth/logout",
      "POST /auth/logout",
    ])
  })

  it("createAuth refuses http outside localhost, short cookie secrets and a missing client id", () => {
    expect(() => createAuth({ ...optionsOf(rp), redirectUri: "http://app.example.com/auth/callback" })).toThrow(
      /redirectUri must use https/,
    )
    expect(() => createAuth({ ...optionsOf(rp), issuer: "http://auth.example.com/e/env_x" })).toThrow(
      /issuer must use https/,
    )
    expect(() => createAuth({ ...optionsOf(rp), cookieSecret: "short" })).toThrow(/at least 32 characters/)
    expect(() => createAuth({ ...optionsOf(rp), cookieSecret: [] })).toThrow(/at least one secret/)
    expect(() => createAuth({ ...optionsOf(rp), clientId: "" })).toThrow(/clientId/)
  })

  it("discovery failure on login is 503, and the next request retries discovery", async () => {
    let down = true
    const party = await startRelyingParty(app, b, (hono, auth) => mountAuthRoutes(hono, auth), {
      fetch: (input, init) => (down ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init)),
    })
    try {
      const jar = new CookieJar()
      await expectProblem(await rpFetch(party, jar, "/auth/login"), 503, "temporarily_unavailable")
      expect(jar.names()).toEqual([])
      down = false
      expect((await rpFetch(party, jar, "/auth/login")).status).toBe(302)
    } finally {
      await party.close()
    }
  })
})
