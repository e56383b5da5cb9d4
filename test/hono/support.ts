import { randomBytes } from "node:crypto"
import { type ServerType, serve } from "@hono/node-server"
import { Hono } from "hono"
import { expect } from "vitest"
import { type Auth, type AuthOptions, createAuth } from "../../packages/hono/src/index.js"
import { freePort } from "../../src/platform/free-port.js"
import type { Bootstrapped, TestApp } from "../support/app.js"
import { type SmtpSink, uniqueEmail } from "../login/support.js"

/**
 * The relying party of the Hono helper tests: a real Hono app served by @hono/node-server on
 * 127.0.0.1 (a local http origin: cookies without Secure), signing in against the real
 * server with a `web_bff` client registered through the Management API.
 */

export const COOKIE_SECRET = "a-test-cookie-secret-of-more-than-32-characters"

export interface BffClient {
  readonly id: string
  readonly secret: string
}

export const registerBffClient = async (app: TestApp, b: Bootstrapped, origin: string): Promise<BffClient> => {
  const res = await app.management("/v1/clients", {
    method: "POST",
    key: b.api_key,
    body: {
      environment_id: b.environment_id,
      client_type: "web_bff",
      name: "Hono app",
      token_endpoint_auth_method: "client_secret_basic",
      redirect_uris: [`${origin}/auth/callback`],
      post_logout_redirect_uris: [`${origin}/signed-out`],
      allowed_scopes: ["openid", "profile", "email", "offline_access"],
    },
  })
  expect(res.status, res.text).toBe(201)
  return { id: res.json.id, secret: res.json.client_secret }
}

export interface RelyingParty {
  readonly origin: string
  readonly auth: Auth
  readonly client: BffClient
  readonly hono: Hono<any>
  readonly close: () => Promise<void>
}

/**
 * Picks a port, registers a client for it, creates the auth object (its clock is the
 * server's TestClock, so both agree on token expiry) and serves the app `build` makes.
 */
export const startRelyingParty = async (
  app: TestApp,
  b: Bootstrapped,
  build: (hono: Hono<any>, auth: Auth) => void,
  options: Partial<AuthOptions> = {},
): Promise<RelyingParty> => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const client = await registerBffClient(app, b, origin)
  const auth = createAuth({
    issuer: b.issuer,
    clientId: client.id,
    clientSecret: client.secret,
    redirectUri: `${origin}/auth/callback`,
    postLogoutRedirectUri: `${origin}/signed-out`,
    cookieSecret: COOKIE_SECRET,
    now: () => app.now(),
    ...options,
  })
  const hono = new Hono<any>()
  build(hono, auth)
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: hono.fetch, port, hostname: "127.0.0.1" }, () => resolve(s))
  })
  return {
    origin,
    auth,
    client,
    hono,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** A minimal cookie jar (one origin): what a browser keeps between requests. */
export class CookieJar {
  readonly cookies = new Map<string, string>()
  store(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";")
      const eq = pair!.indexOf("=")
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))
      if (expired || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ")
  }
  names() {
    return [...this.cookies.keys()].sort()
  }
  clone() {
    const copy = new CookieJar()
    for (const [k, v] of this.cookies) copy.cookies.set(k, v)
    return copy
  }
}

/** A request to the relying party with the jar's cookies; Set-Cookie goes back into the jar. */
export const rpFetch = async (
  rp: Pick<RelyingParty, "origin">,
  jar: CookieJar,
  path: string,
  init: RequestInit & { headers?: Record<string, string> } = {},
) => {
  const cookie = jar.header()
  const res = await fetch(`${rp.origin}${path}`, {
    redirect: "manual",
    ...init,
    headers: { ...(cookie === "" ? {} : { cookie }), ...init.headers },
  })
  jar.store(res)
  return res
}

/**
 * The browser's part of Hosted Login over plain HTTP: authorize -> hand-off cookie -> the page's
 * transaction -> Email OTP (code from the SMTP sink) -> complete. Returns the callback path the
 * page would navigate to (`/auth/callback?code=...&state=...`).
 */
export const hostedLoginOverHttp = async (
  app: TestApp,
  b: Bootstrapped,
  smtp: SmtpSink,
  authorizationUrl: string,
  email: string,
) => {
  const authorize = new URL(authorizationUrl)
  const res = await app.request(authorize.host, `${authorize.pathname}${authorize.search}`)
  expect(res.status, res.text).toBe(302)
  const handoff = new URL(String(res.headers["location"]))
  const hand = await app.request(b.interaction_domain, `${handoff.pathname}${handoff.search}`)
  expect(hand.status).toBe(200)
  const cookie = String(([] as Array<string>).concat(hand.headers["set-cookie"] ?? [])[0]).split(";")[0]!
  const txn = /data-transaction-id="(txn_[a-z2-7]+)"/.exec(hand.text)![1]!
  const headers = { cookie, origin: `http://${b.interaction_domain}` }
  const start = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/email/start`, {
    body: { email },
    headers,
  })
  expect(start.status, start.text).toBe(202)
  const code = await smtp.waitForCode(email)
  const verify = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/email/verify`, {
    body: { challenge_id: start.json.challenge_id, code },
    headers,
  })
  expect(verify.status, verify.text).toBe(200)
  const complete = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn}/complete`, {
    method: "POST",
    headers,
  })
  expect(complete.status, complete.text).toBe(200)
  const target = new URL(complete.json.redirect_uri)
  target.searchParams.set("code", complete.json.authorization_code)
  target.searchParams.set("state", complete.json.state)
  // As the Hosted Login page does (RFC 9207; discovery says the response carries `iss`).
  target.searchParams.set("iss", complete.json.iss)
  return `${target.pathname}${target.search}`
}

/** Signs in through the app's own routes; returns the jar holding the session and the final response. */
export const signIn = async (
  app: TestApp,
  b: Bootstrapped,
  smtp: SmtpSink,
  rp: Pick<RelyingParty, "origin">,
  options: { returnTo?: string; email?: string; jar?: CookieJar } = {},
) => {
  const jar = options.jar ?? new CookieJar()
  const email = options.email ?? uniqueEmail("hono")
  const query = options.returnTo === undefined ? "" : `?${new URLSearchParams({ returnTo: options.returnTo })}`
  const login = await rpFetch(rp, jar, `/auth/login${query}`)
  expect(login.status).toBe(302)
  const callbackPath = await hostedLoginOverHttp(app, b, smtp, login.headers.get("location")!, email)
  const callback = await rpFetch(rp, jar, callbackPath)
  return { jar, email, callback, authorizationUrl: new URL(login.headers.get("location")!) }
}

export const randomSecret = () => randomBytes(32).toString("base64url")
