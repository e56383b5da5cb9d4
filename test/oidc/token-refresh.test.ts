import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  claimsOf,
  createClient,
  createUser,
  exchangeCode,
  expectOAuthError,
  mintCode,
  postForm,
  queryRows,
  refresh,
  type TestClient,
  type TestUser,
  userinfo,
  verifyJwt,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let user: TestUser

const API = "https://api.example.com"
const FILES = "https://files.example.com"

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env, { allowedResources: [API, FILES] })
  user = await createUser(app, env)
})
afterAll(async () => {
  await app?.close()
})

const login = async (options: Parameters<typeof mintCode>[4] = {}, client = spa, who = user) => {
  const minted = await mintCode(app, env, client, who, options)
  const res = await exchangeCode(app, env, client, minted)
  expect(res.status).toBe(200)
  return {
    ...(res.json as { access_token: string; refresh_token: string; id_token?: string }),
    sessionId: minted.sessionId,
  }
}

const toMinute = (ms: number) => Math.ceil(ms / 60_000) * 60_000
const familyOf = (token: string) => token.slice(3, token.indexOf("."))
const family = async (token: string) =>
  (
    await queryRows<{
      generation: number
      revoked_at: Date | null
      revoked_reason: string | null
      grace_response_sealed: string | null
    }>(
      app,
      "select generation, revoked_at, revoked_reason, grace_response_sealed from refresh_families where id = $1",
      [familyOf(token)],
    )
  )[0]!
const session = async (id: string) =>
  (
    await queryRows<{
      revoked_at: Date | null
      revoked_reason: string | null
      idle_expires_at: Date
      absolute_expires_at: Date
      last_active_at: Date
    }>(
      app,
      "select revoked_at, revoked_reason, idle_expires_at, absolute_expires_at, last_active_at from login_sessions where id = $1",
      [id],
    )
  )[0]!

