import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import {
  countRows,
  createClient,
  createTransaction,
  type LoginClientInfo,
  query,
  transactionStatus,
  uniqueEmail,
} from "../login/support.js"
import { makeEnvironment } from "../support/tenancy.js"
import { housekeeping } from "../../src/jobs/housekeeping.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { connectFake, createConnection, eventsOf, requestUrl, socialEnv, startSocial } from "./support.js"

// Social login refusals: start only with a usable connection, and the callback's state
// (signed, expiring, single use), native_return, blocked users and the new-user gate.

let fake: FakeProviders
let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo
let nativeClient: LoginClientInfo

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: socialEnv(fake) })
  b = await app.bootstrap()
  client = await createClient(app, b)
  nativeClient = await createClient(app, b, {
    client_type: "react_native",
    redirect_uris: ["com.example.app:/oauth/callback"],
    allowed_origins: [],
  })
  await connectFake(app, b, fake, "google")
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

/** Start + provider visit: the callback URL the provider sends the browser to (not yet followed). */
const toCallback = async (transactionId: string) => {
  const start = await startSocial(app, b, transactionId, "google")
  expect(start.status, start.text).toBe(200)
  const visit = await fake.visit(start.json.authorization_url)
  return visit.location!
}
const stateRows = (transactionId: string) => countRows(app, "social_states", "transaction_id = $1", [transactionId])

describe("POST /auth/transactions/{id}/social/{provider}/start", () => {
  it("returns the provider's authorization URL with PKCE S256, state, nonce and our callback; moves the transaction to challenge_issued", async () => {
    const id = await createTransaction(app, b, client)
    const res = await startSocial(app, b, id, "google")
    expect(res.status).toBe(200)
    expect(Object.keys(res.json)).toEqual(["authorization_url"])
    const url = new URL(res.json.authorization_url)
    expect(url.origin + url.pathname).toBe("https://accounts.google.com/o/oauth2/v2/auth")
    expect(url.searchParams.get("redirect_uri")).toBe(`http://${b.interaction_domain}/v1/auth/social/google/callback`)
    expect(url.searchParams.get("code_challenge_method")).toBe("S256")
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(url.searchParams.get("nonce")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(url.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}\.\d+\.[A-Za-z0-9_-]{43}$/)
    expect(url.searchParams.get("scope")).toBe("openid email profile")
    expect(await transactionStatus(app, id)).toBe("challenge_issued")
    expect(await stateRows(id)).toBe(1)
  })

  it("refuses a provider without a usable connection: no URL, the transaction and the states unchanged", async () => {
    const id = await createTransaction(app, b, client)
    const unknown = await startSocial(app, b, id, "myspace")
    expect([unknown.status, unknown.json.code]).toEqual([400, "invalid_request"])
    const none = await startSocial(app, b, id, "github")
    expect([none.status, none.json.code]).toEqual([404, "connection_not_found"])
    expect(none.json.authorization_url).toBeUndefined()
    // a disabled connection, and a generic OIDC connection the Owner has not confirmed
    await createConnection(app, b, {
      provider: "microsoft",
      provider_key: "microsoft",
      provider_client_id: "x",
      provider_client_secret: "y",
      status: "disabled",
    })
    await createConnection(
      app,
      b,
      {
        provider: "generic_oidc",
        provider_key: "corp",
        provider_client_id: "x",
        provider_client_secret: "y",
        issuer: "https://idp.example.com",
      },
      false,
    )
    for (const provider of ["microsoft", "generic_oidc"]) {
      const res = await startSocial(app, b, id, provider)
      expect([res.status, res.json.code]).toEqual([404, "connection_not_found"])
    }
    expect(await transactionStatus(app, id)).toBe("created")
    expect(await stateRows(id)).toBe(0)
  })

  it("an unreachable provider is 503 provider_unavailable; no state is stored", async () => {
    const env2 = await makeEnvironment(app, b.workspace_id, b.project_id)
    const b2 = { ...b, environment_id: env2, interaction_domain: `env-${env2.slice(4)}.login.localhost:${app.port}` }
    const client2 = await createClient(app, b2)
    await createConnection(app, b2, {
      provider: "generic_oidc",
      provider_key: "down",
      provider_client_id: "x",
      provider_client_secret: "y",
      issuer: "https://127.0.0.1:1",
    })
    const id = await createTransaction(app, b2, client2)
    const res = await startSocial(app, b2, id, "generic_oidc")
    expect([res.status, res.json.code]).toEqual([503, "provider_unavailable"])
    expect(await transactionStatus(app, id)).toBe("interaction_started")
    expect(await stateRows(id)).toBe(0)
  })

  it("a finished transaction cannot start: 409 invalid_transaction_state", async () => {
    const id = await createTransaction(app, b, client)
    await app.request(b.interaction_domain, `/v1/auth/transactions/${id}/cancel`, { method: "POST" })
    const res = await startSocial(app, b, id, "google")
    expect([res.status, res.json.code]).toEqual([409, "invalid_transaction_state"])
  })
})

