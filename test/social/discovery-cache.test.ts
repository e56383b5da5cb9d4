import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { createClient, createTransaction, type LoginClientInfo, uniqueEmail } from "../login/support.js"
import { makeEnvironment } from "../support/tenancy.js"
import { freePort } from "../../src/platform/free-port.js"
import { PROVIDER_HOST_NAMES } from "../support/test-ca.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { startOidcProvider } from "./oidc-provider.js"
import { appleKey, connectFake, createConnection, socialEnv, socialRoundTrip, startSocial } from "./support.js"

// Provider discovery documents are cached in process memory per issuer (decisions, Social
// login, "Provider discovery cache"), counted at the providers themselves: the real
// oidc-provider (generic OIDC) and the local Google. Expiry is driven by the TestClock.

let fake: FakeProviders
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: socialEnv(fake) })
  b = await app.bootstrap()
  client = await createClient(app, b)
  await connectFake(app, b, fake, "google")
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

/** A fresh Environment with its own client and a generic OIDC connection to a new oidc-provider. */
const genericOidcEnvironment = async () => {
  const op = await startOidcProvider({ clientId: "authservice-rp", clientSecret: "op-client-secret" })
  const environmentId = await makeEnvironment(app, b.workspace_id, b.project_id)
  const env: Bootstrapped = {
    ...b,
    environment_id: environmentId,
    interaction_domain: `env-${environmentId.slice(4)}.login.localhost:${app.port}`,
  }
  const envClient = await createClient(app, env)
  const connection = await createConnection(app, env, {
    provider: "generic_oidc",
    provider_key: "corp",
    provider_client_id: "authservice-rp",
    provider_client_secret: "op-client-secret",
    issuer: op.issuer,
  })
  op.addRedirectUri(connection.callback_url)
  const discoveries = () => op.requests.filter((r) => r === "GET /.well-known/openid-configuration").length
  const start = async () => startSocial(app, env, await createTransaction(app, env, envClient), "generic_oidc")
  return { op, env, discoveries, start }
}

const googleRequests = (path: string) =>
  fake.apiRequests.filter((r) => r === `GET accounts.google.com${path}` || r === `GET www.googleapis.com${path}`).length

