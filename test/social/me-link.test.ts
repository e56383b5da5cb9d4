import { decodeJwt } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { countRows, query, uniqueEmail } from "../login/support.js"
import {
  createClient,
  createUser,
  exchangeCode,
  mintCode,
  refresh,
  type TestClient,
  type TestUser,
} from "../oidc/support.js"
import { type FakeProviders, startFakeProviders } from "./fake-providers.js"
import { connectFake, eventsOf, requestUrl, socialEnv } from "./support.js"

// POST /me/identities/{provider}/link (spec: /me rules 1, 2, 7): fresh session, redirect_uri
// byte-equal to a registered redirect URI of the token's client without fragment, the
// signed link state, and the redirect back to that exact URI. The callback links nothing: it
// hands a one-time link_code to that URI, and POST .../link/confirm by the same user, client
// and session links (docs/decisions/social-login.md, Social login: "/me link: the callback no longer links";
// the threat: an attacker's link URL opened by a victim signed in at the provider).

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
    method: "POST",
    body,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  })
/** Link start and the provider's consent: the browser at our callback (not yet followed). */
const toLinkCallback = async (token: string, provider = "github") => {
  const res = await link(token, provider, { redirect_uri: APP_RETURN })
  expect(res.status, res.text).toBe(200)
  return (await fake.visit(res.json.authorization_url)).location!
}
/** Link start, the provider's consent, our callback: the final redirect (to the app's redirect URI). */
const linkRoundTrip = async (token: string) => {
  const back = await requestUrl(app, await toLinkCallback(token))
  expect(back.status).toBe(302)
  expect(back.headers["cache-control"]).toBe("no-store")
  expect(back.headers["referrer-policy"]).toBe("no-referrer")
  return back.headers["location"] as string
}
const linkCodeOf = (location: string) => {
  expect(location.startsWith(`${APP_RETURN}&link_code=`)).toBe(true)
  const code = new URL(location).searchParams.get("link_code")!
  expect(location).toBe(`${APP_RETURN}&link_code=${code}&provider=github`)
  expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/)
  return code
}
const confirm = (token: string | undefined, provider: string, body: unknown) =>
  app.request(b.interaction_domain, `/v1/me/identities/${provider}/link/confirm`, {
    method: "POST",
    body,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  })
/** The whole legitimate link: start, provider, callback, confirm by the same token. */
const linkAndConfirm = async (token: string) =>
  confirm(token, "github", { link_code: linkCodeOf(await linkRoundTrip(token)) })
const identitiesOf = (userId: string) => countRows(app, "identities", "user_id = $1", [userId])
const linkedEvents = async (userId: string) =>
  (await eventsOf(app, b.environment_id, "identity.linked")).filter((e) => e.payload.userId === userId)

