import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  basic,
  createClient,
  createUser,
  exchangeCode,
  expectOAuthError,
  type MintedCode,
  mintCode,
  postForm,
  queryRows,
  refresh,
  type TestClient,
  type TestUser,
  verifyJwt,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let bff: TestClient
let user: TestUser

const API = "https://api.example.com"
const FILES = "https://files.example.com"

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env, { allowedResources: [API, FILES] })
  bff = await createClient(app, env, { type: "web_bff", redirectUris: ["https://app.example.com/cb"] })
  user = await createUser(app, env, { name: "Ada Lovelace", locale: "en-GB" })
})
afterAll(async () => {
  await app?.close()
})

const codeRow = async (minted: MintedCode) =>
  (
    await queryRows<{ consumed_at: Date | null; refresh_family_id: string | null }>(
      app,
      "select consumed_at, refresh_family_id from authorization_codes where session_id = $1",
      [minted.sessionId],
    )
  )[0]!

const sessionRow = async (sessionId: string) =>
  (
    await queryRows<{ revoked_at: Date | null; revoked_reason: string | null }>(
      app,
      "select revoked_at, revoked_reason from login_sessions where id = $1",
      [sessionId],
    )
  )[0]!

describe("POST /oauth2/token grant_type=authorization_code: success", () => {
  it("exchanges a code for an access token, an ID token and a refresh token (public client, form body)", async () => {
    const minted = await mintCode(app, env, spa, user)
    const res = await exchangeCode(app, env, spa, minted)
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.headers["content-type"]).toMatch(/^application\/json/)
    expect(Object.keys(res.json).sort()).toEqual([
      "access_token",
      "expires_in",
      "id_token",
      "refresh_token",
      "scope",
      "token_type",
    ])
    expect(res.json.token_type).toBe("Bearer")
    expect(res.json.expires_in).toBe(300)
    expect(res.json.scope).toBe("openid profile email offline_access")
    expect(res.json.refresh_token).toMatch(/^rt_fam_[a-z2-7]{32}\.1\.[A-Za-z0-9_-]{43}$/)

    const at = await verifyJwt(app, env, res.json.access_token, "at+jwt")
    expect(at.header).toEqual({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) })
    const nowS = Math.floor(app.now() / 1000)
    // exactly the spec's claims: never azp, never email
    expect(Object.keys(at.payload).sort()).toEqual([
      "acr",
      "amr",
      "aud",
      "auth_time",
      "client_id",
      "exp",
      "iat",
      "iss",
      "jti",
      "scope",
      "sid",
      "sub",
      "sv",
    ])
    expect(at.payload).toMatchObject({
      iss: env.issuer,
      sub: user.id,
      aud: env.issuer,
      iat: nowS,
      exp: nowS + 300,
      sid: minted.sessionId,
      client_id: spa.id,
      scope: "openid profile email offline_access",
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
      auth_time: nowS,
      sv: 1,
    })

    const id = await verifyJwt(app, env, res.json.id_token, "JWT")
    expect(id.header).toEqual({ alg: "ES256", typ: "JWT", kid: at.header.kid })
    expect(id.payload).toMatchObject({
      iss: env.issuer,
      sub: user.id,
      aud: spa.id,
      exp: nowS + 300,
      iat: nowS,
      sid: minted.sessionId,
      auth_time: nowS,
      amr: ["email_otp"],
      acr: "urn:example-auth:loa:basic",
      nonce: minted.nonce,
      name: "Ada Lovelace",
      locale: "en-GB",
      email: user.email,
      email_verified: true,
      updated_at: expect.any(Number),
    })
    expect(id.payload).not.toHaveProperty("azp")
    const row = await codeRow(minted)
    expect(row.consumed_at).not.toBeNull()
    expect(res.json.refresh_token).toContain(row.refresh_family_id)
  })

  it("accepts a JSON body (and client_secret_basic / client_secret_post for a web_bff client registered for it)", async () => {
    const minted = await mintCode(app, env, spa, user)
    const res = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body: {
        grant_type: "authorization_code",
        code: minted.code,
        redirect_uri: spa.redirectUri,
        code_verifier: minted.verifier,
        client_id: spa.id,
      },
    })
    expect(res.status).toBe(200)

    const viaBasic = await exchangeCode(app, env, bff, await mintCode(app, env, bff, user))
    expect(viaBasic.status).toBe(200)
    const postClient = await createClient(app, env, { type: "web_bff", method: "client_secret_post" })
    const m = await mintCode(app, env, postClient, user)
    const viaPost = await postForm(app, env, "/oauth2/token", {
      grant_type: "authorization_code",
      code: m.code,
      redirect_uri: postClient.redirectUri,
      code_verifier: m.verifier,
      client_id: postClient.id,
      client_secret: postClient.secret!,
    })
    expect(viaPost.status).toBe(200)
    await expect(verifyJwt(app, env, viaPost.json.access_token, "at+jwt")).resolves.toMatchObject({
      payload: { client_id: postClient.id },
    })
  })

  it("issues no refresh token without offline_access and no ID token without openid", async () => {
    const noOffline = await exchangeCode(
      app,
      env,
      spa,
      await mintCode(app, env, spa, user, { scopes: ["openid", "email"] }),
    )
    expect(noOffline.status).toBe(200)
    expect(noOffline.json).not.toHaveProperty("refresh_token")
    expect(noOffline.json.scope).toBe("openid email")
    const id = await verifyJwt(app, env, noOffline.json.id_token, "JWT")
    expect(id.payload).not.toHaveProperty("name")
    expect(id.payload.email).toBe(user.email)

    const noOpenid = await exchangeCode(
      app,
      env,
      spa,
      await mintCode(app, env, spa, user, { scopes: ["offline_access"], nonce: null }),
    )
    expect(noOpenid.status).toBe(200)
    expect(noOpenid.json).not.toHaveProperty("id_token")
    expect(typeof noOpenid.json.refresh_token).toBe("string")
  })

  it("passkey logins carry amr [passkey] and the phishing-resistant acr", async () => {
    const res = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user, { method: "passkey" }))
    const at = await verifyJwt(app, env, res.json.access_token, "at+jwt")
    expect(at.payload.amr).toEqual(["passkey"])
    expect(at.payload.acr).toBe("urn:example-auth:loa:phishing-resistant")
  })

  it("aud is the stored resources (array when several), or a narrowed subset (string when one)", async () => {
    const all = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user, { resources: [API, FILES] }))
    expect((await verifyJwt(app, env, all.json.access_token, "at+jwt")).payload.aud).toEqual([API, FILES])
    const one = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user, { resources: [API, FILES] }), {
      resource: FILES,
    })
    expect((await verifyJwt(app, env, one.json.access_token, "at+jwt")).payload.aud).toBe(FILES)
    const both = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user, { resources: [API, FILES] }), {
      resource: [FILES, API],
    })
    expect((await verifyJwt(app, env, both.json.access_token, "at+jwt")).payload.aud).toEqual([API, FILES])
  })

  it("a resource not stored at authorize time is invalid_scope and leaves the code unused", async () => {
    const minted = await mintCode(app, env, spa, user, { resources: [API] })
    expectOAuthError(await exchangeCode(app, env, spa, minted, { resource: FILES }), 400, "invalid_scope")
    expect((await codeRow(minted)).consumed_at).toBeNull()
    const none = await mintCode(app, env, spa, user)
    expectOAuthError(await exchangeCode(app, env, spa, none, { resource: API }), 400, "invalid_scope")
    expect((await exchangeCode(app, env, spa, minted, { resource: API })).status).toBe(200)
  })

  it("marks the login transaction consumed (code_issued -> consumed)", async () => {
    const txn = `txn_${"a".repeat(32)}`
    const now = new Date(app.now())
    await queryRows(
      app,
      `insert into auth_transactions (id, workspace_id, environment_id, client_id, redirect_uri, code_challenge, state,
        scopes, status, source, created_at, updated_at, expires_at)
      values ($1, $2, $3, $4, $5, 'x', 's', '{openid}', 'code_issued', 'api', $6, $6, $7)`,
      [txn, env.workspace_id, env.environment_id, spa.id, spa.redirectUri, now, new Date(app.now() + 600_000)],
    )
    const res = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user, { transactionId: txn }))
    expect(res.status).toBe(200)
    const [row] = await queryRows<{ status: string; consumed_at: Date | null }>(
      app,
      "select status, consumed_at from auth_transactions where id = $1",
      [txn],
    )
    expect(row).toEqual({ status: "consumed", consumed_at: expect.any(Date) })
  })
})

