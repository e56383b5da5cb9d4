import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  basic, claimsOf, createClient, createUser, exchangeCode, expectOAuthError, headerOf, mintCode, postForm, queryRows,
  type TestClient, type TestUser, verifyJwt,
} from "./support.js"

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let bff: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env, { allowedResources: ["https://api.example.com", "https://files.example.com"] })
  bff = await createClient(app, env, { type: "web_bff", redirectUris: ["https://app.example.com/cb"] })
  user = await createUser(app, env, { name: "Ada Lovelace", locale: "en-GB" })
})
afterAll(async () => { await app?.close() })

describe("POST /oauth2/token grant_type=authorization_code", () => {
  it("exchanges a code for an access token, an ID token and a refresh token (public client, form body)", async () => {
    const minted = await mintCode(app, env, spa, user)
    const res = await exchangeCode(app, env, spa, minted)
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(Object.keys(res.json).sort()).toEqual(["access_token", "expires_in", "id_token", "refresh_token", "scope", "token_type"])
    expect(res.json.token_type).toBe("Bearer")
    expect(res.json.expires_in).toBe(300)
    expect(res.json.scope).toBe("openid profile email offline_access")
    expect(res.json.refresh_token).toMatch(/^rt_fam_[a-z2-7]{32}\.1\.[A-Za-z0-9_-]{43}$/)

    const at = await verifyJwt(app, env, res.json.access_token, "at+jwt")
    expect(at.header).toEqual({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) })
    const nowS = Math.floor(app.now() / 1000)
    expect(Object.keys(at.payload).sort()).toEqual(
      ["acr", "amr", "aud", "auth_time", "client_id", "exp", "iat", "iss", "jti", "scope", "sid", "sub", "sv"])
    expect(at.payload).toMatchObject({
      iss: env.issuer, sub: user.id, aud: env.issuer, iat: nowS, exp: nowS + 300, sid: minted.sessionId, client_id: spa.id,
      scope: "openid profile email offline_access", amr: ["email_otp"], acr: "urn:example-auth:loa:basic", auth_time: nowS, sv: 1,
    })

    const id = await verifyJwt(app, env, res.json.id_token, "JWT")
    expect(id.header.typ).toBe("JWT")
    expect(id.payload).toMatchObject({
      iss: env.issuer, sub: user.id, aud: spa.id, exp: nowS + 300, iat: nowS, sid: minted.sessionId, auth_time: nowS,
      amr: ["email_otp"], acr: "urn:example-auth:loa:basic", nonce: minted.nonce, name: "Ada Lovelace", locale: "en-GB",
      email: user.email, email_verified: true, updated_at: expect.any(Number),
    })
    expect(id.payload).not.toHaveProperty("azp")
    expect(id.payload).not.toHaveProperty("jti")
  })

  it("accepts a JSON body", async () => {
    const minted = await mintCode(app, env, spa, user)
    const res = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body: { grant_type: "authorization_code", code: minted.code, redirect_uri: spa.redirectUri, code_verifier: minted.verifier, client_id: spa.id },
    })
    expect(res.status).toBe(200)
    expect(typeof res.json.access_token).toBe("string")
  })
})