describe("POST /me/identities/{provider}/link and .../link/confirm", () => {
  it("the callback only hands a one-time link_code to the redirect URI; the confirm by the same session links", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    fake.setUser("github", { sub: "777001", emails: [{ email: uniqueEmail("gh"), primary: true, verified: true }] })
    const code = linkCodeOf(await linkRoundTrip(token))
    // nothing is linked before the confirm
    expect(await identitiesOf(user.id)).toBe(0)
    const confirmed = await confirm(token, "github", { link_code: code })
    expect(confirmed.status, confirmed.text).toBe(200)
    const [identity] = await query<{ id: string; provider_issuer: string; subject_claim: string }>(
      app,
      "select id, provider_issuer, subject_claim from identities where user_id = $1 and provider = 'github' and provider_subject = '777001'",
      [user.id],
    )
    expect(confirmed.json).toEqual({ identity_id: identity!.id, provider: "github", linked: true })
    expect(identity).toMatchObject({ provider_issuer: "https://github.com", subject_claim: "sub" })
    expect((await linkedEvents(user.id)).map((e) => [e.payload, e.actor])).toEqual([
      [
        { userId: user.id, identityId: identity!.id, provider: "github" },
        { type: "end_user", id: user.id },
      ],
    ])
    // only hashes are kept
    expect(await countRows(app, "social_states", "link_code_hash = $1", [code])).toBe(0)
  })

  it("the exploit: an attacker's link opened by a victim's browser links nothing; the code is useless to the victim's token and unknown to the attacker", async () => {
    const attacker = await createUser(app, b)
    const victim = await createUser(app, b)
    const attackerToken = await tokenFor(attacker)
    // The victim, signed in at GitHub, opens the attacker's forwarded authorization URL.
    fake.setUser("github", { sub: "777666", emails: [{ email: victim.email, primary: true, verified: true }] })
    const location = await linkRoundTrip(attackerToken)
    // The victim's GitHub account is linked to nobody.
    expect(await countRows(app, "identities", "provider_subject = '777666'")).toBe(0)
    // The link code went to the victim's browser, at the app's redirect URI. The victim's app
    // confirms it with the victim's own token: refused (another user started it).
    const code = linkCodeOf(location)
    const victimToken = await tokenFor(victim)
    const byVictim = await confirm(victimToken, "github", { link_code: code })
    expect([byVictim.status, byVictim.json.code]).toEqual([400, "invalid_link_code"])
    // The attacker never saw the code: a guessed one, or another link's, is refused.
    for (const guess of ["x", "A".repeat(43), linkCodeOf(await linkRoundTrip(victimToken))]) {
      const byAttacker = await confirm(attackerToken, "github", { link_code: guess })
      expect([byAttacker.status, byAttacker.json.code]).toEqual([400, "invalid_link_code"])
    }
    expect(await countRows(app, "identities", "provider_subject = '777666'")).toBe(0)
    expect(await identitiesOf(attacker.id)).toBe(0)
    expect(await linkedEvents(attacker.id)).toEqual([])
    // every refused confirm is audited
    expect(
      await countRows(
        app,
        "audit_events",
        "action = 'identity.link_failed' and subject_id = $1 and details->>'reason' = 'invalid_code'",
        [attacker.id],
      ),
    ).toBe(3)
  })

  it("only the session that started the link may confirm it: another session or client of the same user is refused", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    fake.setUser("github", { sub: "777011", emails: [] })
    const code = linkCodeOf(await linkRoundTrip(token))
    const otherSession = await tokenFor(user)
    const otherClient = await tokenFor(user, await createClient(app, b, { redirectUris: [APP_RETURN] }))
    for (const other of [otherSession, otherClient]) {
      const refused = await confirm(other, "github", { link_code: code })
      expect([refused.status, refused.json.code]).toEqual([400, "invalid_link_code"])
    }
    // another provider's path
    const wrongProvider = await confirm(token, "google", { link_code: code })
    expect([wrongProvider.status, wrongProvider.json.code]).toEqual([400, "invalid_link_code"])
    expect(await identitiesOf(user.id)).toBe(0)
    // the refusals changed nothing: the starting session still confirms
    expect((await confirm(token, "github", { link_code: code })).status).toBe(200)
  })

  it("a link code is used once; of two racing confirms exactly one links", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    fake.setUser("github", { sub: "777021", emails: [] })
    const code = linkCodeOf(await linkRoundTrip(token))
    const answers = await Promise.all([1, 2, 3].map(() => confirm(token, "github", { link_code: code })))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400, 400])
    for (const r of answers.filter((a) => a.status === 400)) expect(r.json.code).toBe("invalid_link_code")
    expect(await identitiesOf(user.id)).toBe(1)
    expect(await linkedEvents(user.id)).toHaveLength(1)
    const again = await confirm(token, "github", { link_code: code })
    expect([again.status, again.json.code]).toEqual([400, "invalid_link_code"])
  })

  it("an identity already linked to another user: 409 identity_already_linked; nothing moves", async () => {
    const owner = await createUser(app, b)
    const other = await createUser(app, b)
    fake.setUser("github", { sub: "777002", emails: [] })
    expect((await linkAndConfirm(await tokenFor(owner))).status).toBe(200)
    fake.setUser("github", { sub: "777002", emails: [] })
    const refused = await linkAndConfirm(await tokenFor(other))
    expect([refused.status, refused.json.code]).toEqual([409, "identity_already_linked"])
    expect(await countRows(app, "identities", "provider_subject = '777002' and user_id = $1", [owner.id])).toBe(1)
    expect(await identitiesOf(other.id)).toBe(0)
  })

  it("a user who already has an identity of this provider: 409 provider_already_linked; nothing added", async () => {
    const user = await createUser(app, b)
    fake.setUser("github", { sub: "777101", emails: [] })
    expect((await linkAndConfirm(await tokenFor(user))).status).toBe(200)
    // another GitHub account for the same user: one identity per provider per user
    fake.setUser("github", { sub: "777102", emails: [] })
    const refused = await linkAndConfirm(await tokenFor(user))
    expect([refused.status, refused.json.code]).toEqual([409, "provider_already_linked"])
    expect(await query(app, "select provider_subject from identities where user_id = $1", [user.id])).toEqual([
      { provider_subject: "777101" },
    ])
    expect(await linkedEvents(user.id)).toHaveLength(1)
  })

  it("linking the same provider account again is a success that changes nothing (same identity_id, no new event)", async () => {
    const user = await createUser(app, b)
    fake.setUser("github", { sub: "777201", emails: [] })
    const first = await linkAndConfirm(await tokenFor(user))
    fake.setUser("github", { sub: "777201", emails: [] })
    const second = await linkAndConfirm(await tokenFor(user))
    expect(second.status).toBe(200)
    expect(second.json).toEqual(first.json)
    expect(await identitiesOf(user.id)).toBe(1)
    expect(await linkedEvents(user.id)).toHaveLength(1)
  })

  it("a user blocked (or pending deletion) before the confirm is refused as on every /me route; nothing linked", async () => {
    for (const [status, sub] of [
      ["blocked", "777301"],
      ["pending_deletion", "777302"],
    ] as const) {
      const user = await createUser(app, b)
      const token = await tokenFor(user)
      fake.setUser("github", { sub, emails: [] })
      const code = linkCodeOf(await linkRoundTrip(token))
      await query(app, "update users set status = $2 where id = $1", [user.id, status])
      const refused = await confirm(token, "github", { link_code: code })
      expect([refused.status, refused.json.code], status).toEqual([401, "invalid_token"])
      expect(await identitiesOf(user.id)).toBe(0)
      expect(await linkedEvents(user.id)).toEqual([])
    }
  })

  it("the provider's refusal comes back as linked=false&error=social_provider_error, with no code", async () => {
    const user = await createUser(app, b)
    fake.refuseNext("github")
    const location = await linkRoundTrip(await tokenFor(user))
    expect(location).toBe(`${APP_RETURN}&linked=false&error=social_provider_error&provider=github`)
    expect(await identitiesOf(user.id)).toBe(0)
  })

  it("the confirm's own refusals: no token 401, unknown provider 400, wrongly shaped body 400 invalid_request_body", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    expect((await confirm(undefined, "github", { link_code: "x" })).json.code).toBe("unauthorized")
    const unknown = await confirm(token, "myspace", { link_code: "x" })
    expect([unknown.status, unknown.json.code]).toEqual([400, "invalid_request"])
    for (const body of [{}, { link_code: 7 }, { link_code: "x", extra: 1 }]) {
      const res = await confirm(token, "github", body)
      expect([res.status, res.json.code], JSON.stringify(body)).toEqual([400, "invalid_request_body"])
    }
  })

  it("the confirm is in the OpenAPI document beside the other /me routes", async () => {
    const doc = (await app.request(app.config.managementHost, "/v1/openapi.json")).json
    const op = doc.paths["/v1/me/identities/{provider}/link/confirm"]?.post
    expect(op?.summary).toEqual(expect.any(String))
    expect(op.tags).toEqual(["Self-service"])
    const ref = op.requestBody.content["application/json"].schema
    const body = ref.$ref ? doc.components.schemas[ref.$ref.split("/").pop()] : ref
    expect(body.required).toEqual(["link_code"])
  })

  it("refuses redirect URIs that are not byte-equal registrations of the token's client, or carry a fragment: 400 invalid_redirect_uri", async () => {
    const user = await createUser(app, b)
    const token = await tokenFor(user)
    // registered, but for another client than the token's
    await createClient(app, b, { redirectUris: ["https://other.example.com/cb"] })
    for (const redirect_uri of [
      `${APP_RETURN}#x`,
      "https://app.example.com/settings/identities?tab=linked&x=1",
      "https://APP.example.com/settings/identities?tab=linked",
      "https://other.example.com/cb",
    ]) {
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
    await query(app, "update login_sessions set auth_time = auth_time - interval '6 minutes' where id = $1", [
      minted.sessionId,
    ])
    await query(
      app,
      "update authorization_codes set auth_time = auth_time - interval '6 minutes' where session_id = $1",
      [minted.sessionId],
    )
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

  // Moves the clock 10 minutes: last.
  it("a link code lives as long as the link state (10 minutes); then it is refused and nothing is linked", async () => {
    const users = [await createUser(app, b), await createUser(app, b)]
    const sessions: Array<{ refresh: string; code: string }> = []
    for (const [i, user] of users.entries()) {
      const first = await exchangeCode(app, b, client, await mintCode(app, b, client, user))
      expect(first.status, first.text).toBe(200)
      fake.setUser("github", { sub: `77740${i}`, emails: [] })
      sessions.push({
        refresh: first.json.refresh_token,
        code: linkCodeOf(await linkRoundTrip(first.json.access_token)),
      })
    }
    /** A live access token of the same session (a refresh keeps `sid`). */
    const liveToken = async (i: number) => {
      const refreshed = await refresh(app, b, client, sessions[i]!.refresh)
      expect(refreshed.status, refreshed.text).toBe(200)
      sessions[i] = { ...sessions[i]!, refresh: refreshed.json.refresh_token }
      return refreshed.json.access_token as string
    }
    await app.advance(9 * 60_000 + 59_000)
    expect((await confirm(await liveToken(0), "github", { link_code: sessions[0]!.code })).status).toBe(200)
    await app.advance("1 second")
    const late = await confirm(await liveToken(1), "github", { link_code: sessions[1]!.code })
    expect([late.status, late.json.code]).toEqual([400, "invalid_link_code"])
    expect(await identitiesOf(users[1]!.id)).toBe(0)
  })
})
