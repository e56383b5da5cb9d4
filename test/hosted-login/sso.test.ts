import { Effect } from "effect"
import { decodeJwt } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sendLoginCode } from "../../src/login/email-otp/mail-job.js"
import { Mailer } from "../../src/platform/mailer.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { countRows, createClient, type LoginClientInfo, pkce, query, uniqueEmail } from "../login/support.js"

// Single sign-on at Hosted Login over HTTP (docs/decisions/hosted-login-sso.md): the cookie, the
// "Continue as" offer, the continuation's tokens, the refusals and the expiry under TestClock.
// The same in a real browser with openid-client, and revocation: sso.browser.test.ts. No worker
// runs here (days pass on the TestClock): each mail job is run directly.

let app: TestApp
let b: Bootstrapped
let first: LoginClientInfo
let second: LoginClientInfo

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  first = await createClient(app, b, { name: "First App", redirect_uris: ["http://127.0.0.1:4999/first/callback"] })
  second = await createClient(app, b, { name: "Second App", redirect_uris: ["http://127.0.0.1:4999/second/callback"] })
})
afterAll(async () => {
  await app?.close()
})

/** Runs the queued mail job of a challenge (the worker's task) and returns the code it mailed. */
const mailedCode = async (challengeId: string) => {
  const [job] = await query<{ payload: unknown }>(
    app,
    `select j.payload from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'send_login_code' and j.payload->>'challenge_id' = $1`,
    [challengeId],
  )
  expect(job, `mail job of ${challengeId}`).toBeDefined()
  await app.run(sendLoginCode(job!.payload))
  const sent = await app.run(Mailer.use((m) => Effect.succeed(m.sent())))
  return /code is (\d{6})/.exec(sent.at(-1)!.text)![1]!
}
const mailJobs = async () =>
  (
    await query<{ n: number }>(
      app,
      `select count(*)::int as n from graphile_worker._private_jobs j
  join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_login_code'`,
    )
  )[0]!.n

const origin = () => `http://${b.interaction_domain}`

const setCookies = (res: TestResponse) => ([] as Array<string>).concat(res.headers["set-cookie"] ?? [])
const cookieNamed = (res: TestResponse, name: string) => setCookies(res).find((c) => c.startsWith(`${name}=`))

/** A browser's cookie jar for the Interaction Domain. */
class Jar {
  private readonly cookies = new Map<string, string>()
  take(res: TestResponse) {
    for (const c of setCookies(res)) {
      const [pair] = c.split(";")
      const at = pair!.indexOf("=")
      this.cookies.set(pair!.slice(0, at), pair!.slice(at + 1))
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ")
  }
  drop(name: string) {
    this.cookies.delete(name)
  }
}

/** authorize -> hand-off (the page): what a browser does before it chooses how to sign in. */
const begin = async (jar: Jar, client: LoginClientInfo) => {
  const { verifier, challenge } = pkce()
  const nonce = `n-${Math.random()}`
  const q = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email offline_access",
    state: "st",
    nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  })
  const res = await app.issuer(b.environment_id, `/oauth2/authorize?${q}`)
  expect(res.status, res.text).toBe(302)
  const location = new URL(String(res.headers["location"]))
  const page = await app.request(b.interaction_domain, `${location.pathname}${location.search}`, {
    headers: { cookie: jar.header() },
  })
  expect(page.status, page.text).toBe(200)
  jar.take(page)
  const txn = /data-transaction-id="(txn_[a-z2-7]{32})"/.exec(page.text)![1]!
  const continueAs = /data-continue-as="([^"]+)"/.exec(page.text)?.[1]
  return { verifier, nonce, txn, page, continueAs, client }
}

const post = (jar: Jar, path: string, headers: Record<string, string> = {}) =>
  app.request(b.interaction_domain, path, {
    method: "POST",
    headers: { cookie: jar.header(), origin: origin(), ...headers },
  })