describe("callback state", () => {
  it("missing, malformed or tampered state: 400 state_mismatch and nothing changes", async () => {
    fake.setUser("google", { sub: "tamper-1", email: uniqueEmail("tamper"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = await toCallback(id)
    const url = new URL(location)
    const state = url.searchParams.get("state")!
    const variants = [
      "",
      "garbage",
      `${state.slice(0, -1)}${state.endsWith("A") ? "B" : "A"}`, // MAC changed
      state.replace(/\.(\d+)\./, (_m, exp: string) => `.${Number(exp) + 3600}.`), // expiry extended
      `${state.slice(0, 5)}${state[5] === "a" ? "b" : "a"}${state.slice(6)}`, // reference changed
    ]
    for (const variant of variants) {
      const tampered = new URL(location)
      tampered.searchParams.set("state", variant)
      const res = await requestUrl(app, tampered.href)
      expect([res.status, res.json.code], variant).toEqual([400, "state_mismatch"])
    }
    const noState = new URL(location)
    noState.searchParams.delete("state")
    expect((await requestUrl(app, noState.href)).json.code).toBe("state_mismatch")
    expect(await transactionStatus(app, id)).toBe("challenge_issued")
    // the genuine state still works afterwards
    expect((await requestUrl(app, location)).status).toBe(302)
    expect(await transactionStatus(app, id)).toBe("authenticated")
  })

  it("a replayed state is refused (single use), also when two callbacks race", async () => {
    fake.setUser("google", { sub: "replay-1", email: uniqueEmail("replay"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = await toCallback(id)
    const [a, c] = await Promise.all([requestUrl(app, location), requestUrl(app, location)])
    expect([a.status, c.status].sort()).toEqual([302, 400])
    const again = await requestUrl(app, location)
    expect([again.status, again.json.code]).toEqual([400, "state_mismatch"])
    expect(await countRows(app, "identities", "provider_subject = 'replay-1'")).toBe(1)
  })

  it("a state is bound to its Environment and provider path", async () => {
    fake.setUser("google", { sub: "bound-1", email: uniqueEmail("bound"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = new URL(await toCallback(id))
    const otherProvider = new URL(location.href.replace("/social/google/", "/social/github/"))
    expect((await requestUrl(app, otherProvider.href)).json.code).toBe("state_mismatch")
    const env2 = await makeEnvironment(app, b.workspace_id, b.project_id)
    const otherEnv = await app.request(
      `env-${env2.slice(4)}.login.localhost:${app.port}`,
      `${location.pathname}${location.search}`,
    )
    expect([otherEnv.status, otherEnv.json.code]).toEqual([400, "state_mismatch"])
    expect(await transactionStatus(app, id)).toBe("challenge_issued")
  })

  it("an expired state (past 10 minutes) is refused", async () => {
    fake.setUser("google", { sub: "late-1", email: uniqueEmail("late"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = await toCallback(id)
    await app.advance("11 minutes")
    const res = await requestUrl(app, location)
    expect([res.status, res.json.code]).toEqual([400, "state_mismatch"])
    expect(await countRows(app, "identities", "provider_subject = 'late-1'")).toBe(0)
  })

  it("a POST body that is neither a form nor a JSON object of strings is 400 invalid_request_body; nothing is used up", async () => {
    fake.setUser("google", { sub: "body-1", email: uniqueEmail("body"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = new URL(await toCallback(id))
    for (const body of ["{not json", JSON.stringify(["a"]), JSON.stringify({ state: 1 })]) {
      const res = await app.request(location.host, location.pathname, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
      })
      expect([res.status, res.json.code], body).toEqual([400, "invalid_request_body"])
    }
    expect((await requestUrl(app, location.href)).status).toBe(302)
    expect(await transactionStatus(app, id)).toBe("authenticated")
  })

  it("a parameter holding a NUL (a provider error included) is 400 invalid_request; the state is not used up (found by fuzzing: it was a 500)", async () => {
    fake.setUser("google", { sub: "nul-1", email: uniqueEmail("nul"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = new URL(await toCallback(id))
    const state = location.searchParams.get("state")!
    for (const body of [
      { state, error: "\u0000" },
      { state, code: "a\u0000b" },
      { state, error: "access_denied", error_description: "x\u0000" },
    ]) {
      const res = await app.request(location.host, location.pathname, { method: "POST", body })
      expect([res.status, res.json.code], JSON.stringify(body)).toEqual([400, "invalid_request"])
    }
    const form = await app.request(location.host, location.pathname, {
      method: "POST",
      body: `state=${encodeURIComponent(state)}&error=%00`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    })
    expect([form.status, form.json.code]).toEqual([400, "invalid_request"])
    expect(await transactionStatus(app, id)).toBe("challenge_issued")
    expect((await requestUrl(app, location.href)).status).toBe(302)
    expect(await transactionStatus(app, id)).toBe("authenticated")
  })

  it("a connection deleted and recreated since the start: 404 connection_not_found, the transaction stays challenge_issued", async () => {
    const env2 = await makeEnvironment(app, b.workspace_id, b.project_id)
    const b2 = { ...b, environment_id: env2, interaction_domain: `env-${env2.slice(4)}.login.localhost:${app.port}` }
    const client2 = await createClient(app, b2)
    const first = await connectFake(app, b2, fake, "google")
    fake.setUser("google", { sub: "replaced-1", email: uniqueEmail("replaced"), email_verified: true })
    const id = await createTransaction(app, b2, client2)
    const start = await startSocial(app, b2, id, "google")
    const location = (await fake.visit(start.json.authorization_url)).location!
    expect((await app.management(`/v1/connections/${first.id}`, { method: "DELETE" })).status).toBe(200)
    await connectFake(app, b2, fake, "google")
    const res = await requestUrl(app, location)
    expect([res.status, res.json.code]).toEqual([404, "connection_not_found"])
    expect(await transactionStatus(app, id)).toBe("challenge_issued")
  })

  it("the callback accepts a JSON body too (POST)", async () => {
    fake.setUser("google", { sub: "json-1", email: uniqueEmail("json"), email_verified: true })
    const id = await createTransaction(app, b, client)
    const location = new URL(await toCallback(id))
    const body = Object.fromEntries(location.searchParams)
    const res = await app.request(location.host, location.pathname, { method: "POST", body })
    expect(res.status, res.text).toBe(302)
    expect(await transactionStatus(app, id)).toBe("authenticated")
  })
})

describe("races", () => {
  // Each pair's callbacks arrive at once; one login creates the user and its identity, and the
  // other must then sign in through that identity, whichever step it has reached when the
  // first commits (its identity lookup, its email lookup or its own INSERT). Several pairs
  // make each interleaving likely.
  it("two first logins of the same provider account at once: one user, one identity, both authenticated", async () => {
    const pairs: Array<{ email: string; subject: string; callbacks: Array<string>; transactions: Array<string> }> = []
    for (let i = 0; i < 8; i++) {
      const email = uniqueEmail(`race${i}`)
      const subject = `race-${i}-${email}`
      fake.setUser("google", { sub: subject, email, email_verified: true })
      const transactions = [await createTransaction(app, b, client), await createTransaction(app, b, client)]
      const callbacks = [await toCallback(transactions[0]!), await toCallback(transactions[1]!)]
      pairs.push({ email, subject, callbacks, transactions })
    }
    const results = await Promise.all(pairs.flatMap((pair) => pair.callbacks.map((url) => requestUrl(app, url))))
    expect(results.map((r) => r.status)).toEqual(results.map(() => 302))
    const userCreated = await eventsOf(app, b.environment_id, "user.created")
    const linked = await eventsOf(app, b.environment_id, "identity.linked")
    for (const pair of pairs) {
      expect(await Promise.all(pair.transactions.map((t) => transactionStatus(app, t)))).toEqual([
        "authenticated",
        "authenticated",
      ])
      const users = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [pair.email])
      expect(users).toHaveLength(1)
      const identities = await query<{ user_id: string }>(
        app,
        "select user_id from identities where provider_subject = $1",
        [pair.subject],
      )
      expect(identities.map((row) => row.user_id)).toEqual([users[0]!.id])
      const signedIn = await query<{ user_id: string }>(
        app,
        "select user_id from auth_transactions where id = any($1)",
        [pair.transactions],
      )
      expect(signedIn.map((row) => row.user_id)).toEqual([users[0]!.id, users[0]!.id])
      expect(linked.filter((e) => e.payload.userId === users[0]!.id)).toHaveLength(1)
      expect(userCreated.filter((e) => e.payload.userId === users[0]!.id)).toHaveLength(1)
    }
  })
})

describe("races, interleaved on purpose", () => {
  /**
   * Another connection registers the address (and, when `subject` is given, links this
   * provider account to it) in a transaction held open until the callback's own INSERT of
   * the user waits on it; then commits. The callback must then read what was committed.
   */
  const whileRegistering = async (email: string, subject: string | undefined, callback: string) => {
    const db = new pg.Client({ connectionString: app.databaseUrl })
    await db.connect()
    try {
      const userId = `usr_race${Date.now()}${Math.random().toString(36).slice(2, 8)}`
      await db.query("begin")
      await db.query(
        `insert into users (id, workspace_id, environment_id, email, email_normalized, email_verified, user_handle, created_at, updated_at)
        values ($1, $2, $3, $4, lower($4), true, $1, now(), now())`,
        [userId, b.workspace_id, b.environment_id, email],
      )
      if (subject !== undefined) {
        await db.query(
          `insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider, provider_issuer, provider_subject, email, linked_at)
          select 'idn_' || $1, $2, $3, $1, id, 'google', 'https://accounts.google.com', $4, $5, now() from connections where environment_id = $3 and provider_key = 'google' and deleted_at is null`,
          [userId, b.workspace_id, b.environment_id, subject, email],
        )
      }
      const response = requestUrl(app, callback)
      for (let waiting = false; !waiting; ) {
        // pg_stat_activity is a snapshot kept for the reader's transaction: clear it each time
        await db.query("select pg_stat_clear_snapshot()")
        const rows = await db.query(`select 1 from pg_stat_activity
          where pg_backend_pid() = any(pg_blocking_pids(pid)) and query like 'insert into users %'`)
        waiting = rows.rowCount === 1
      }
      await db.query("commit")
      return { userId, response: await response }
    } finally {
      await db.end()
    }
  }

  it("the same provider account's first login commits while this one's INSERT waits: this one signs in through its identity", async () => {
    const email = uniqueEmail("held")
    fake.setUser("google", { sub: "held-1", email, email_verified: true })
    const id = await createTransaction(app, b, client)
    const { userId, response } = await whileRegistering(email, "held-1", await toCallback(id))
    expect(response.status, response.text).toBe(302)
    expect(await transactionStatus(app, id)).toBe("authenticated")
    expect(await query(app, "select user_id from auth_transactions where id = $1", [id])).toEqual([{ user_id: userId }])
    expect(await countRows(app, "users", "email_normalized = $1", [email])).toBe(1)
  })

  it("someone else registers the address while this INSERT waits: link_required for that account, no identity", async () => {
    const email = uniqueEmail("held-other")
    fake.setUser("google", { sub: "held-2", email, email_verified: true })
    const id = await createTransaction(app, b, client)
    const { userId, response } = await whileRegistering(email, undefined, await toCallback(id))
    expect(response.status, response.text).toBe(302)
    expect(await transactionStatus(app, id)).toBe("link_required")
    expect(await query(app, "select user_id from social_pending_links where transaction_id = $1", [id])).toEqual([
      { user_id: userId },
    ])
    expect(await countRows(app, "identities", "provider_subject = 'held-2'")).toBe(0)
  })
})

describe("outcomes", () => {
  it("native_return: 302 to the registered redirect URI with tx, the original state, social=completed and the completion proof", async () => {
    fake.setUser("google", { sub: "native-1", email: uniqueEmail("native"), email_verified: true })
    const id = await createTransaction(app, b, nativeClient, { response_mode: "native_return", state: "app-state-xyz" })
    const res = await requestUrl(app, await toCallback(id))
    expect(res.status).toBe(302)
    expect(res.headers["location"]).toMatch(
      new RegExp(
        `^com\\.example\\.app:/oauth/callback\\?tx=${id}&state=app-state-xyz&social=completed&social_proof=[A-Za-z0-9_-]{43}$`,
      ),
    )
    expect(res.headers["cache-control"]).toBe("no-store")
    // a refusal comes back the same way, with social=failed
    fake.refuseNext("google")
    const refused = await createTransaction(app, b, nativeClient, {
      response_mode: "native_return",
      state: "app-state-2",
    })
    const back = await requestUrl(app, await toCallback(refused))
    expect(back.headers["location"]).toBe(
      `com.example.app:/oauth/callback?tx=${refused}&state=app-state-2&social=failed`,
    )
  })

  it("a blocked user's identity: the transaction fails with login.failed user_blocked", async () => {
    const email = uniqueEmail("blocked")
    fake.setUser("google", { sub: "blocked-1", email, email_verified: true })
    const first = await createTransaction(app, b, client)
    await requestUrl(app, await toCallback(first))
    const [user] = await query<{ id: string }>(app, "select id from users where email_normalized = $1", [email])
    const blocked = await app.management(`/v1/users/${user!.id}/block?environment_id=${b.environment_id}`, {
      method: "POST",
    })
    expect(blocked.status, blocked.text).toBe(200)
    const id = await createTransaction(app, b, client)
    expect((await requestUrl(app, await toCallback(id))).status).toBe(302)
    expect(await transactionStatus(app, id)).toBe("failed")
    const failed = (await eventsOf(app, b.environment_id, "login.failed")).filter((e) => e.payload.userId === user!.id)
    expect(failed.map((e) => e.payload)).toEqual([
      {
        userId: user!.id,
        method: "social",
        reason: "user_blocked",
        clientId: client.client_id,
        ipPrefixHash: expect.any(String),
      },
    ])
  })

  it("new users blocked in the Environment: the transaction fails, nobody is created", async () => {
    const settings = `/v1/environments/${b.environment_id}/settings`
    expect(
      (await app.management(settings, { method: "PATCH", body: { new_user_creation_blocked: true } })).status,
    ).toBe(200)
    try {
      fake.setUser("google", { sub: "gate-1", email: uniqueEmail("gate"), email_verified: true })
      const users = await countRows(app, "users")
      const id = await createTransaction(app, b, client)
      expect((await requestUrl(app, await toCallback(id))).status).toBe(302)
      expect(await transactionStatus(app, id)).toBe("failed")
      expect(await countRows(app, "users")).toBe(users)
    } finally {
      await app.management(settings, { method: "PATCH", body: { new_user_creation_blocked: false } })
    }
  })

  // Last in this file: it moves the clock two days.
  it("housekeeping deletes states a day past expiry, with their transactions and pending links (no foreign key stops it)", async () => {
    fake.setUser("google", { sub: "sweep-1", email: uniqueEmail("sweep"), email_verified: true })
    const id = await createTransaction(app, b, client)
    await toCallback(id)
    expect(await stateRows(id)).toBe(1)
    await app.advance("2 days")
    await app.run(housekeeping)
    expect(await countRows(app, "social_states")).toBe(0)
    expect(await countRows(app, "auth_transactions", "id = $1", [id])).toBe(0)
  })
})
