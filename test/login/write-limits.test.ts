import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import type { RequestOptions, TestResponse } from "../support/http.js"
import {
  completeAndExchange,
  type FlowClient,
  registerClient,
  startTransaction,
  type Transaction,
} from "../passkeys/support/flow.js"
import { count, createUser, query, randomId } from "../passkeys/support/helpers.js"
import { type FakeProviders, startFakeProviders } from "../social/fake-providers.js"
import { connectFake, socialEnv } from "../social/support.js"

// Write limits (docs/decisions/rate-limits-and-caches.md, "Write limits: every cheap-to-send write is counted per
// address"): each family is counted per client address first, then against a per-Environment
// ceiling that counts only what the address limits let through. Small numbers so each is
// reached in a few requests; the test client on 127.0.0.1 is the one trusted proxy
// (TRUST_PROXY=1) and X-Forwarded-For names each caller's address. Every family gets its own
// Environment (counters are per Environment).
const PER_ADDRESS = 3
const CEILING = 5

let app: TestApp
let fake: FakeProviders

beforeAll(async () => {
  fake = await startFakeProviders()
  const small = String(PER_ADDRESS)
  const ceiling = String(CEILING)
  app = await startApp({
    env: {
      ...socialEnv(fake),
      TRUST_PROXY: "1",
      RATE_LIMIT_IP_PER_MINUTE: "1000",
      RATE_LIMIT_SOCIAL_START_PER_MINUTE: small,
      RATE_LIMIT_SOCIAL_START_CEILING_PER_MINUTE: ceiling,
      RATE_LIMIT_PASSKEY_OPTIONS_PER_MINUTE: small,
      RATE_LIMIT_PASSKEY_OPTIONS_CEILING_PER_MINUTE: ceiling,
      RATE_LIMIT_ME_WRITES_PER_MINUTE: small,
      RATE_LIMIT_ME_WRITES_CEILING_PER_MINUTE: ceiling,
      RATE_LIMIT_TOKEN_PER_MINUTE: small,
      RATE_LIMIT_TOKEN_CEILING_PER_MINUTE: ceiling,
      RATE_LIMIT_INTROSPECT_PER_MINUTE: small,
      RATE_LIMIT_INTROSPECT_CEILING_PER_MINUTE: ceiling,
    },
  })
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

const from = (ip: string, options: RequestOptions = {}): RequestOptions => ({
  ...options,
  headers: { ...options.headers, "x-forwarded-for": ip },
})
const form = (fields: Record<string, string>) => ({
  method: "POST",
  body: new URLSearchParams(fields).toString(),
  headers: { "content-type": "application/x-www-form-urlencoded" },
})

/** A Problem Details 429 naming `limit`, with Retry-After up to the end of the minute window. */
const expectProblem429 = (res: TestResponse, limit: string) => {
  expect([res.status, res.json?.code, res.json?.limit], res.text).toEqual([429, "rate_limited", limit])
  expect(res.headers["content-type"]).toContain("application/problem+json")
  const retryAfter = Number(res.headers["retry-after"])
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
}
/** The OAuth endpoints' 429: an OAuth error body (temporarily_unavailable) naming `limit`, with Retry-After. */
const expectOAuth429 = (res: TestResponse, limit: string) => {
  expect([res.status, res.json?.error, res.json?.limit], res.text).toEqual([429, "temporarily_unavailable", limit])
  expect(res.json.active).toBeUndefined()
  expect(res.headers["cache-control"]).toBe("no-store")
  expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1)
}

interface Family {
  /** Sends one request of the family from `ip` (each call may prepare its own target first). */
  readonly send: (ip: string) => Promise<TestResponse>
  readonly ok: (res: TestResponse) => void
  readonly refused: (res: TestResponse, limit: string) => void
  readonly prefix: string
}

/**
 * The shape every family shares: the address limit refuses with the right answer once
 * exceeded; another address is not refused; the refused requests were not counted by the
 * Environment's ceiling (two more addresses reach it exactly); and the next minute window
 * lets the first address in again (TestClock).
 */
const checkShape = async (f: Family) => {
  for (let i = 0; i < PER_ADDRESS; i++) f.ok(await f.send("203.0.113.10"))
  for (let i = 0; i < 4; i++) f.refused(await f.send("203.0.113.10"), `${f.prefix}ip`)
  // Lockout-proof: another address has its own budget; the 4 refusals above were not counted
  // by the ceiling, so 2 more requests still fit under it (3 + 2 = 5)...
  f.ok(await f.send("198.51.100.20"))
  f.ok(await f.send("198.51.100.21"))
  // ...and then the ceiling is full for everyone.
  f.refused(await f.send("198.51.100.22"), `${f.prefix.split(":")[0]}:environment`)
  await app.advance(60_000)
  f.ok(await f.send("203.0.113.10"))
}

const problemFamily = (prefix: string, send: Family["send"], okStatus: number): Family => ({
  prefix,
  send,
  refused: expectProblem429,
  ok: (res) => expect(res.status, res.text).toBe(okStatus),
})

describe("social login start: per address, then the Environment's ceiling", () => {
  it("refuses past the limit before any state is stored or the provider is asked, without locking out other addresses", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    await connectFake(app, b, fake, "microsoft")
    const start = async (ip: string) => {
      const txn = await startTransaction(app, b, client)
      return app.request(
        b.interaction_domain,
        `/v1/auth/transactions/${txn.id}/social/microsoft/start`,
        from(ip, { method: "POST" }),
      )
    }
    await checkShape(problemFamily("social_start:", start, 200))

    // A refused start stores no state, makes no outbound request and leaves the transaction as it was.
    for (let i = 0; i < PER_ADDRESS; i++) expect((await start("203.0.113.50")).status).toBe(200)
    const txn = await startTransaction(app, b, client)
    const states = await count(app, "select count(*)::int as n from social_states where environment_id = $1", [
      b.environment_id,
    ])
    const outbound = fake.apiRequests.length
    const refused = await app.request(
      b.interaction_domain,
      `/v1/auth/transactions/${txn.id}/social/microsoft/start`,
      from("203.0.113.50", { method: "POST" }),
    )
    expectProblem429(refused, "social_start:ip")
    expect(
      await count(app, "select count(*)::int as n from social_states where environment_id = $1", [b.environment_id]),
    ).toBe(states)
    expect(fake.apiRequests.length).toBe(outbound)
    expect(
      (await query<{ status: string }>(app, "select status from auth_transactions where id = $1", [txn.id]))[0]!.status,
    ).toBe("created")
  })
})

