import { generateKeyPairSync, sign } from "node:crypto"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Keys } from "../../src/platform/keys/service.js"
import { liveStateChanged } from "../../src/platform/live-state-changes.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  basic,
  claimsOf,
  createApiKey,
  createClient,
  createSiblingEnvironment,
  createUser,
  exchangeCode,
  headerOf,
  mintCode,
  postForm,
  queryRows,
  type TestClient,
  type TestUser,
  userinfo,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let other: Bootstrapped
let spa: TestClient
let bff: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  other = await app.bootstrap()
  spa = await createClient(app, env)
  bff = await createClient(app, env, { type: "web_bff" })
  user = await createUser(app, env, { name: "Grace Hopper", locale: "en-US" })
})
afterAll(async () => {
  await app?.close()
})

const tokens = async (scopes?: ReadonlyArray<string>, who = user, client = spa, e = env) => {
  const minted = await mintCode(app, e, client, who, scopes ? { scopes } : {})
  const res = await exchangeCode(app, e, client, minted)
  expect(res.status).toBe(200)
  return {
    ...(res.json as { access_token: string; id_token: string; refresh_token: string }),
    sessionId: minted.sessionId,
  }
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url")
/** A JWT with these header and claims, signed with some ES256 key (not necessarily ours). */
const forge = (
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey,
) => {
  const input = `${b64(header)}.${b64(claims)}`
  return `${input}.${sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" }).toString("base64url")}`
}

const expectInvalidToken = (res: Awaited<ReturnType<typeof userinfo>>) => {
  expect(res.status).toBe(401)
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/)
  expect(res.json).toMatchObject({ status: 401, code: "invalid_token", request_id: expect.stringMatching(/^req_/) })
  expect(res.headers["www-authenticate"]).toMatch(/^Bearer realm="userinfo"/)
}

