import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { inject } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import { allowConnections } from "../support/template.js"
import { createClient, type LoginClientInfo, pkce } from "./support.js"

// Every answer of /oauth2/authorize reaches a person's browser: the refusals made before any
// route runs, a storage outage and a rate limit are pages in the Hosted Login style with the
// status and Retry-After of the JSON they replace, whatever the Accept header; the other
// endpoints keep their JSON (docs/decisions/rp-libraries.md, "Authorize refusals reaching the client").

const TRANSACTIONS_PER_ADDRESS = 4

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let database: string

beforeAll(async () => {
  app = await startApp({ env: { RATE_LIMIT_IP_PER_MINUTE: String(TRANSACTIONS_PER_ADDRESS) } })
  b = await app.bootstrap()
  client = await createClient(app, b)
  database = new URL(app.databaseUrl).pathname.slice(1)
})
afterAll(async () => {
  await setConnections(true).catch(() => {})
  await app?.close()
})

const setConnections = (allowed: boolean) => allowConnections(inject("serverUrl"), database, allowed)

const authorizeQuery = () =>
  new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: client.redirect_uri,
    scope: "openid email",
    state: "st-1",
    nonce: "n-1",
    code_challenge: pkce().challenge,
    code_challenge_method: "S256",
  }).toString()

const JSON_ACCEPT = { accept: "application/json" }

const authorize = (query: string) =>
  app.issuer(b.environment_id, `/oauth2/authorize?${query}`, { headers: JSON_ACCEPT })

const createTransaction = () =>
  app.issuer(b.environment_id, "/v1/auth/transactions", {
    method: "POST",
    headers: JSON_ACCEPT,
    body: {
      client_id: client.client_id,
      redirect_uri: client.redirect_uri,
      code_challenge_method: "S256",
      code_challenge: pkce().challenge,
      state: "s-1",
      nonce: "n-1",
      scope: "openid email",
    },
  })

/** A Hosted Login style page naming `code` to the developer, self-contained (its style admitted by hash). */
const expectPage = (res: TestResponse, status: number, code: string) => {
  expect(res.status, res.text).toBe(status)
  expect(res.headers["content-type"]).toBe("text/html; charset=utf-8")
  expect(res.text).toContain(`<main id="login-error" class="card" data-error="${code}">`)
  expect(res.text).not.toContain('rel="stylesheet"')
  expect(res.text).not.toContain("<script")
  // The inline style is the one the CSP admits, byte for byte (a browser would drop it otherwise).
  const style = /<style>([\s\S]*?)<\/style>/.exec(res.text)?.[1]
  expect(style).toContain(".card")
  const hash = createHash("sha256").update(style!).digest("base64")
  expect(String(res.headers["content-security-policy"])).toContain(`style-src 'sha256-${hash}';`)
  expect(res.headers["cache-control"]).toBe("no-store")
  expect(res.headers["location"]).toBeUndefined()
  expect(() => JSON.parse(res.text)).toThrow()
}

describe("the authorization endpoint answers a browser with pages, never JSON", () => {
  it("a NUL in the request target (refused before routing): a 400 invalid_request page naming the rule; the token endpoint keeps its OAuth JSON", async () => {
    for (const query of [`client_id=%00&${authorizeQuery()}`, `${authorizeQuery()}&state=a%00b`]) {
      const page = await authorize(query)
      expectPage(page, 400, "invalid_request")
      expect(page.text).toContain("The request URL must not contain the NUL character (%00)")
    }
    const viaPost = await app.issuer(b.environment_id, "/oauth2/authorize?x=%00", {
      method: "POST",
      headers: { ...JSON_ACCEPT, "content-type": "application/x-www-form-urlencoded" },
      body: authorizeQuery(),
    })
    expectPage(viaPost, 400, "invalid_request")
    const token = await app.issuer(b.environment_id, "/oauth2/token?x=%00", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=authorization_code&code=x",
    })
    expect([token.status, token.headers["content-type"], token.json.error]).toEqual([
      400,
      "application/json",
      "invalid_request",
    ])
  })

  it("an unknown Environment: a 404 page; its discovery document keeps its Problem Details", async () => {
    const unknown = `env_${"q".repeat(32)}`
    const page = await app.issuer(unknown, `/oauth2/authorize?${authorizeQuery()}`, { headers: JSON_ACCEPT })
    expectPage(page, 404, "not_found")
    expect(page.text).toContain("Unknown sign-in service")
    const discovery = await app.issuer(unknown, "/.well-known/openid-configuration")
    expect([discovery.status, discovery.headers["content-type"], discovery.json.code]).toEqual([
      404,
      "application/problem+json",
      "not_found",
    ])
  })

  it("storage unavailable: a 503 page with Retry-After; the Public API keeps its Problem Details; authorize recovers by itself", async () => {
    expect((await authorize(authorizeQuery())).status).toBe(302)
    await setConnections(false)
    try {
      const page = await authorize(authorizeQuery())
      expectPage(page, 503, "server_error")
      expect(Number(page.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      expect(page.text).toContain("Sign-in temporarily unavailable")
      const api = await createTransaction()
      expect([api.status, api.headers["content-type"], api.json.code]).toEqual([
        503,
        "application/problem+json",
        "service_unavailable",
      ])
    } finally {
      await setConnections(true)
    }
    const back = await authorize(authorizeQuery())
    expect(back.status, back.text).toBe(302)
  })

  it("rate limited: a 429 page with Retry-After, not a redirect to the client; the Public API keeps its Problem Details", async () => {
    let refused: TestResponse | undefined
    for (let i = 0; i <= TRANSACTIONS_PER_ADDRESS && refused === undefined; i++) {
      const res = await authorize(authorizeQuery())
      if (res.status !== 302) refused = res
    }
    expect(refused).toBeDefined()
    expectPage(refused!, 429, "temporarily_unavailable")
    expect(Number(refused!.headers["retry-after"])).toBeGreaterThanOrEqual(1)
    expect(refused!.text).toContain("Too many sign-in attempts")
    // Same bucket (transactions created per address), answered to an API caller as JSON.
    const api = await createTransaction()
    expect([api.status, api.headers["content-type"], api.json.code]).toEqual([
      429,
      "application/problem+json",
      "rate_limited",
    ])
  })
})