describe("refresh_token grant: rotation", () => {
  it("returns a new token of the next generation; amr becomes [refresh_token], acr basic, auth_time unchanged, no nonce", async () => {
    const first = await login({ method: "passkey" })
    const authTime = claimsOf(first.access_token)["auth_time"]
    await app.advance("2 minutes")
    const res = await refresh(app, env, spa, first.refresh_token)
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(Object.keys(res.json).sort()).toEqual([
      "access_token",
      "expires_in",
      "id_token",
      "refresh_token",
      "scope",
      "token_type",
    ])
    expect(res.json.refresh_token).toMatch(new RegExp(`^rt_${familyOf(first.refresh_token)}\\.2\\.[A-Za-z0-9_-]{43}$`))
    expect(res.json.expires_in).toBe(300)
    expect(res.json.scope).toBe("openid profile email offline_access")
    const at = await verifyJwt(app, env, res.json.access_token, "at+jwt")
    expect(at.payload).toMatchObject({
      amr: ["refresh_token"],
      acr: "urn:example-auth:loa:basic",
      auth_time: authTime,
      sid: first.sessionId,
      sv: 1,
    })
    expect(at.payload.iat).toBe(Math.floor(app.now() / 1000))
    const id = await verifyJwt(app, env, res.json.id_token, "JWT")
    expect(id.payload).toMatchObject({
      amr: ["refresh_token"],
      acr: "urn:example-auth:loa:basic",
      auth_time: authTime,
      aud: spa.id,
      sid: first.sessionId,
    })
    expect(id.payload).not.toHaveProperty("nonce")
    expect((await refresh(app, env, spa, res.json.refresh_token)).status).toBe(200)
    expect((await family(first.refresh_token)).generation).toBe(3)
  })

  it("within 5 seconds the retired generation gets the winner's response again, byte for byte", async () => {
    const first = await login()
    const won = await refresh(app, env, spa, first.refresh_token)
    await app.advance("4 seconds")
    const again = await refresh(app, env, spa, first.refresh_token)
    expect(again.status).toBe(200)
    expect(again.text).toBe(won.text)
    await app.advance("1 second") // exactly 5 s: still within the window
    expect((await refresh(app, env, spa, first.refresh_token)).text).toBe(won.text)
    expect((await family(first.refresh_token)).generation).toBe(2)
    expect((await refresh(app, env, spa, won.json.refresh_token)).status).toBe(200)
  })

  it("reuse after 5 seconds revokes the family and its session (session.revoked refresh_token_reuse); the current token fails too", async () => {
    const first = await login()
    const won = await refresh(app, env, spa, first.refresh_token)
    await app.advance(5001)
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 400, "invalid_grant")
    expect(await family(first.refresh_token)).toMatchObject({
      revoked_at: expect.any(Date),
      revoked_reason: "refresh_token_reuse",
      grace_response_sealed: null,
    })
    expect(await session(first.sessionId)).toMatchObject({ revoked_reason: "refresh_token_reuse" })
    expectOAuthError(await refresh(app, env, spa, won.json.refresh_token), 400, "invalid_grant")
    expect((await userinfo(app, env, won.json.access_token)).status).toBe(401)
    const events = await queryRows<{ payload: unknown }>(
      app,
      "select envelope->'payload' as payload from event_outbox where type = 'session.revoked' and envelope->'payload'->>'sessionId' = $1",
      [first.sessionId],
    )
    expect(events.map((e) => e.payload)).toEqual([
      { userId: user.id, sessionId: first.sessionId, reason: "refresh_token_reuse" },
    ])
    const audit = await queryRows(
      app,
      "select 1 from audit_events where action = 'token.refresh_reuse_detected' and subject_id = $1",
      [first.sessionId],
    )
    expect(audit).toHaveLength(1)
  })

  it("an older generation than the retired one is reuse even within 5 seconds", async () => {
    const first = await login()
    const second = await refresh(app, env, spa, first.refresh_token)
    await refresh(app, env, spa, second.json.refresh_token)
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 400, "invalid_grant")
    expect((await family(first.refresh_token)).revoked_reason).toBe("refresh_token_reuse")
  })

  it("a forged secret, a malformed token, another client's token: invalid_grant and the family is untouched", async () => {
    const first = await login()
    const forged = first.refresh_token.replace(/\.[^.]+$/, "." + "A".repeat(43))
    expectOAuthError(await refresh(app, env, spa, forged), 400, "invalid_grant")
    expectOAuthError(await refresh(app, env, spa, first.refresh_token.replace(".1.", ".7.")), 400, "invalid_grant")
    for (const bad of ["rt_nope", "garbage", first.refresh_token + "x", first.access_token]) {
      expectOAuthError(await refresh(app, env, spa, bad), 400, "invalid_grant")
    }
    const other = await createClient(app, env)
    expectOAuthError(await refresh(app, env, other, first.refresh_token), 400, "invalid_grant")
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", { grant_type: "refresh_token", client_id: spa.id }),
      400,
      "invalid_request",
    )
    expect(await family(first.refresh_token)).toMatchObject({ generation: 1, revoked_at: null })
    expect((await refresh(app, env, spa, first.refresh_token)).status).toBe(200)
  })

  it("scope and resource may only narrow, per request; widening is invalid_scope and rotates nothing", async () => {
    const first = await login({ resources: [API, FILES] })
    const narrowed = await refresh(app, env, spa, first.refresh_token, { scope: "openid", resource: FILES })
    expect(narrowed.status).toBe(200)
    expect(narrowed.json.scope).toBe("openid")
    const at = await verifyJwt(app, env, narrowed.json.access_token, "at+jwt")
    expect(at.payload).toMatchObject({ scope: "openid", aud: FILES })
    const id = await verifyJwt(app, env, narrowed.json.id_token, "JWT")
    expect(id.payload).not.toHaveProperty("email")
    expect(id.payload).not.toHaveProperty("name")
    // omitted values keep the original grant
    const full = await refresh(app, env, spa, narrowed.json.refresh_token)
    expect(full.json.scope).toBe("openid profile email offline_access")
    expect((await verifyJwt(app, env, full.json.access_token, "at+jwt")).payload.aud).toEqual([API, FILES])
    // no ID token when openid is narrowed away
    const noOpenid = await refresh(app, env, spa, full.json.refresh_token, { scope: "email offline_access" })
    expect(noOpenid.json).not.toHaveProperty("id_token")
    const current = noOpenid.json.refresh_token
    expectOAuthError(await refresh(app, env, spa, current, { scope: "openid admin" }), 400, "invalid_scope")
    expectOAuthError(
      await refresh(app, env, spa, current, { resource: "https://evil.example.com" }),
      400,
      "invalid_scope",
    )
    expect((await family(current)).generation).toBe(4)
    expect((await refresh(app, env, spa, current)).status).toBe(200)
  })

  it("a blocked user gets 403 access_denied; a revoked session or raised security version is invalid_grant; nothing rotates", async () => {
    const who = await createUser(app, env)
    const first = await login({}, spa, who)
    await queryRows(app, "update users set status = 'blocked' where id = $1", [who.id])
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 403, "access_denied")
    await queryRows(app, "update users set status = 'active', security_version = 2 where id = $1", [who.id])
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 400, "invalid_grant")
    expect((await family(first.refresh_token)).generation).toBe(1)

    const second = await login()
    await queryRows(
      app,
      "update login_sessions set revoked_at = $2, revoked_reason = 'admin_revocation' where id = $1",
      [second.sessionId, new Date(app.now())],
    )
    expectOAuthError(await refresh(app, env, spa, second.refresh_token), 400, "invalid_grant")
    const third = await login()
    await queryRows(app, "update login_sessions set idle_expires_at = $2 where id = $1", [
      third.sessionId,
      new Date(app.now()),
    ])
    expectOAuthError(await refresh(app, env, spa, third.refresh_token), 400, "invalid_grant")
  })
})