/** A real sign-in by Email OTP, completed by Hosted Login's own route (the page's script does the same). */
const signIn = async (jar: Jar, email: string, client = first) => {
  const started = await begin(jar, client)
  const headers = { cookie: jar.header(), origin: origin() }
  const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${started.txn}/email/start`, {
    body: { email },
    headers,
  })
  expect(start.status, start.text).toBe(202)
  const code = await mailedCode(start.json.challenge_id)
  const verify = await app.request(b.interaction_domain, `/v1/auth/transactions/${started.txn}/email/verify`, {
    body: { challenge_id: start.json.challenge_id, code },
    headers,
  })
  expect(verify.status, verify.text).toBe(200)
  const complete = await post(jar, "/login/complete")
  expect(complete.status, complete.text).toBe(200)
  jar.take(complete)
  return { ...started, complete }
}

const exchange = async (client: LoginClientInfo, code: string, verifier: string) => {
  const res = await app.issuer(b.environment_id, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: client.redirect_uri,
      code_verifier: verifier,
      client_id: client.client_id,
    }).toString(),
  })
  expect(res.status, res.text).toBe(200)
  return res.json as { id_token: string; access_token: string; refresh_token: string }
}

describe("a real sign-in on Hosted Login starts a Hosted Login session", () => {
  it("POST /login/complete answers the code as the Public API's complete does, and sets an HttpOnly SameSite=Lax cookie whose secret is stored only hashed", async () => {
    const jar = new Jar()
    const email = uniqueEmail("sso-start")
    const { complete, txn } = await signIn(jar, email)
    expect(complete.json).toEqual({
      transaction_id: txn,
      authorization_code: expect.any(String),
      state: "st",
      redirect_uri: first.redirect_uri,
      iss: b.issuer,
    })
    expect(complete.headers["cache-control"]).toBe("no-store")
    const cookie = cookieNamed(complete, "authservice_sso")!
    expect(cookie).toMatch(/^authservice_sso=[A-Za-z0-9_-]{43};/)
    expect(cookie).toContain("HttpOnly")
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).toContain("Path=/")
    expect(cookie).toContain("Max-Age=2592000")
    expect(cookie).not.toContain("Secure")
    expect(cookie).not.toContain("Domain=")
    const secret = cookie.split(";")[0]!.split("=")[1]!
    expect(await countRows(app, "hosted_login_sessions", "secret_hash = $1", [secret])).toBe(0)
    const rows = await query<{ hosted_login_session_id: string | null }>(
      app,
      "select s.hosted_login_session_id from login_sessions s join users u on u.id = s.user_id where u.email = $1",
      [email],
    )
    expect(rows).toHaveLength(1)
    expect(rows[0]!.hosted_login_session_id).toMatch(/^hls_[a-z2-7]{32}$/)
  })

  it("the Public API's complete (a custom UI's) starts none", async () => {
    const jar = new Jar()
    const started = await begin(jar, first)
    const email = uniqueEmail("sso-public")
    const headers = { cookie: jar.header(), origin: origin() }
    const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${started.txn}/email/start`, {
      body: { email },
      headers,
    })
    const code = await mailedCode(start.json.challenge_id)
    await app.request(b.interaction_domain, `/v1/auth/transactions/${started.txn}/email/verify`, {
      body: { challenge_id: start.json.challenge_id, code },
      headers,
    })
    const complete = await app.request(b.interaction_domain, `/v1/auth/transactions/${started.txn}/complete`, {
      method: "POST",
      headers,
    })
    expect(complete.status).toBe(200)
    expect(cookieNamed(complete, "authservice_sso")).toBeUndefined()
    expect((await begin(jar, second)).continueAs).toBeUndefined()
  })
})

describe("a second authorization from the same browser continues without signing in again", () => {
  it("another client: the page offers Continue as the masked email; continue-as issues a code whose tokens keep the real sign-in's auth_time, amr and acr", async () => {
    const jar = new Jar()
    const email = uniqueEmail("sso-second")
    const signedIn = await signIn(jar, email)
    const firstTokens = await exchange(first, signedIn.complete.json.authorization_code, signedIn.verifier)
    const firstClaims = decodeJwt(firstTokens.id_token)

    await app.advance("20 minutes")
    const again = await begin(jar, second)
    const masked = `${email.slice(0, 1)}***@e***.com`
    expect(again.continueAs).toBe(masked)
    const mails = await mailJobs()
    const sessionsBefore = await countRows(app, "login_sessions")
    const res = await post(jar, "/login/continue-as")
    expect(res.status, res.text).toBe(200)
    expect(res.json).toEqual({
      transaction_id: again.txn,
      authorization_code: expect.any(String),
      state: "st",
      redirect_uri: second.redirect_uri,
      iss: b.issuer,
    })
    expect(await mailJobs()).toBe(mails) // no code was sent
    const tokens = await exchange(second, res.json.authorization_code, again.verifier)
    const claims = decodeJwt(tokens.id_token)
    expect(claims).toMatchObject({
      aud: second.client_id,
      sub: firstClaims.sub,
      nonce: again.nonce,
      auth_time: firstClaims.auth_time,
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
      email,
    })
    expect(claims.iat! - (firstClaims.auth_time as number)).toBeGreaterThanOrEqual(20 * 60)
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      auth_time: firstClaims.auth_time,
      client_id: second.client_id,
    })
    // a login session of its own for the second client, linked to the same Hosted Login session
    expect(await countRows(app, "login_sessions")).toBe(sessionsBefore + 1)
    const linked = await query<{ hosted_login_session_id: string; client_id: string }>(
      app,
      "select s.hosted_login_session_id, s.client_id from login_sessions s join users u on u.id = s.user_id where u.email = $1 order by s.created_at",
      [email],
    )
    expect(linked.map((r) => r.client_id)).toEqual([first.client_id, second.client_id])
    expect(linked[1]!.hosted_login_session_id).toBe(linked[0]!.hosted_login_session_id)
    // the page of that transaction is finished; a continue-as again is refused
    const twice = await post(jar, "/login/continue-as")
    expect([twice.status, twice.json.code]).toEqual([409, "invalid_transaction_state"])
  })

  it("the same client after its own session ended: no new sign-in, same auth_time; the idle expiry is renewed by each use", async () => {
    const jar = new Jar()
    const email = uniqueEmail("sso-again")
    const signedIn = await signIn(jar, email)
    const authTime = decodeJwt(
      (await exchange(first, signedIn.complete.json.authorization_code, signedIn.verifier)).id_token,
    ).auth_time
    for (let day = 0; day < 3; day++) {
      await app.advance("6 days")
      const again = await begin(jar, first)
      expect(again.continueAs).toBeDefined()
      const res = await post(jar, "/login/continue-as")
      expect(res.status, res.text).toBe(200)
      expect(decodeJwt((await exchange(first, res.json.authorization_code, again.verifier)).id_token).auth_time).toBe(
        authTime,
      )
    }
  })
})