describe("POST /oauth2/token: refusals (exact error, and nothing changes)", () => {
  it("grant_type missing or unsupported is invalid_request", async () => {
    expectOAuthError(await postForm(app, env, "/oauth2/token", { client_id: spa.id }), 400, "invalid_request")
    for (const grant of [
      "password",
      "client_credentials",
      "implicit",
      "urn:ietf:params:oauth:grant-type:device_code",
    ]) {
      const res = await postForm(app, env, "/oauth2/token", { grant_type: grant, client_id: spa.id })
      expectOAuthError(res, 400, "invalid_request")
      expect(res.headers["cache-control"]).toBe("no-store")
    }
  })

  it("a body that is neither form nor JSON, or a repeated parameter, is invalid_request", async () => {
    const minted = await mintCode(app, env, spa, user)
    const text = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body: "grant_type=authorization_code",
      headers: { "content-type": "text/plain" },
    })
    expectOAuthError(text, 400, "invalid_request")
    const bad = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body: "{not json",
      headers: { "content-type": "application/json" },
    })
    expectOAuthError(bad, 400, "invalid_request")
    expectOAuthError(
      await exchangeCode(app, env, spa, minted, { code: [minted.code, minted.code] }),
      400,
      "invalid_request",
    )
    expect((await codeRow(minted)).consumed_at).toBeNull()
  })

  it("missing code, redirect_uri or code_verifier is invalid_request; a malformed verifier too", async () => {
    const minted = await mintCode(app, env, spa, user)
    for (const drop of ["code", "redirect_uri", "code_verifier"]) {
      expectOAuthError(await exchangeCode(app, env, spa, minted, { [drop]: undefined }), 400, "invalid_request")
    }
    expectOAuthError(
      await exchangeCode(app, env, spa, minted, { code_verifier: "a".repeat(42) }),
      400,
      "invalid_request",
    )
    expectOAuthError(
      await exchangeCode(app, env, spa, minted, { code_verifier: "a".repeat(129) }),
      400,
      "invalid_request",
    )
    expectOAuthError(
      await exchangeCode(app, env, spa, minted, { code_verifier: "a".repeat(42) + "!" }),
      400,
      "invalid_request",
    )
    expect((await codeRow(minted)).consumed_at).toBeNull()
  })

  it("a wrong verifier, redirect URI, client or unknown code is invalid_grant and the code stays usable", async () => {
    const minted = await mintCode(app, env, spa, user)
    expectOAuthError(await exchangeCode(app, env, spa, minted, { code_verifier: "b".repeat(43) }), 400, "invalid_grant")
    expectOAuthError(
      await exchangeCode(app, env, spa, minted, { redirect_uri: spa.redirectUri + "/" }),
      400,
      "invalid_grant",
    )
    const other = await createClient(app, env)
    expectOAuthError(await exchangeCode(app, env, other, minted), 400, "invalid_grant")
    expectOAuthError(await exchangeCode(app, env, spa, { ...minted, code: "x".repeat(43) }), 400, "invalid_grant")
    expect((await codeRow(minted)).consumed_at).toBeNull()
    expect((await exchangeCode(app, env, spa, minted)).status).toBe(200)
  })

  it("the code lives 60 seconds (TestClock)", async () => {
    const fresh = await mintCode(app, env, spa, user)
    await app.advance("59 seconds")
    expect((await exchangeCode(app, env, spa, fresh)).status).toBe(200)
    const stale = await mintCode(app, env, spa, user)
    await app.advance("60 seconds")
    expectOAuthError(await exchangeCode(app, env, spa, stale), 400, "invalid_grant")
    expect((await codeRow(stale)).consumed_at).toBeNull()
  })

  it("a replayed code is invalid_grant and revokes the refresh family and the login session it created", async () => {
    const minted = await mintCode(app, env, spa, user)
    const first = await exchangeCode(app, env, spa, minted)
    expect(first.status).toBe(200)
    const replay = await exchangeCode(app, env, spa, minted)
    expectOAuthError(replay, 400, "invalid_grant")
    expect(await sessionRow(minted.sessionId)).toEqual({
      revoked_at: expect.any(Date),
      revoked_reason: "refresh_token_reuse",
    })
    const [family] = await queryRows<{ revoked_reason: string }>(
      app,
      "select revoked_reason from refresh_families where session_id = $1",
      [minted.sessionId],
    )
    expect(family!.revoked_reason).toBe("code_replayed")
    expectOAuthError(await refresh(app, env, spa, first.json.refresh_token), 400, "invalid_grant")
    const events = await queryRows<{ envelope: { payload: Record<string, unknown> } }>(
      app,
      "select envelope from event_outbox where type = 'session.revoked' and envelope->'payload'->>'sessionId' = $1",
      [minted.sessionId],
    )
    expect(events.map((e) => e.envelope.payload)).toEqual([
      { userId: user.id, sessionId: minted.sessionId, reason: "refresh_token_reuse" },
    ])
    const userinfo = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      headers: { authorization: `Bearer ${first.json.access_token}` },
    })
    expect(userinfo.status).toBe(401)
  })

  it("a used code presented without its verifier is a plain invalid_grant: no revocation (a leaked code cannot end the session)", async () => {
    const minted = await mintCode(app, env, spa, user)
    const first = await exchangeCode(app, env, spa, minted)
    expect(first.status).toBe(200)
    const res = await exchangeCode(app, env, spa, minted, { code_verifier: "c".repeat(43) })
    expectOAuthError(res, 400, "invalid_grant")
    expect(res.json.error_description).toMatch(/code_verifier/)
    expect(await sessionRow(minted.sessionId)).toEqual({ revoked_at: null, revoked_reason: null })
    expect((await refresh(app, env, spa, first.json.refresh_token)).status).toBe(200)
  })

  it("client authentication: missing, unknown, disabled, public with a secret, wrong or missing BFF secret is 401 invalid_client", async () => {
    const minted = await mintCode(app, env, spa, user)
    const base = {
      grant_type: "authorization_code",
      code: minted.code,
      redirect_uri: spa.redirectUri,
      code_verifier: minted.verifier,
    }
    const noClient = await postForm(app, env, "/oauth2/token", base)
    expectOAuthError(noClient, 401, "invalid_client")
    // No Basic was tried and no client is known: no Basic challenge (RFC 6749 5.2; docs/decisions/rp-libraries.md).
    expect(noClient.headers["www-authenticate"]).toBeUndefined()
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", { ...base, client_id: `cli_${"z".repeat(32)}` }),
      401,
      "invalid_client",
    )
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", { ...base, client_id: spa.id, client_secret: "s3cret" }),
      401,
      "invalid_client",
    )
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", base, { authorization: basic(spa.id, "s3cret") }),
      401,
      "invalid_client",
    )
    const disabled = await createClient(app, env, { status: "disabled" })
    const dm = await mintCode(app, env, disabled, user)
    expectOAuthError(await exchangeCode(app, env, disabled, dm), 401, "invalid_client")

    const bm = await mintCode(app, env, bff, user)
    const bbase = {
      grant_type: "authorization_code",
      code: bm.code,
      redirect_uri: bff.redirectUri,
      code_verifier: bm.verifier,
    }
    expectOAuthError(await postForm(app, env, "/oauth2/token", { ...bbase, client_id: bff.id }), 401, "invalid_client")
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", bbase, { authorization: basic(bff.id, "wrong") }),
      401,
      "invalid_client",
    )
    expectOAuthError(
      await postForm(app, env, "/oauth2/token", { ...bbase, client_id: bff.id, client_secret: bff.secret! + "x" }),
      401,
      "invalid_client",
    )
    expectOAuthError(
      await postForm(
        app,
        env,
        "/oauth2/token",
        { ...bbase, client_secret: bff.secret! },
        { authorization: basic(bff.id, bff.secret!) },
      ),
      400,
      "invalid_request",
    )
    expect((await codeRow(minted)).consumed_at).toBeNull()
    expect((await codeRow(bm)).consumed_at).toBeNull()
  })

  it("a blocked user gets 403 access_denied; a raised security version is invalid_grant; nothing is consumed", async () => {
    const blocked = await createUser(app, env)
    const minted = await mintCode(app, env, spa, blocked)
    await queryRows(app, "update users set status = 'blocked' where id = $1", [blocked.id])
    expectOAuthError(await exchangeCode(app, env, spa, minted), 403, "access_denied")
    expect((await codeRow(minted)).consumed_at).toBeNull()
    await queryRows(app, "update users set status = 'active', security_version = security_version + 1 where id = $1", [
      blocked.id,
    ])
    expectOAuthError(await exchangeCode(app, env, spa, minted), 400, "invalid_grant")
    expect((await codeRow(minted)).consumed_at).toBeNull()
  })

  it("a storage failure is 503 server_error", async () => {
    const minted = await mintCode(app, env, spa, user)
    await queryRows(app, "alter table authorization_codes rename to authorization_codes_away")
    try {
      const res = await exchangeCode(app, env, spa, minted)
      expectOAuthError(res, 503, "server_error")
    } finally {
      await queryRows(app, "alter table authorization_codes_away rename to authorization_codes")
    }
    expect((await exchangeCode(app, env, spa, minted)).status).toBe(200)
  })
})
