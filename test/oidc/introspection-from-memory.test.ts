import { request as httpRequest } from "node:http"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sample } from "../operations/support.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  basic,
  blockUser,
  createClient,
  createSiblingEnvironment,
  createUser,
  exchangeCode,
  mintCode,
  postForm,
  queryRows,
  revokeSession,
  stableHeaders,
  type TestClient,
  userinfo,
} from "./support.js"

// Introspection of a token this replica has not answered before is computed by the listener
// (src/oidc/introspect/from-memory.ts) when everything the application reads for it is in memory:
// the Environment's issuer and key from a template an application 200 left under a second ago,
// the caller's client row and the token's live state from this replica's memory, the
// application's own checks, and the request counted against the introspection limit as the
// application counts it. Its answer is the application's, byte for byte but the request id;
// every inactive answer and every request the listener cannot judge from memory is the
// application's as before. Which path answered is read from authservice_listener_answers_total.

const LIMIT = 12

let app: TestApp
let env: Bootstrapped
let bff: TestClient
let db: pg.Client
beforeAll(async () => {
  app = await startApp({
    env: { TRUST_PROXY: "1", RATE_LIMIT_INTROSPECT_PER_MINUTE: String(LIMIT) },
  })
  env = await app.bootstrap()
  bff = await createClient(app, env, { type: "web_bff" })
  db = new pg.Client({ connectionString: app.databaseUrl })
  await db.connect()
})
afterAll(async () => {
  await db?.end()
  await app?.close()
})

/** Each test introspects from addresses of its own: the per-address budgets do not mix. */
let addresses = 0
const newAddress = () => `198.51.100.${++addresses}`

const signIn = async (options: { on?: Bootstrapped } = {}) => {
  const on = options.on ?? env
  const client = on.environment_id === env.environment_id ? bff : await createClient(app, on, { type: "web_bff" })
  const user = await createUser(app, on)
  const minted = await mintCode(app, on, client, user)
  const res = await exchangeCode(app, on, client, minted)
  expect(res.status).toBe(200)
  const tokens = res.json as { access_token: string; refresh_token: string }
  return { user, sessionId: minted.sessionId, accessToken: tokens.access_token, refreshToken: tokens.refresh_token }
}

/** Introspection answers the listener computed so far. */
const computed = async () => {
  const res = await app.request(app.config.managementHost, "/metrics")
  expect(res.status).toBe(200)
  return sample(res.text, "authservice_listener_answers_total", { endpoint: "introspect", how: "computed" }) ?? 0
}

/** A form introspection by the web_bff client (HTTP Basic), the form the listener computes. */
const introspect = (
  token: string,
  options: { ip: string; secret?: string; extra?: Record<string, string>; headers?: Record<string, string> },
) =>
  postForm(
    app,
    env,
    "/oauth2/introspect",
    { token, ...options.extra },
    {
      authorization: basic(bff.id, options.secret ?? bff.secret!),
      "x-forwarded-for": options.ip,
      ...options.headers,
    },
  )

/** The application's answer: a JSON body, which the listener never reads. */
const fromApplication = (token: string, ip: string) =>
  app.issuer(env.environment_id, "/oauth2/introspect", {
    method: "POST",
    body: JSON.stringify({ token }),
    headers: {
      "content-type": "application/json",
      authorization: basic(bff.id, bff.secret!),
      "x-forwarded-for": ip,
    },
  })

/** One application 200 of this Environment: it leaves the template the listener computes with. */
const warm = async (ip: string) => {
  const { accessToken } = await signIn()
  const res = await fromApplication(accessToken, ip)
  expect(res.json).toMatchObject({ active: true })
}

/** Every hit of the Environment's per-client-and-address introspection windows. */
const hits = async () => {
  const rows = await queryRows<{ hits: number }>(
    app,
    "select coalesce(sum(hits), 0)::int as hits from rate_limit_counters where environment_id = $1 and bucket = 'introspect:client+ip'",
    [env.environment_id],
  )
  return rows[0]!.hits
}

/** Until `n` statements wait for the lock on the counter table (the listener's count among them). */
const waitForLockWaiters = async (n: number) => {
  for (let waiting = 0; waiting < n; ) {
    const rows = await queryRows<{ n: number }>(
      app,
      "select count(*)::int as n from pg_locks where relation = 'rate_limit_counters'::regclass and not granted",
    )
    waiting = rows[0]!.n
  }
}