describe("refresh lifetimes (TestClock)", () => {
  it("30 days without use expires the family", async () => {
    const a = await login()
    await app.advance("29 days")
    const used = await refresh(app, env, spa, a.refresh_token)
    expect(used.status).toBe(200)
    await app.advance("30 days")
    expectOAuthError(await refresh(app, env, spa, used.json.refresh_token), 400, "invalid_grant")
  })

  it("90 days after issue the family expires however often it is used; the session lives as long as the family", async () => {
    const a = await login()
    let token = a.refresh_token
    let access = a.access_token
    for (let day = 20; day < 90; day += 20) {
      await app.advance("20 days")
      const res = await refresh(app, env, spa, token)
      expect(res.status).toBe(200)
      token = res.json.refresh_token
      access = res.json.access_token
    }
    // day 80: the session is past its own 7-day idle and 30-day absolute limits, yet alive
    expect((await userinfo(app, env, access)).status).toBe(200)
    const s = await session(a.sessionId)
    expect(s.revoked_at).toBeNull()
    await app.advance("10 days")
    expectOAuthError(await refresh(app, env, spa, token), 400, "invalid_grant")
    expect((await userinfo(app, env, access)).status).toBe(401)
  })

  it("a refresh renews the session's activity; revoking the family restores the session's own 7-day idle limit", async () => {
    const a = await login()
    await app.advance("10 days")
    const res = await refresh(app, env, spa, a.refresh_token)
    const s = await session(a.sessionId)
    expect(s.last_active_at.getTime()).toBe(Math.floor(app.now() / 1000) * 1000 + (app.now() % 1000))
    expect(s.idle_expires_at.getTime()).toBe(toMinute(app.now() + 30 * 86_400_000))
    await app.advance("8 days")
    const late = await refresh(app, env, spa, res.json.refresh_token)
    expect((await userinfo(app, env, late.json.access_token)).status).toBe(200)
    // without its family the session follows its own limits: last active now, so alive for 7 more days
    expect((await postForm(app, env, "/oauth2/revoke", { token: late.json.refresh_token })).status).toBe(200)
    expect((await userinfo(app, env, late.json.access_token)).status).toBe(200)
    expect((await session(a.sessionId)).idle_expires_at.getTime()).toBe(app.now() + 7 * 86_400_000)
  })

  it("a rotation writes the session's row at most once a minute, its idle expiry the family's rounded up to the minute: never short of the family's", async () => {
    const a = await login()
    await app.advance(60_000 - (app.now() % 60_000) + 1_000) // a second into a minute
    const first = await refresh(app, env, spa, a.refresh_token)
    const renewed = await session(a.sessionId)
    expect([renewed.last_active_at.getTime(), renewed.idle_expires_at.getTime()]).toEqual([
      app.now(),
      toMinute(app.now() + 30 * 86_400_000),
    ])
    // 50 s later, in the same minute: the family's new expiry does not pass the session's, whose row is left alone.
    await app.advance("50 seconds")
    const second = await refresh(app, env, spa, first.json.refresh_token)
    expect(second.status).toBe(200)
    expect(await session(a.sessionId)).toEqual(renewed)
    const familyIdle = async () =>
      (
        await queryRows<{ idle_expires_at: Date }>(app, "select idle_expires_at from refresh_families where id = $1", [
          familyOf(a.refresh_token),
        ])
      )[0]!.idle_expires_at.getTime()
    expect(await familyIdle()).toBe(app.now() + 30 * 86_400_000)
    expect(renewed.idle_expires_at.getTime()).toBeGreaterThanOrEqual(await familyIdle())
    // The last millisecond of the family's idle limit, unused since: the session is still alive, and is renewed.
    await app.advance(30 * 86_400_000 - 1)
    const last = await refresh(app, env, spa, second.json.refresh_token)
    expect(last.status).toBe(200)
    expect((await userinfo(app, env, last.json.access_token)).status).toBe(200)
    const again = await session(a.sessionId)
    expect([again.last_active_at.getTime(), again.idle_expires_at.getTime()]).toEqual([
      app.now(),
      toMinute(app.now() + 30 * 86_400_000),
    ])
  })

  it("a rotation in the same minute still writes a session whose absolute expiry fell back below the family's", async () => {
    const a = await login()
    await app.advance(60_000 - (app.now() % 60_000) + 1_000) // a second into a minute
    const first = await refresh(app, env, spa, a.refresh_token)
    const renewed = await session(a.sessionId)
    // The session's own 30-day absolute limit again (what revoking another family of it does, restoreSessionLimits);
    // its idle expiry, renewed this minute, alone would not make the next rotation write it.
    await queryRows(
      app,
      "update login_sessions set absolute_expires_at = created_at + interval '30 days' where id = $1",
      [a.sessionId],
    )
    await app.advance("10 seconds")
    const second = await refresh(app, env, spa, first.json.refresh_token)
    expect(second.status).toBe(200)
    const restretched = await session(a.sessionId)
    expect([
      restretched.last_active_at.getTime(),
      restretched.idle_expires_at.getTime(),
      restretched.absolute_expires_at.getTime(),
    ]).toEqual([app.now(), toMinute(app.now() + 30 * 86_400_000), renewed.absolute_expires_at.getTime()])
  })

  it("a session without a family keeps its own 7-day idle / 30-day absolute limits", async () => {
    const minted = await mintCode(app, env, spa, user, { scopes: ["openid"] })
    const s = await session(minted.sessionId)
    expect(s.idle_expires_at.getTime()).toBe(app.now() + 7 * 86_400_000)
    expect(s.absolute_expires_at.getTime()).toBe(app.now() + 30 * 86_400_000)
    const res = await exchangeCode(app, env, spa, minted)
    expect(res.json).not.toHaveProperty("refresh_token")
    expect((await session(minted.sessionId)).idle_expires_at.getTime()).toBe(s.idle_expires_at.getTime())
  })
})
