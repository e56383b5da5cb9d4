import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Keys } from "../../src/platform/keys/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
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
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let other: Bootstrapped
let spa: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  other = await app.bootstrap()
  spa = await createClient(app, env, {
    postLogoutRedirectUris: ["http://localhost:5173/signed-out?from=issuer", "https://app.example.com/bye"],
  })
  user = await createUser(app, env)
})
afterAll(async () => {
  await app?.close()
})

const login = async (client = spa) => {
  const minted = await mintCode(app, env, client, user)
  const res = await exchangeCode(app, env, client, minted)
  expect(res.status).toBe(200)
  return {
    ...(res.json as { access_token: string; id_token: string; refresh_token: string }),
    sessionId: minted.sessionId,
  }
}
const familyOf = (token: string) => token.slice(3, token.indexOf("."))
const familyRow = async (token: string) =>
  (
    await queryRows<{ revoked_at: Date | null; revoked_reason: string | null }>(
      app,
      "select revoked_at, revoked_reason from refresh_families where id = $1",
      [familyOf(token)],
    )
  )[0]!
const sessionRow = async (id: string) =>
  (
    await queryRows<{ revoked_at: Date | null; revoked_reason: string | null }>(
      app,
      "select revoked_at, revoked_reason from login_sessions where id = $1",
      [id],
    )
  )[0]!
const revoke = (params: Record<string, string>) => postForm(app, env, "/oauth2/revoke", params)

describe("POST /oauth2/revoke", () => {
  it("a refresh token revokes its whole family (200 {}, no-store); the session itself stays", async () => {
    const t = await login()
    const rotated = await refresh(app, env, spa, t.refresh_token)
    const res = await revoke({ token: rotated.json.refresh_token })
    expect([res.status, res.json]).toEqual([200, {}])
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(await familyRow(t.refresh_token)).toMatchObject({ revoked_at: expect.any(Date), revoked_reason: "revoked" })
    expectOAuthError(await refresh(app, env, spa, rotated.json.refresh_token), 400, "invalid_grant")
    expectOAuthError(await refresh(app, env, spa, t.refresh_token), 400, "invalid_grant")
    expect((await sessionRow(t.sessionId)).revoked_at).toBeNull()
    const audit = await queryRows(
      app,
      "select 1 from audit_events where action = 'refresh_family.revoked' and subject_id = $1",
      [familyOf(t.refresh_token)],
    )
    expect(audit).toHaveLength(1)
    // revoking again changes nothing and still answers {}
    expect((await revoke({ token: rotated.json.refresh_token })).json).toEqual({})
  })

  it("the format is detected whatever token_type_hint says; JSON bodies work", async () => {
    const t = await login()
    const res = await app.issuer(env.environment_id, "/oauth2/revoke", {
      method: "POST",
      body: { token: t.refresh_token, token_type_hint: "access_token" },
    })
    expect([res.status, res.json]).toEqual([200, {}])
    expect((await familyRow(t.refresh_token)).revoked_reason).toBe("revoked")
  })

  it("unknown, malformed, forged and access tokens answer 200 {} and change nothing", async () => {
    const t = await login()
    const forged = t.refresh_token.replace(/\.[^.]+$/, "." + "B".repeat(43))
    for (const token of ["unknown", "rt_garbage", forged, t.access_token, t.id_token]) {
      const res = await revoke({ token, token_type_hint: "refresh_token" })
      expect([res.status, res.json]).toEqual([200, {}])
    }
    expect((await familyRow(t.refresh_token)).revoked_at).toBeNull()
    // access tokens are not denylisted
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
  })

  it("a missing token is 400 invalid_request; a storage failure is 503 server_error", async () => {
    expectOAuthError(await revoke({}), 400, "invalid_request")
    const t = await login()
    await queryRows(app, "alter table refresh_tokens rename to refresh_tokens_away")
    try {
      expectOAuthError(await revoke({ token: t.refresh_token }), 503, "server_error")
    } finally {
      await queryRows(app, "alter table refresh_tokens_away rename to refresh_tokens")
    }
    expect((await familyRow(t.refresh_token)).revoked_at).toBeNull()
  })
})

