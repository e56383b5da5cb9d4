import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mountAuthRoutes, requireSession } from "../../packages/hono/src/index.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink } from "../login/support.js"
import { CookieJar, hostedLoginOverHttp, type RelyingParty, rpFetch, startRelyingParty } from "./support.js"

// The open-redirect check of `returnTo` (decisions, Hono helpers, "Return-to"), end to end:
// each value goes in through the real login route (query on GET, form field on POST), the
// user signs in through Hosted Login, and the callback's Location is resolved against the
// application's origin with the WHATWG URL parser, as the browser resolves it.

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let rp: RelyingParty

beforeAll(async () => {
  smtp = await startSmtpSink()
  // One sign-in per table row: lift the per-IP limit so the table is not cut short by it.
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url, RATE_LIMIT_IP_PER_MINUTE: "100000" } })
  b = await app.bootstrap()
  rp = await startRelyingParty(app, b, (hono, auth) => {
    mountAuthRoutes(hono, auth)
    hono.get("/private", requireSession(auth), (c) => c.text("private"))
  })
}, 60_000)

afterAll(async () => {
  await rp?.close()
  await app?.close()
  await smtp?.close()
})

/** Starts a sign-in with this returnTo, completes it, and returns the callback's Location. */
const landingOf = async (returnTo: string, via: "query" | "form") => {
  const jar = new CookieJar()
  const login =
    via === "query"
      ? await rpFetch(rp, jar, `/auth/login?${new URLSearchParams({ returnTo })}`)
      : await rpFetch(rp, jar, "/auth/login", {
          method: "POST",
          body: new URLSearchParams({ returnTo }).toString(),
          headers: { origin: rp.origin, "content-type": "application/x-www-form-urlencoded" },
        })
  expect([302, 303], returnTo).toContain(login.status)
  const callbackPath = await hostedLoginOverHttp(
    app,
    b,
    smtp,
    login.headers.get("location")!,
    `rt-${Math.random().toString(36).slice(2, 10)}@example.com`,
  )
  const callback = await rpFetch(rp, jar, callbackPath)
  expect(callback.status, returnTo).toBe(302)
  expect(jar.names(), returnTo).toEqual(["authservice_session"])
  return callback.headers.get("location")!
}

const EVIL = "evil.example"

/** [returnTo, the exact Location expected after sign-in] */
const TABLE: ReadonlyArray<readonly [string, string]> = [
  // absolute and scheme-relative URLs
  [`https://${EVIL}/x`, "/"],
  [`//${EVIL}/x`, "/"],
  [`\\\\${EVIL}`, "/"],
  [`/\\${EVIL}`, "/"],
  [`\\/${EVIL}`, "/"],
  [`https:${EVIL}`, "/"],
  [`http:/${EVIL}`, "/"],
  [`javascript:alert(1)`, "/"],
  [`JaVaScRiPt:alert(1)`, "/"],
  [`data:text/html,<script>alert(1)</script>`, "/"],
  // scheme-relative once dot segments are removed (the parser's normalisation)
  [`/.//${EVIL}`, "/"],
  [`/././/${EVIL}`, "/"],
  [`/%2e//${EVIL}`, "/"],
  [`/%2E//${EVIL}`, "/"],
  [`/x/..//${EVIL}`, "/"],
  [`/x/%2e%2e//${EVIL}`, "/"],
  [`/..//${EVIL}`, "/"],
  [`/%2e%2e/%2e%2e//${EVIL}`, "/"],
  [`/.${"/.".repeat(400)}//${EVIL}`, "/"],
  [`/${"%2e/".repeat(500)}/${EVIL}`, "/"],
  // backslashes, encoded slashes and backslashes
  [`/.\\${EVIL}`, "/"],
  [`/%5c${EVIL}`, `/%5c${EVIL}`],
  [`/%5c%5c${EVIL}`, `/%5c%5c${EVIL}`],
  [`/%2f%2f${EVIL}`, `/%2f%2f${EVIL}`],
  [`/.%2f/${EVIL}`, `/.%2f/${EVIL}`],
  // control characters, which the URL parser would strip (tab, LF, CR) or keep
  [`/\t/${EVIL}`, "/"],
  [`/\n/${EVIL}`, "/"],
  [`/\r/${EVIL}`, "/"],
  [`/\r\n/${EVIL}`, "/"],
  [`\t//${EVIL}`, "/"],
  [`/x\u0000`, "/"],
  [` //${EVIL}`, "/"],
  // too long
  [`/${"a".repeat(3000)}`, "/"],
  // same-origin paths are kept (normalised as the browser would)
  ["/private?tab=1#top", "/private?tab=1#top"],
  ["/a/./b/../c", "/a/c"],
  [`/x?next=//${EVIL}`, `/x?next=//${EVIL}`],
  [`/#//${EVIL}`, `/#//${EVIL}`],
  ["/javascript:alert(1)", "/javascript:alert(1)"],
  // the auth routes themselves would loop
  ["/auth/login", "/"],
  ["/x/../auth/logout", "/"],
]

describe("returnTo after sign-in: only same-origin paths, judged after the browser's normalisation", () => {
  it("every tricky returnTo (query on GET login) ends on / or a same-origin path", async () => {
    for (const [returnTo, expected] of TABLE) {
      const location = await landingOf(returnTo, "query")
      const resolved = new URL(location, rp.origin)
      expect(resolved.origin, JSON.stringify(returnTo)).toBe(rp.origin)
      expect(location, JSON.stringify(returnTo)).toBe(expected)
    }
  })

  it("the same through the form field of a POST login", async () => {
    for (const returnTo of [`/.//${EVIL}`, `/%2e//${EVIL}`, `/x/..//${EVIL}`, `//${EVIL}`, `/\t/${EVIL}`]) {
      const location = await landingOf(returnTo, "form")
      expect(new URL(location, rp.origin).origin, JSON.stringify(returnTo)).toBe(rp.origin)
      expect(location, JSON.stringify(returnTo)).toBe("/")
    }
  })
})