describe("passkey options on a transaction: per address, then the Environment's ceiling", () => {
  it("refuses past the limit without storing a challenge or moving the transaction", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const options = async (ip: string, txn?: Transaction) => {
      const t = txn ?? (await startTransaction(app, b, client))
      return app.request(
        b.interaction_domain,
        `/v1/auth/transactions/${t.id}/passkeys/authentication/options`,
        from(ip, { method: "POST", body: {} }),
      )
    }
    await checkShape(problemFamily("passkey_options:", (ip) => options(ip), 200))

    for (let i = 0; i < PER_ADDRESS; i++) expect((await options("203.0.113.51")).status).toBe(200)
    const txn = await startTransaction(app, b, client)
    const challenges = await count(
      app,
      "select count(*)::int as n from webauthn_challenges where environment_id = $1",
      [b.environment_id],
    )
    expectProblem429(await options("203.0.113.51", txn), "passkey_options:ip")
    expect(
      await count(app, "select count(*)::int as n from webauthn_challenges where environment_id = $1", [
        b.environment_id,
      ]),
    ).toBe(challenges)
    expect(
      (await query<{ status: string }>(app, "select status from auth_transactions where id = $1", [txn.id]))[0]!.status,
    ).toBe("created")
  })
})

/** A signed-in user of a fresh Environment: its access and refresh tokens. */
const signedIn = async (b: Bootstrapped, client: FlowClient) => {
  const user = await createUser(app, b, `limits-${randomId("u").slice(2, 12)}@example.com`)
  const txn = await startTransaction(app, b, client, { scope: "openid email profile offline_access" })
  await query(
    app,
    `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
    where id = $1`,
    [txn.id, user.id, new Date(app.now())],
  )
  const { tokens } = await completeAndExchange(app, b, client, txn)
  return { user, access: tokens.access_token, refresh: tokens.refresh_token! }
}

describe("/me writes: per address, then the Environment's ceiling", () => {
  it("refuses past the limit before the write (the profile is unchanged); GETs are not counted", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const { user, access } = await signedIn(b, client)
    const me = (ip: string, options: RequestOptions) =>
      app.request(
        b.interaction_domain,
        "/v1/me",
        from(ip, { ...options, headers: { authorization: `Bearer ${access}` } }),
      )
    let n = 0
    const patch = (ip: string) => me(ip, { method: "PATCH", body: { name: `Name ${++n}` } })
    // Reads are not writes: any number of them leaves the budget whole.
    for (let i = 0; i < 10; i++) expect((await me("203.0.113.10", {})).status).toBe(200)
    await checkShape(problemFamily("me_write:", patch, 200))

    for (let i = 0; i < PER_ADDRESS; i++) expect((await patch("203.0.113.52")).status).toBe(200)
    const before = (await query<{ name: string }>(app, "select name from users where id = $1", [user.id]))[0]!.name
    expectProblem429(await me("203.0.113.52", { method: "PATCH", body: { name: "Refused" } }), "me_write:ip")
    expect((await query<{ name: string }>(app, "select name from users where id = $1", [user.id]))[0]!.name).toBe(
      before,
    )
  })
})

