import { decodeJwt } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { countRows, query, uniqueEmail } from "../login/support.js"
import { createClient, createUser, exchangeCode, mintCode, refresh, type TestClient, type TestUser } from "../oidc/support.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { connectFake, eventsOf, requestUrl, socialEnv } from "./support.js"

// POST /me/identities/{provider}/link (spec: /me rules 1, 2, 7): fresh session, redirect_uri
// byte-equal to a registered redirect URI of the token's client without fragment, the
// signed link state, and the redirect back to that exact URI with the result.

let fake: FakeProviders
let app: TestApp
let b: Bootstrapped
let client: TestClient
const APP_RETURN = "https://app.example.com/settings/identities?tab=linked"

beforeAll(async () => {
  fake = await startFakeProviders()
  app = await startApp({ env: socialEnv(fake) })
  b = await app.bootstrap()
  client = await createClient(app, b, { redirectUris: ["http://localhost:5173/callback", APP_RETURN] })
  await connectFake(app, b, fake, "github")
})
afterAll(async () => {
  await app?.close()
  await fake?.close()
})

const tokenFor = async (user: TestUser, c: TestClient = client) => {
  const minted = await mintCode(app, b, c, user)
  const res = await exchangeCode(app, b, c, minted)
  expect(res.status, res.text).toBe(200)
  return res.json.access_token as string
}
const link = (token: string | undefined, provider: string, body: unknown) =>
  app.request(b.interaction_domain, `/v1/me/identities/${provider}/link`, {
    method: "POST", body, headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  })
/** Link start, the provider's consent, our callback: the final redirect. */
const linkRoundTrip = async (token: string) => {
  const res = await link(token, "github", { redirect_uri: APP_RETURN })
  expect(res.status, res.text).toBe(200)
  const visit = await fake.visit(res.json.authorization_url)
  const back = await requestUrl(app, visit.location!)
  expect(back.status).toBe(302)
  return back.headers["location"] as string
}