describe("introspection computed by the listener", () => {
  it("answers a token it has not seen with the application's answer: status, body, headers", async () => {
    const ip = newAddress()
    const { user, accessToken } = await signIn()
    await warm(ip)
    const before = await computed()
    const res = await introspect(accessToken, { ip })
    expect(await computed()).toBe(before + 1)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ active: true, sub: user.id, client_id: bff.id, token_type: "Bearer" })
    const application = await fromApplication(accessToken, ip)
    expect(application.status).toBe(200)
    expect(res.text).toBe(application.text)
    expect(stableHeaders(res.headers)).toEqual(stableHeaders(application.headers))
  })

  it("computes a request with any extra form field, client_secret_post included, each request its own computation", async () => {
    const ip = newAddress()
    const { user, accessToken } = await signIn()
    const post = await createClient(app, env, { type: "web_bff", method: "client_secret_post" })
    await warm(ip)
    const before = await computed()
    for (let i = 0; i < 3; i++) {
      const res = await introspect(accessToken, { ip, extra: { nocache: String(i), token_type_hint: "access_token" } })
      expect(res.json).toMatchObject({ active: true, sub: user.id })
    }
    const res = await postForm(
      app,
      env,
      "/oauth2/introspect",
      { token: accessToken, client_id: post.id, client_secret: post.secret!, nocache: "post" },
      { "x-forwarded-for": ip },
    )
    expect(res.json).toMatchObject({ active: true, sub: user.id })
    // The post client's first call reads its row: the application answers it.
    expect(await computed()).toBe(before + 3)
  })

  it("leaves every inactive answer to the application: wrong secret, blocked user, ended session, forged, refresh token, another Environment", async () => {
    const ip = newAddress()
    await warm(ip)
    const blocked = await signIn()
    const revoked = await signIn()
    const good = await signIn()
    const sibling = await createSiblingEnvironment(app, env)
    const elsewhere = await signIn({ on: { ...env, environment_id: sibling.id } })
    await blockUser(app, env, blocked.user.id)
    await revokeSession(app, env, revoked.user.id, revoked.sessionId)
    await warm(ip)
    const before = await computed()
    for (const [token, secret] of [
      [good.accessToken, "wrong-secret"],
      [blocked.accessToken, undefined],
      [revoked.accessToken, undefined],
      [`${good.accessToken.slice(0, -4)}AAAA`, undefined],
      [good.refreshToken, undefined],
      [elsewhere.accessToken, undefined],
    ] as const) {
      const res = await introspect(token, { ip: newAddress(), ...(secret && { secret }) })
      expect([res.status, res.json]).toEqual([200, { active: false }])
    }
    expect(await computed()).toBe(before)
  })

  it("counts every computed answer against the introspection limit of its client and address, one budget with the application's", async () => {
    const ip = newAddress()
    const tokens = await Promise.all(Array.from({ length: LIMIT }, () => signIn()))
    const hitsBefore = await hits()
    await warm(ip) // one hit, by the application
    const before = await computed()
    const answers = await Promise.all(tokens.slice(0, LIMIT - 1).map((t) => introspect(t.accessToken, { ip })))
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: LIMIT - 1 }, () => 200))
    expect(await computed()).toBe(before + LIMIT - 1)
    const refused = await introspect(tokens[LIMIT - 1]!.accessToken, { ip })
    expect([refused.status, refused.json.error, refused.json.limit]).toEqual([
      429,
      "temporarily_unavailable",
      "introspect:client+ip",
    ])
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1)
    expect(await computed()).toBe(before + LIMIT - 1)
    // Another address of the same client still has its budget.
    expect((await introspect(tokens[LIMIT - 1]!.accessToken, { ip: newAddress() })).json).toMatchObject({
      active: true,
    })
    // The warm-up's hit, the 11 computed and the other address's. The refused one is refused
    // from the lease that saw the window full, by the listener and then by the application
    // (which answers the 429), and reserves nothing (src/rate-limit/leases.ts).
    expect((await hits()) - hitsBefore).toBe(1 + (LIMIT - 1) + 1)
  })

  it("a caller that goes away while its count waits ends nothing but its own exchange", async () => {
    const ip = newAddress()
    const { accessToken } = await signIn()
    await warm(ip)
    await db.query("begin")
    await db.query("lock table rate_limit_counters in share row exclusive mode")
    try {
      const body = new URLSearchParams({ token: accessToken }).toString()
      const gone = new Promise<void>((resolve) => {
        const req = httpRequest({
          host: "127.0.0.1",
          port: app.port,
          method: "POST",
          path: `/e/${env.environment_id}/oauth2/introspect`,
          headers: {
            host: app.config.canonicalIssuerHost,
            "content-type": "application/x-www-form-urlencoded",
            "content-length": Buffer.byteLength(body),
            authorization: basic(bff.id, bff.secret!),
            "x-forwarded-for": ip,
          },
        })
        req.on("error", () => resolve())
        req.end(body)
        // Gone once the listener's count waits for the lock.
        void waitForLockWaiters(1).then(() => req.destroy())
      })
      await gone
    } finally {
      await db.query("commit")
    }
    // The listener settled the abandoned exchange; the server answers the next one.
    expect((await introspect(accessToken, { ip })).json).toMatchObject({ active: true })
  })

  it("a change committed while the count waits is answered by the application with the new state", async () => {
    const ip = newAddress()
    const { user, accessToken } = await signIn()
    await warm(ip)
    const before = await computed()
    await db.query("begin")
    await db.query("lock table rate_limit_counters in share row exclusive mode")
    let answer: ReturnType<typeof introspect> | undefined
    try {
      answer = introspect(accessToken, { ip })
      await waitForLockWaiters(1)
      await queryRows(app, "update users set status = 'blocked' where id = $1", [user.id])
      // UserInfo counts nothing: once it refuses, this replica has dropped the user's state.
      for (let i = 0; i < 100 && (await userinfo(app, env, accessToken)).status === 200; i++);
      expect((await userinfo(app, env, accessToken)).status).toBe(401)
    } finally {
      await db.query("commit")
    }
    const res = await answer
    expect([res.status, res.json]).toEqual([200, { active: false }])
    expect(await computed()).toBe(before)
  })
})