describe("provider discovery cache", () => {
  it("generic OIDC: two starts in a row make one discovery request at the provider; concurrent first starts share one", async () => {
    const first = await genericOidcEnvironment()
    try {
      for (let i = 0; i < 2; i++) {
        const res = await first.start()
        expect(res.status, res.text).toBe(200)
        expect(res.json.authorization_url.startsWith(`${first.op.issuer}/auth?`)).toBe(true)
      }
      expect(first.discoveries()).toBe(1)
    } finally {
      await first.op.close()
    }
    const second = await genericOidcEnvironment()
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () => second.start()))
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200))
      expect(second.discoveries()).toBe(1)
    } finally {
      await second.op.close()
    }
  })

  it("a failure is never cached; an expired document is fetched again; a failed refresh keeps serving the last good copy, retried after a minute", async () => {
    const { op, discoveries, start } = await genericOidcEnvironment()
    try {
      // down before the first fetch: every start asks again (nothing cached), 503 provider_unavailable
      op.setDown(true)
      for (let i = 1; i <= 2; i++) {
        const res = await start()
        expect([res.status, res.json.code]).toEqual([503, "provider_unavailable"])
        expect(discoveries()).toBe(i)
      }
      op.setDown(false)
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(3)
      // fresh for an hour (oidc-provider sends no max-age): no request
      await app.advance("59 minutes")
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(3)
      await app.advance("2 minutes")
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(4)
      // expired, and the provider is down: the refresh fails, the last good document is served
      await app.advance("61 minutes")
      op.setDown(true)
      const stale = await start()
      expect(stale.status, stale.text).toBe(200)
      expect(stale.json.authorization_url.startsWith(`${op.issuer}/auth?`)).toBe(true)
      expect(discoveries()).toBe(5)
      // no new attempt for a minute (an outage must not cost every start a request)
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(5)
      await app.advance("61 seconds")
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(6)
      // back up: the next refresh replaces the copy
      op.setDown(false)
      await app.advance("61 seconds")
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(7)
      expect((await start()).status).toBe(200)
      expect(discoveries()).toBe(7)
    } finally {
      await op.close()
    }
  })

  it("Google: a start makes no request (published authorization endpoint); the first callback discovers, later logins reuse the document", async () => {
    const before = googleRequests("/.well-known/openid-configuration")
    const starts = await Promise.all(
      [0, 1, 2].map(async () => startSocial(app, b, await createTransaction(app, b, client), "google")),
    )
    for (const res of starts) {
      expect(res.status, res.text).toBe(200)
      const url = new URL(res.json.authorization_url)
      expect(`${url.origin}${url.pathname}`).toBe("https://accounts.google.com/o/oauth2/v2/auth")
    }
    expect(googleRequests("/.well-known/openid-configuration")).toBe(before)
    for (const label of ["one", "two"]) {
      fake.setUser("google", { sub: `g-cache-${label}`, email: uniqueEmail(`cache-${label}`), email_verified: true })
      const callback = await socialRoundTrip(app, b, fake, await createTransaction(app, b, client), "google")
      expect(callback.status, callback.text).toBe(302)
      expect(String(callback.headers["location"])).toContain("social=completed")
    }
    expect(googleRequests("/.well-known/openid-configuration")).toBe(before + 1)
    // openid-client takes the ID token from the token endpoint over TLS: it fetches no JWKS
    expect(googleRequests("/oauth2/v3/certs")).toBe(0)
  })

  it("Microsoft: the first callback discovers; once the copy expired, a callback while discovery is down exchanges its code with the last good copy", async () => {
    await connectFake(app, b, fake, "microsoft")
    const discoveries = () =>
      fake.apiRequests.filter((r) => r === "GET login.microsoftonline.com/common/v2.0/.well-known/openid-configuration")
        .length
    const signIn = async (label: string) => {
      fake.setUser("microsoft", {
        sub: `ms-cache-${label}`,
        email: uniqueEmail(`ms-cache-${label}`),
        tid: "72f988bf-86f1-41af-91ab-2d7cd011db47",
        xms_edov: true,
      })
      const callback = await socialRoundTrip(app, b, fake, await createTransaction(app, b, client), "microsoft")
      expect(callback.status, callback.text).toBe(302)
      expect(String(callback.headers["location"])).toContain("social=completed")
    }
    const before = discoveries()
    await signIn("one")
    expect(discoveries()).toBe(before + 1)
    await app.advance("2 hours")
    fake.setDiscoveryDown(true)
    try {
      await signIn("two")
      // the refresh was tried, failed, and the last good document served the exchange
      expect(discoveries()).toBe(before + 2)
    } finally {
      fake.setDiscoveryDown(false)
    }
    await app.advance("61 seconds")
    await signIn("three")
    expect(discoveries()).toBe(before + 3)
  })

  // Each provider's authorization endpoint is published (src/social/providers/endpoints.ts): a start
  // builds the URL from it, so with every provider host routed to a closed port it still answers.
  const unreachableStarts: ReadonlyArray<readonly [string, string]> = [
    ["google", "https://accounts.google.com/o/oauth2/v2/auth"],
    ["microsoft", "https://login.microsoftonline.com/common/oauth2/v2.0/authorize"],
    ["apple", "https://appleid.apple.com/auth/authorize"],
    ["github", "https://github.com/login/oauth/authorize"],
  ]
  it("no route to any provider: Google, Microsoft, Apple and GitHub starts still answer their authorization_url, without any request", async () => {
    const closed = await freePort()
    const offline = await startApp({
      env: {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        SOCIAL_PROVIDER_HOSTS: PROVIDER_HOST_NAMES.map((h) => `${h}=127.0.0.1:${closed}`).join(","),
      },
    })
    try {
      const ob = await offline.bootstrap()
      const oclient = await createClient(offline, ob)
      for (const [provider, endpoint] of unreachableStarts) {
        const clientId = `${provider}-client-offline`
        const secret =
          provider === "apple"
            ? await appleKey().then((key) =>
                JSON.stringify({ team_id: key.teamId, key_id: key.keyId, private_key: key.privatePem }),
              )
            : "s"
        await createConnection(offline, ob, {
          provider,
          provider_key: provider,
          provider_client_id: clientId,
          provider_client_secret: secret,
        })
        const res = await startSocial(offline, ob, await createTransaction(offline, ob, oclient), provider)
        expect(res.status, `${provider}: ${res.text}`).toBe(200)
        const url = new URL(res.json.authorization_url)
        expect(`${url.origin}${url.pathname}`).toBe(endpoint)
        expect(url.searchParams.get("client_id")).toBe(clientId)
        expect(url.searchParams.get("state")).toEqual(expect.any(String))
        // Apple documents no PKCE; the others get S256
        expect(url.searchParams.get("code_challenge_method")).toBe(provider === "apple" ? null : "S256")
      }
    } finally {
      await offline.close()
    }
  })
})