describe("POST /me/identities/{provider}/link", () => {
  it("links the provider identity and redirects to the exact redirect_uri with linked=true&identity_id", async () => {
    const user = await createUser(app, b)
    fake.setUser("github", { sub: "777001", emails: [{ email: uniqueEmail("gh"), primary: true, verified: true }] })
    const location = await linkRoundTrip(await tokenFor(user))
    const [identity] = await query<{ id: string }>(app, "select id from identities where user_id = $1 and provider = 'github' and provider_subject = '777001'", [user.id])
    expect(location).toBe(`${APP_RETURN}&linked=true&identity_id=${identity!.id}&provider=github`)
    const linked = (await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.userId === user.id)
    expect(linked.map((e) => [e.payload, e.actor])).toEqual([[{ userId: user.id, identityId: identity!.id, provider: "github" }, { type: "end_user", id: user.id }]])
  })

  it("an identity already linked to another user is refused (error=identity_already_linked); nothing moves", async () => {
    const owner = await createUser(app, b)
    const other = await createUser(app, b)
    fake.setUser("github", { sub: "777002", emails: [] })
    await linkRoundTrip(await tokenFor(owner))
    fake.setUser("github", { sub: "777002", emails: [] })
    const location = await linkRoundTrip(await tokenFor(other))
    expect(location).toBe(`${APP_RETURN}&linked=false&error=identity_already_linked&provider=github`)
    expect(await countRows(app, "identities", "provider_subject = '777002' and user_id = $1", [owner.id])).toBe(1)
    expect(await countRows(app, "identities", "user_id = $1", [other.id])).toBe(0)
  })

  it("a user who already has an identity of this provider: error=provider_already_linked; nothing added", async () => {
    const user = await createUser(app, b)
    fake.setUser("github", { sub: "777101", emails: [] })
    expect(await linkRoundTrip(await tokenFor(user))).toContain("&linked=true&")
    // another GitHub account for the same user: one identity per provider per user
    fake.setUser("github", { sub: "777102", emails: [] })
    const location = await linkRoundTrip(await tokenFor(user))
    expect(location).toBe(`${APP_RETURN}&linked=false&error=provider_already_linked&provider=github`)
    expect(await query(app, "select provider_subject from identities where user_id = $1", [user.id])).toEqual([{ provider_subject: "777101" }])
    expect((await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.userId === user.id)).toHaveLength(1)
  })

  it("linking the same provider account again is a success that changes nothing (same identity_id, no new event)", async () => {
    const user = await createUser(app, b)
    fake.setUser("github", { sub: "777201", emails: [] })
    const first = await linkRoundTrip(await tokenFor(user))
    const [identity] = await query<{ id: string }>(app, "select id from identities where user_id = $1", [user.id])
    expect(first).toBe(`${APP_RETURN}&linked=true&identity_id=${identity!.id}&provider=github`)
    fake.setUser("github", { sub: "777201", emails: [] })
    expect(await linkRoundTrip(await tokenFor(user))).toBe(first)
    expect(await countRows(app, "identities", "user_id = $1", [user.id])).toBe(1)
    expect((await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.userId === user.id)).toHaveLength(1)
  })

  it("a user blocked (or pending deletion) between the start and the provider's answer: error=user_unavailable; nothing linked", async () => {
    for (const [status, sub] of [["blocked", "777301"], ["pending_deletion", "777302"]] as const) {
      const user = await createUser(app, b)
      const token = await tokenFor(user)
      fake.setUser("github", { sub, emails: [] })
      const res = await link(token, "github", { redirect_uri: APP_RETURN })
      expect(res.status, res.text).toBe(200)
      await query(app, "update users set status = $2 where id = $1", [user.id, status])
      const back = await requestUrl(app, (await fake.visit(res.json.authorization_url)).location!)
      expect(back.headers["location"], status).toBe(`${APP_RETURN}&linked=false&error=user_unavailable&provider=github`)
      expect(await countRows(app, "identities", "user_id = $1", [user.id])).toBe(0)
      expect((await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.userId === user.id)).toEqual([])
    }
  })

  it("the provider's refusal comes back as error=social_provider_error", async () => {
    const user = await createUser(app, b)
    fake.refuseNext("github")
    const location = await linkRoundTrip(await tokenFor(user))
    expect(location).toBe(`${APP_RETURN}&linked=false&error=social_provider_error&provider=github`)
    expect(await countRows(app, "identities", "user_id = $1", [user.id])).toBe(0)
  })

  it("refuses redirect URIs that are not byte-equal registrations of the token's client, or carry a fragment: 400 invalid_redirect_uri", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    // registered, but for another client than the token's
    await createClient(app, b, { redirectUris: ["https://other.example.com/cb"] })
    for (const redirect_uri of [`${APP_RETURN}#x`, "https://app.example.com/settings/identities?tab=linked&x=1", "https://APP.example.com/settings/identities?tab=linked", "https://other.example.com/cb"]) {
      const res = await link(token, "github", { redirect_uri })
      expect([res.status, res.json.code], redirect_uri).toEqual([400, "invalid_redirect_uri"])
    }
    expect(await countRows(app, "social_states", "user_id = $1", [user.id])).toBe(0)
  })

  it("needs a Bearer access token and a usable connection", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    expect((await link(undefined, "github", { redirect_uri: APP_RETURN })).json.code).toBe("unauthorized")
    const noConnection = await link(token, "google", { redirect_uri: APP_RETURN })
    expect([noConnection.status, noConnection.json.code]).toEqual([404, "connection_not_found"])
    const unknown = await link(token, "myspace", { redirect_uri: APP_RETURN })
    expect([unknown.status, unknown.json.code]).toEqual([400, "invalid_request"])
    expect(await countRows(app, "social_states", "user_id = $1", [user.id])).toBe(0)
  })

  it("a session whose auth_time is older than 5 minutes is refused: 403 reauthentication_required", async () => {
    const user = await createUser(app, b)
    // A live access token of a session signed in 6 minutes ago (a refresh keeps auth_time).
    const minted = await mintCode(app, b, client, user)
    await query(app, "update login_sessions set auth_time = auth_time - interval '6 minutes' where id = $1", [minted.sessionId])
    await query(app, "update authorization_codes set auth_time = auth_time - interval '6 minutes' where session_id = $1", [minted.sessionId])
    const res = await exchangeCode(app, b, client, minted)
    expect(res.status, res.text).toBe(200)
    const refused = await link(res.json.access_token, "github", { redirect_uri: APP_RETURN })
    expect([refused.status, refused.json.code]).toEqual([403, "reauthentication_required"])
    expect(await countRows(app, "social_states", "user_id = $1", [user.id])).toBe(0)
  })

  it("503 user_unavailable (Retry-After) when the connection, the client or the link state cannot be read or stored; nothing is stored", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    // Injected failures, one table at a time: the Connection lookup, the client lookup, the state write.
    for (const table of ["connections", "clients", "social_states"]) {
      await query(app, `alter table ${table} rename to ${table}_away`)
      try {
        const res = await link(token, "github", { redirect_uri: APP_RETURN })
        expect([res.status, res.json.code], table).toEqual([503, "user_unavailable"])
        expect(res.headers["retry-after"]).toBe("1")
      } finally {
        await query(app, `alter table ${table}_away rename to ${table}`)
      }
    }
    expect(await countRows(app, "social_states", "user_id = $1", [user.id])).toBe(0)
    expect((await link(token, "github", { redirect_uri: APP_RETURN })).status).toBe(200)
  })

  // Moves the clock about 5 minutes: after the others.
  it("fresh session in whole seconds, as auth_time is (the shared /me check): 300 s after sign-in links, 301 s is refused", async () => {
    const user = await createUser(app, b)
    const minted = await mintCode(app, b, client, user)
    const first = await exchangeCode(app, b, client, minted)
    expect(first.status, first.text).toBe(200)
    const authTime = decodeJwt(first.json.access_token).auth_time as number
    // the last millisecond of the 300th second after auth_time, with a refreshed (live) token that keeps auth_time
    await app.advance((authTime + 300) * 1000 + 999 - app.now())
    const refreshed = await refresh(app, b, client, first.json.refresh_token)
    expect(refreshed.status, refreshed.text).toBe(200)
    const token = refreshed.json.access_token as string
    expect(decodeJwt(token).auth_time).toBe(authTime)
    const edge = await link(token, "github", { redirect_uri: APP_RETURN })
    expect(edge.status, edge.text).toBe(200)
    await app.advance(1)
    const late = await link(token, "github", { redirect_uri: APP_RETURN })
    expect([late.status, late.json.code]).toEqual([403, "reauthentication_required"])
  })
})