describe("refusals of continue-as change nothing", () => {
  it("without a Hosted Login session cookie, with a forged one, or from another origin", async () => {
    const jar = new Jar()
    await signIn(jar, uniqueEmail("sso-refusals"))
    const fresh = new Jar()
    const none = await begin(fresh, second)
    expect(none.continueAs).toBeUndefined()
    const noCookie = await post(fresh, "/login/continue-as")
    expect([noCookie.status, noCookie.json.code]).toEqual([409, "invalid_transaction_state"])
    const forged = await post(fresh, "/login/continue-as", { cookie: `${fresh.header()}; authservice_sso=forged` })
    expect([forged.status, forged.json.code]).toEqual([409, "invalid_transaction_state"])
    expect(
      await query<{ status: string }>(app, "select status from auth_transactions where id = $1", [none.txn]),
    ).toEqual([{ status: "created" }])

    const again = await begin(jar, second)
    expect(again.continueAs).toBeDefined()
    const crossOrigin = await post(jar, "/login/continue-as", { origin: "https://evil.example" })
    expect([crossOrigin.status, crossOrigin.json.code]).toEqual([403, "origin_not_allowed"])
    const otherEnvironment = await post(jar, "/login/continue-as", { origin: "http://env-other.login.localhost" })
    expect(otherEnvironment.status).toBe(403)
    const noTransaction = await app.request(b.interaction_domain, "/login/continue-as", {
      method: "POST",
      headers: { cookie: jar.header().replace(/authservice_login=[^;]+/, "authservice_login=x"), origin: origin() },
    })
    expect([noTransaction.status, noTransaction.json.code]).toEqual([404, "auth_transaction_not_found"])
    expect(
      await query<{ status: string }>(app, "select status from auth_transactions where id = $1", [again.txn]),
    ).toEqual([{ status: "created" }])
  })

  it("after 7 idle days, or 30 days whatever the use, the offer is gone and continue-as is refused", async () => {
    const idle = new Jar()
    await signIn(idle, uniqueEmail("sso-idle"))
    await app.advance("7 days")
    const later = await begin(idle, second)
    expect(later.continueAs).toBeUndefined()
    expect((await post(idle, "/login/continue-as")).status).toBe(409)

    const busy = new Jar()
    await signIn(busy, uniqueEmail("sso-absolute"))
    for (let i = 0; i < 4; i++) {
      await app.advance("6 days")
      expect((await begin(busy, first)).continueAs).toBeDefined()
      expect((await post(busy, "/login/continue-as")).status).toBe(200)
    }
    await app.advance("6 days") // 30 days after the sign-in, 6 after the last use
    expect((await begin(busy, first)).continueAs).toBeUndefined()
  })

  it("signing in as another account replaces the browser's Hosted Login session", async () => {
    const jar = new Jar()
    const a = uniqueEmail("sso-a")
    await signIn(jar, a)
    const firstId = (
      await query<{ id: string }>(
        app,
        "select h.id from hosted_login_sessions h join users u on u.id = h.user_id where u.email = $1",
        [a],
      )
    )[0]!.id
    const other = uniqueEmail("sso-b")
    await signIn(jar, other, second)
    expect((await begin(jar, first)).continueAs).toBe(`${other.slice(0, 1)}***@e***.com`)
    expect(await query(app, "select revoked_reason from hosted_login_sessions where id = $1", [firstId])).toEqual([
      { revoked_reason: "replaced" },
    ])
  })
})