describe("GET|POST /oauth2/logout", () => {
  const logoutGet = (params: Record<string, string>) =>
    app.issuer(env.environment_id, `/oauth2/logout?${new URLSearchParams(params)}`)

  const expectRefused = (res: Awaited<ReturnType<typeof logoutGet>>) => {
    expect(res.status).toBe(400)
    expect(res.headers["location"]).toBeUndefined()
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/)
    expect(res.json).toMatchObject({ status: 400, code: "invalid_request" })
  }

  it("ends the hint's session and its refresh families, then 302 to the registered URI with its query kept and state added", async () => {
    const t = await login()
    const res = await logoutGet({
      id_token_hint: t.id_token,
      post_logout_redirect_uri: spa.postLogoutRedirectUri,
      state: "a b&c=d",
    })
    expect(res.status).toBe(302)
    expect(res.headers["location"]).toBe("http://localhost:5173/signed-out?from=issuer&state=a%20b%26c%3Dd")
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(await sessionRow(t.sessionId)).toMatchObject({ revoked_reason: "user_logout" })
    expect((await familyRow(t.refresh_token)).revoked_reason).toBe("user_logout")
    expectOAuthError(await refresh(app, env, spa, t.refresh_token), 400, "invalid_grant")
    expect((await userinfo(app, env, t.access_token)).status).toBe(401)
    const events = await queryRows<{ payload: unknown; actor: unknown }>(
      app,
      "select envelope->'payload' as payload, envelope->'actor' as actor from event_outbox where type = 'session.revoked' and envelope->'payload'->>'sessionId' = $1",
      [t.sessionId],
    )
    expect(events).toEqual([
      {
        payload: { userId: user.id, sessionId: t.sessionId, reason: "user_logout" },
        actor: { type: "end_user", id: user.id },
      },
    ])
    // logging out again is still a redirect
    expect(
      (await logoutGet({ id_token_hint: t.id_token, post_logout_redirect_uri: spa.postLogoutRedirectUri })).status,
    ).toBe(302)
  })

  it("POST (form) works the same; without state the Location is exactly the registered URI", async () => {
    const t = await login()
    const res = await postForm(app, env, "/oauth2/logout", {
      id_token_hint: t.id_token,
      post_logout_redirect_uri: "https://app.example.com/bye",
    })
    expect(res.status).toBe(302)
    expect(res.headers["location"]).toBe("https://app.example.com/bye")
    expect((await sessionRow(t.sessionId)).revoked_reason).toBe("user_logout")
    const withState = await logoutGet({
      client_id: spa.id,
      post_logout_redirect_uri: "https://app.example.com/bye",
      state: "xyz",
    })
    expect(withState.headers["location"]).toBe("https://app.example.com/bye?state=xyz")
  })

  it("an expired ID token is accepted as hint, also one signed by a retired key within 30 days", async () => {
    const t = await login()
    await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(keys.rotate(env.environment_id))
      }),
    )
    await app.advance("29 days")
    const res = await logoutGet({ id_token_hint: t.id_token, post_logout_redirect_uri: spa.postLogoutRedirectUri })
    expect(res.status).toBe(302)
    const late = await login()
    await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(keys.rotate(env.environment_id))
      }),
    )
    await app.advance("31 days")
    expectRefused(
      await logoutGet({ id_token_hint: late.id_token, post_logout_redirect_uri: spa.postLogoutRedirectUri }),
    )
    expect((await sessionRow(late.sessionId)).revoked_at).toBeNull()
  })

  it("without a hint, client_id picks the client and no session changes", async () => {
    const t = await login()
    const res = await logoutGet({ client_id: spa.id, post_logout_redirect_uri: spa.postLogoutRedirectUri })
    expect(res.status).toBe(302)
    expect((await sessionRow(t.sessionId)).revoked_at).toBeNull()
  })

  it("refusals: 400 invalid_request, no redirect, nothing revoked", async () => {
    const t = await login()
    const uri = spa.postLogoutRedirectUri
    expectRefused(await logoutGet({ id_token_hint: t.id_token }))
    expectRefused(await logoutGet({ post_logout_redirect_uri: uri }))
    expectRefused(await logoutGet({ id_token_hint: t.id_token, post_logout_redirect_uri: uri + "&x=1" }))
    expectRefused(await logoutGet({ id_token_hint: t.id_token, post_logout_redirect_uri: uri.toUpperCase() }))
    expectRefused(await logoutGet({ id_token_hint: t.id_token, post_logout_redirect_uri: "https://evil.example.com/" }))
    expectRefused(await logoutGet({ id_token_hint: "garbage", post_logout_redirect_uri: uri }))
    expectRefused(await logoutGet({ id_token_hint: t.access_token, post_logout_redirect_uri: uri }))
    const otherClient = await createClient(app, env, { postLogoutRedirectUris: [uri] })
    expectRefused(
      await logoutGet({ id_token_hint: t.id_token, client_id: otherClient.id, post_logout_redirect_uri: uri }),
    )
    expectRefused(await logoutGet({ client_id: `cli_${"q".repeat(32)}`, post_logout_redirect_uri: uri }))
    const disabled = await createClient(app, env, { status: "disabled", postLogoutRedirectUris: [uri] })
    expectRefused(await logoutGet({ client_id: disabled.id, post_logout_redirect_uri: uri }))
    // an ID token of another Environment
    const otherSpa = await createClient(app, other, { postLogoutRedirectUris: [uri] })
    const otherUser = await createUser(app, other)
    const foreignCode = await mintCode(app, other, otherSpa, otherUser)
    const foreign = await exchangeCode(app, other, otherSpa, foreignCode)
    expectRefused(await logoutGet({ id_token_hint: foreign.json.id_token, post_logout_redirect_uri: uri }))
    expect((await sessionRow(t.sessionId)).revoked_at).toBeNull()
    expect((await familyRow(t.refresh_token)).revoked_at).toBeNull()
  })
})