describe("GET /oauth2/userinfo", () => {
  it("returns sub always, profile and email claims per scope, no-store", async () => {
    const full = await tokens()
    const res = await userinfo(app, env, full.access_token)
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.json).toEqual({
      sub: user.id,
      name: "Grace Hopper",
      locale: "en-US",
      updated_at: expect.any(Number),
      email: user.email,
      email_verified: true,
    })
    expect((await userinfo(app, env, (await tokens(["openid"])).access_token)).json).toEqual({ sub: user.id })
    expect(
      Object.keys((await userinfo(app, env, (await tokens(["openid", "profile"])).access_token)).json).sort(),
    ).toEqual(["locale", "name", "sub", "updated_at"])
    expect((await userinfo(app, env, (await tokens(["openid", "email"])).access_token)).json).toEqual({
      sub: user.id,
      email: user.email,
      email_verified: true,
    })
  })

  it("a missing or malformed Authorization header is 401 invalid_token with a Bearer challenge", async () => {
    const none = await app.issuer(env.environment_id, "/oauth2/userinfo")
    expectInvalidToken(none)
    expect(none.headers["www-authenticate"]).toBe('Bearer realm="userinfo"')
    const garbage = await userinfo(app, env, "not-a-jwt")
    expectInvalidToken(garbage)
    expect(garbage.headers["www-authenticate"]).toContain('error="invalid_token"')
    expectInvalidToken(
      await app.issuer(env.environment_id, "/oauth2/userinfo", { headers: { authorization: "Basic abc" } }),
    )
  })

  it("a token without openid is 400 invalid_request (Problem Details)", async () => {
    const res = await userinfo(app, env, (await tokens(["email"], user, spa)).access_token)
    expect(res.status).toBe(400)
    expect(res.json).toMatchObject({ code: "invalid_request" })
  })

  it("the access token lives 300 seconds (TestClock)", async () => {
    const t = await tokens()
    await app.advance("299 seconds")
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    await app.advance("1 second")
    expectInvalidToken(await userinfo(app, env, t.access_token))
  })

  it("ES256 is fixed and typ must be at+jwt: alg none, HS256, an ID token, a foreign key, another issuer are refused", async () => {
    const t = await tokens()
    const claims = claimsOf(t.access_token)
    const kid = headerOf(t.access_token).kid
    expectInvalidToken(await userinfo(app, env, `${b64({ alg: "none", typ: "at+jwt" })}.${b64(claims)}.`))
    const [h, p] = t.access_token.split(".")
    expectInvalidToken(
      await userinfo(app, env, `${b64({ alg: "HS256", typ: "at+jwt", kid })}.${p}.${t.access_token.split(".")[2]}`),
    )
    expectInvalidToken(await userinfo(app, env, t.id_token))
    expectInvalidToken(await userinfo(app, env, forge({ alg: "ES256", typ: "at+jwt", kid }, claims)))
    expectInvalidToken(
      await userinfo(
        app,
        env,
        `${h}.${b64({ ...claims, scope: "openid profile email admin" })}.${t.access_token.split(".")[2]}`,
      ),
    )
    // a token of another Environment: its kid is unknown here, and its issuer differs
    const otherSpa = await createClient(app, other)
    const otherUser = await createUser(app, other)
    const foreign = await tokens(undefined, otherUser, otherSpa, other)
    expectInvalidToken(await userinfo(app, env, foreign.access_token))
    expect((await userinfo(app, other, foreign.access_token)).status).toBe(200)
  })

  // These changes are written straight into the database, as another replica would: this server
  // learns them from Postgres' notification (src/oidc/access-token/live-cache.ts, decisions
  // "Performance"), so each is awaited within that bound (2 s) rather than required at once.
  // Changes made through this server's own endpoints apply at once (revoke-logout, me tests).
  const invalidWithinBound = async (accessToken: string) => {
    const deadline = Date.now() + 2_000
    for (;;) {
      const res = await userinfo(app, env, accessToken)
      if (res.status !== 200 || Date.now() > deadline) return expectInvalidToken(res)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  it("live checks: a raised security version, a blocked or deleted user, a revoked session make the token invalid", async () => {
    for (const change of [
      "update users set security_version = security_version + 1 where id = $1",
      "update users set status = 'blocked' where id = $1",
      "update users set status = 'pending_deletion' where id = $1",
    ]) {
      const who = await createUser(app, env)
      const t = await tokens(undefined, who)
      expect((await userinfo(app, env, t.access_token)).status).toBe(200)
      await queryRows(app, change, [who.id])
      await invalidWithinBound(t.access_token)
    }
    const t = await tokens()
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    await queryRows(
      app,
      "update login_sessions set revoked_at = $2, revoked_reason = 'admin_revocation' where id = $1",
      [t.sessionId, new Date(app.now())],
    )
    await invalidWithinBound(t.access_token)
    // a session past its idle or absolute expiry (7 days idle / 30 days absolute) ends its tokens too
    for (const column of ["idle_expires_at", "absolute_expires_at"]) {
      const live = await tokens()
      expect((await userinfo(app, env, live.access_token)).status).toBe(200)
      await queryRows(app, `update login_sessions set ${column} = $2 where id = $1`, [
        live.sessionId,
        new Date(app.now()),
      ])
      await invalidWithinBound(live.access_token)
    }
  })

  it("tokens signed by a retired key keep working (the key stays on the server)", async () => {
    const t = await tokens()
    await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(keys.rotate(env.environment_id))
      }),
    )
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    const fresh = await tokens()
    expect(headerOf(fresh.access_token).kid).not.toBe(headerOf(t.access_token).kid)
  })

  it("when the user or session state cannot be read it is 503 user_unavailable, not 401", async () => {
    const t = await tokens()
    // The code exchange left this state in the replica's memory (it read it): a local change of
    // the user makes the next reads go to Postgres, which then fails.
    liveStateChanged(env.environment_id, user.id)
    await queryRows(app, "alter table login_sessions rename to login_sessions_away")
    try {
      const res = await userinfo(app, env, t.access_token)
      expect(res.status).toBe(503)
      expect(res.json).toMatchObject({ code: "user_unavailable", status: 503 })
      expect(res.headers["retry-after"]).toBe("1")
    } finally {
      await queryRows(app, "alter table login_sessions_away rename to login_sessions")
    }
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
  })
})