describe("/me writes when the counters cannot be written", () => {
  it("503 user_unavailable (the /me answer to a database failure), and nothing is written", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const { user, access } = await signedIn(b, client)
    await query(app, "alter table rate_limit_counters rename to rate_limit_counters_away")
    try {
      const res = await app.request(b.interaction_domain, "/v1/me", {
        method: "PATCH",
        body: { name: "Unwritten" },
        headers: { authorization: `Bearer ${access}` },
      })
      expect([res.status, res.json?.code], res.text).toEqual([503, "user_unavailable"])
    } finally {
      await query(app, "alter table rate_limit_counters_away rename to rate_limit_counters")
    }
    expect(
      (await query<{ name: string | null }>(app, "select name from users where id = $1", [user.id]))[0]!.name,
    ).not.toBe("Unwritten")
  })
})

describe("token and revocation: per client and address, then the Environment's ceiling; OAuth error bodies", () => {
  it("token: a refused exchange does not consume the code, which another address then redeems", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const bogus = (ip: string) =>
      app.issuer(
        b.environment_id,
        "/oauth2/token",
        from(
          ip,
          form({
            grant_type: "authorization_code",
            code: "nope",
            redirect_uri: client.redirect_uri,
            code_verifier: "v".repeat(43),
            client_id: client.client_id,
          }),
        ),
      )
    await checkShape({
      prefix: "token:client+",
      send: bogus,
      refused: expectOAuth429,
      ok: (res) => expect([res.status, res.json.error]).toEqual([400, "invalid_grant"]),
    })

    // A made-up client_id shares one budget per address with every other made-up one.
    const other = (ip: string, clientId: string) =>
      app.issuer(
        b.environment_id,
        "/oauth2/token",
        from(
          ip,
          form({
            grant_type: "refresh_token",
            refresh_token: "x",
            client_id: clientId,
          }),
        ),
      )
    for (let i = 0; i < PER_ADDRESS; i++) expect((await other("192.0.2.77", `made-up-${i}`)).status).toBe(400)
    expectOAuth429(await other("192.0.2.77", "made-up-9"), "token:client+ip")
    // ...while the registered client keeps its own budget at that address.
    expect((await bogus("192.0.2.77")).status).toBe(400)

    await app.advance(60_000)
    const user = await createUser(app, b, `code-${randomId("u").slice(2, 12)}@example.com`)
    const txn = await startTransaction(app, b, client)
    await query(
      app,
      `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
      where id = $1`,
      [txn.id, user.id, new Date(app.now())],
    )
    const completed = await app.request(b.interaction_domain, `/v1/auth/transactions/${txn.id}/complete`, {
      method: "POST",
    })
    expect(completed.status, completed.text).toBe(200)
    const exchange = (ip: string) =>
      app.issuer(
        b.environment_id,
        "/oauth2/token",
        from(
          ip,
          form({
            grant_type: "authorization_code",
            code: completed.json.authorization_code,
            redirect_uri: client.redirect_uri,
            code_verifier: txn.verifier,
            client_id: client.client_id,
          }),
        ),
      )
    for (let i = 0; i < PER_ADDRESS; i++) expect((await bogus("203.0.113.53")).status).toBe(400)
    expectOAuth429(await exchange("203.0.113.53"), "token:client+ip")
    const redeemed = await exchange("203.0.113.54")
    expect(redeemed.status, redeemed.text).toBe(200)
  })

  it("revoke: a refused revocation leaves the refresh token working", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const { refresh } = await signedIn(b, client)
    const revoke = (ip: string, token = "not-a-token") =>
      app.issuer(b.environment_id, "/oauth2/revoke", from(ip, form({ token, client_id: client.client_id })))
    await checkShape({
      prefix: "revoke:client+",
      send: revoke,
      refused: expectOAuth429,
      ok: (res) => expect(res.status, res.text).toBe(200),
    })

    for (let i = 0; i < PER_ADDRESS; i++) expect((await revoke("203.0.113.55")).status).toBe(200)
    expectOAuth429(await revoke("203.0.113.55", refresh), "revoke:client+ip")
    const refreshed = await app.issuer(
      b.environment_id,
      "/oauth2/token",
      from(
        "203.0.113.56",
        form({
          grant_type: "refresh_token",
          refresh_token: refresh,
          client_id: client.client_id,
        }),
      ),
    )
    expect(refreshed.status, refreshed.text).toBe(200)
  })
})

describe("introspection: per caller and address, then the Environment's ceiling", () => {
  it("a throttled introspection is a 429 OAuth body, never {active:false}; the token stays active for others", async () => {
    const b = await app.bootstrap()
    const client = await registerClient(app, b)
    const { access } = await signedIn(b, client)
    const introspect = (ip: string) =>
      app.issuer(
        b.environment_id,
        "/oauth2/introspect",
        from(ip, {
          ...form({ token: access }),
          headers: { "content-type": "application/x-www-form-urlencoded", "x-management-api-key": b.api_key },
        }),
      )
    await checkShape({
      prefix: "introspect:client+",
      send: introspect,
      refused: expectOAuth429,
      ok: (res) => expect([res.status, res.json.active], res.text).toEqual([200, true]),
    })
  })
})