describe("POST /oauth2/introspect", () => {
  const introspect = (token: string, headers: Record<string, string> = {}, extra: Record<string, string> = {}) =>
    postForm(app, env, "/oauth2/introspect", { token, ...extra }, headers)
  const asBff = () => ({ authorization: basic(bff.id, bff.secret!) })

  it("a web_bff client (basic or post) gets the active token's claims", async () => {
    const t = await tokens()
    const res = await introspect(t.access_token, asBff())
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    const c = claimsOf(t.access_token)
    expect(res.json).toEqual({
      active: true,
      scope: "openid profile email offline_access",
      client_id: spa.id,
      token_type: "Bearer",
      exp: c["exp"],
      iat: c["iat"],
      sub: user.id,
      aud: env.issuer,
      iss: env.issuer,
      jti: c["jti"],
      sid: t.sessionId,
      auth_time: c["auth_time"],
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
    })
    // Each client uses the method it registered (docs/decisions/rp-libraries.md): a Basic client posting its secret is not allowed.
    expect((await introspect(t.access_token, {}, { client_id: bff.id, client_secret: bff.secret! })).json).toEqual({
      active: false,
    })
    const postClient = await createClient(app, env, { type: "web_bff", method: "client_secret_post" })
    const viaPost = await introspect(
      t.access_token,
      {},
      { client_id: postClient.id, client_secret: postClient.secret! },
    )
    expect(viaPost.json.active).toBe(true)
    const json = await app.issuer(env.environment_id, "/oauth2/introspect", {
      method: "POST",
      body: { token: t.access_token, client_id: postClient.id, client_secret: postClient.secret! },
    })
    expect(json.json.active).toBe(true)
  })

  it("X-Management-API-Key with scope introspect: Workspace keys for every Environment, pinned keys only for theirs", async () => {
    const t = await tokens()
    const workspaceKey = await createApiKey(app, env, ["introspect"])
    expect((await introspect(t.access_token, { "x-management-api-key": workspaceKey.secret })).json.active).toBe(true)
    const pinned = await createApiKey(app, env, ["introspect"], env.environment_id)
    expect((await introspect(t.access_token, { "x-management-api-key": pinned.secret })).json.active).toBe(true)
    const sibling = await createSiblingEnvironment(app, env)
    const pinnedElsewhere = await createApiKey(app, env, ["introspect"], sibling.id)
    expect((await introspect(t.access_token, { "x-management-api-key": pinnedElsewhere.secret })).json).toEqual({
      active: false,
    })
    const noScope = await createApiKey(app, env, ["users:read"])
    expect((await introspect(t.access_token, { "x-management-api-key": noScope.secret })).json).toEqual({
      active: false,
    })
    const otherWorkspace = await createApiKey(app, other, ["introspect"])
    expect((await introspect(t.access_token, { "x-management-api-key": otherWorkspace.secret })).json).toEqual({
      active: false,
    })
    await queryRows(app, "update api_keys set revoked_at = $2 where id = $1", [workspaceKey.id, new Date(app.now())])
    expect((await introspect(t.access_token, { "x-management-api-key": workspaceKey.secret })).json).toEqual({
      active: false,
    })
  })

  it("every other caller gets 200 {active:false}: none, a public client, a wrong secret, a disabled client", async () => {
    const t = await tokens()
    for (const headers of [
      {},
      { authorization: basic(bff.id, "wrong") },
      { authorization: "Bearer " + t.access_token },
    ]) {
      const res = await introspect(t.access_token, headers)
      expect([res.status, res.json]).toEqual([200, { active: false }])
    }
    expect((await introspect(t.access_token, {}, { client_id: spa.id })).json).toEqual({ active: false })
    const disabled = await createClient(app, env, { type: "web_bff", status: "disabled" })
    expect((await introspect(t.access_token, { authorization: basic(disabled.id, disabled.secret!) })).json).toEqual({
      active: false,
    })
  })

  it("inactive: refresh tokens (whatever the hint), ID tokens, garbage, expired, other-Environment, stale sv, logged-out", async () => {
    const t = await tokens()
    for (const hint of [undefined, "refresh_token", "access_token"]) {
      const res = await introspect(t.refresh_token, asBff(), hint ? { token_type_hint: hint } : {})
      expect(res.json).toEqual({ active: false })
    }
    expect((await introspect(t.id_token, asBff())).json).toEqual({ active: false })
    expect((await introspect("garbage", asBff())).json).toEqual({ active: false })
    const otherSpa = await createClient(app, other)
    const foreign = await tokens(undefined, await createUser(app, other), otherSpa, other)
    expect((await introspect(foreign.access_token, asBff())).json).toEqual({ active: false })

    const who = await createUser(app, env)
    const stale = await tokens(undefined, who)
    await queryRows(app, "update users set security_version = 5 where id = $1", [who.id])
    // A write of this replica (what every service write does): its memory drops the user at once.
    // Written behind the service's back, as here, it is the notification that drops it, within
    // milliseconds (test/faults/live-state.test.ts), and an answer computed from memory before it
    // arrives would still be active.
    liveStateChanged(env.environment_id, who.id)
    expect((await introspect(stale.access_token, asBff())).json).toEqual({ active: false })

    const out = await tokens()
    await app.issuer(
      env.environment_id,
      `/oauth2/logout?${new URLSearchParams({ id_token_hint: out.id_token, post_logout_redirect_uri: spa.postLogoutRedirectUri })}`,
    )
    expect((await introspect(out.access_token, asBff())).json).toEqual({ active: false })

    const expiring = await tokens()
    await app.advance("300 seconds")
    expect((await introspect(expiring.access_token, asBff())).json).toEqual({ active: false })
  })

  it("an allowed caller without a token gets 400 invalid_request", async () => {
    const res = await postForm(app, env, "/oauth2/introspect", {}, asBff())
    expect(res.status).toBe(400)
    expect(res.json.error).toBe("invalid_request")
  })
})
