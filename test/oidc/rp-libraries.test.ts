import * as oauth from "oauth4webapi"
import * as oidc from "openid-client"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, mintCode, type TestClient, type TestUser } from "./support.js"

// Real, unmodified relying-party libraries against the running server over a socket. The
// only concession is each library's documented insecure-HTTP option (the test issuer is
// http://localhost:<port>/e/<env>). Codes come from issueAuthorizationCode, with the PKCE
// challenge, nonce, scope and redirect URI of the authorization URL the library built.

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let bff: TestClient
let bffPost: TestClient
let user: TestUser
const SCOPE = "openid profile email offline_access"

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env, { redirectUris: ["http://localhost:5173/callback"] })
  bff = await createClient(app, env, {
    type: "web_bff",
    redirectUris: ["http://127.0.0.1:4000/auth/callback"],
    postLogoutRedirectUris: ["http://127.0.0.1:4000/"],
  })
  bffPost = await createClient(app, env, {
    type: "web_bff",
    method: "client_secret_post",
    redirectUris: ["http://127.0.0.1:4000/auth/callback"],
  })
  user = await createUser(app, env, { name: "Katherine Johnson", locale: "en-US" })
})
afterAll(async () => {
  await app?.close()
})

/** What a login (the front half) does with an authorization request: a code bound to its parameters. */
const completeLogin = async (authorizationUrl: URL, client: TestClient, verifier: string) => {
  const q = authorizationUrl.searchParams
  expect(q.get("code_challenge_method")).toBe("S256")
  expect(q.get("client_id")).toBe(client.id)
  const minted = await mintCode(app, env, client, user, {
    verifier,
    nonce: q.get("nonce"),
    scopes: q.get("scope")!.split(" "),
    redirectUri: q.get("redirect_uri")!,
  })
  // The authorization response as Hosted Login sends it: code, state and iss (RFC 9207).
  return new URL(
    `${q.get("redirect_uri")}?code=${encodeURIComponent(minted.code)}&state=${encodeURIComponent(q.get("state")!)}&iss=${encodeURIComponent(env.issuer)}`,
  )
}

describe("openid-client (v6)", () => {
  it("discovery -> code exchange -> ID token validation -> userinfo -> refresh -> revoke (public client)", async () => {
    const config = await oidc.discovery(new URL(env.issuer), spa.id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    })
    expect(config.serverMetadata().issuer).toBe(env.issuer)
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: spa.redirectUri,
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    const callback = await completeLogin(url, spa, verifier)
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    })
    const claims = tokens.claims()!
    expect(claims).toMatchObject({
      iss: env.issuer,
      sub: user.id,
      aud: spa.id,
      nonce,
      amr: ["email_otp"],
      email: expect.any(String),
    })
    expect(tokens.expires_in).toBe(300)

    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)
    expect(info).toMatchObject({ sub: user.id, name: "Katherine Johnson", email_verified: true })

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!)
    expect(refreshed.claims()).toMatchObject({ sub: user.id, amr: ["refresh_token"], auth_time: claims.auth_time })
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)

    await oidc.tokenRevocation(config, refreshed.refresh_token!)
    const refused = await oidc.refreshTokenGrant(config, refreshed.refresh_token!).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(refused).toBeInstanceOf(oidc.ResponseBodyError)
    expect((refused as oidc.ResponseBodyError).error).toBe("invalid_grant")
  })

  it("web_bff with client_secret_basic: code exchange, introspection, end-session URL", async () => {
    const config = await oidc.discovery(new URL(env.issuer), bff.id, undefined, oidc.ClientSecretBasic(bff.secret!), {
      execute: [oidc.allowInsecureRequests],
    })
    const verifier = oidc.randomPKCECodeVerifier()
    const state = oidc.randomState()
    const nonce = oidc.randomNonce()
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: bff.redirectUri,
      scope: "openid email",
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    const tokens = await oidc.authorizationCodeGrant(config, await completeLogin(url, bff, verifier), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    })
    expect(tokens.refresh_token).toBeUndefined()
    const introspection = await oidc.tokenIntrospection(config, tokens.access_token)
    expect(introspection).toMatchObject({
      active: true,
      sub: user.id,
      client_id: bff.id,
      scope: "openid email",
      token_type: "Bearer",
    })

    const logout = oidc.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: "http://127.0.0.1:4000/",
      state: "bye",
    })
    const res = await fetch(logout, { redirect: "manual" })
    expect(res.status).toBe(302)
    expect(res.headers.get("location")).toBe("http://127.0.0.1:4000/?state=bye")
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(false)
  })
})

describe("oauth4webapi", () => {
  const insecure = { [oauth.allowInsecureRequests]: true } as const

  it("discovery -> code exchange -> ID token validation -> RFC 9068 access token -> userinfo -> refresh -> revoke", async () => {
    const issuer = new URL(env.issuer)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
    )
    const client: oauth.Client = { client_id: spa.id }
    const clientAuth = oauth.None()
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const nonce = oauth.generateRandomNonce()
    const url = new URL(as.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: spa.id,
      redirect_uri: spa.redirectUri,
      response_type: "code",
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v)

    const params = oauth.validateAuthResponse(as, client, await completeLogin(url, spa, verifier), state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuth,
      params,
      spa.redirectUri,
      verifier,
      insecure,
    )
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
      expectedNonce: nonce,
      requireIdToken: true,
    })
    const claims = oauth.getValidatedIdTokenClaims(result)!
    expect(claims).toMatchObject({ iss: env.issuer, sub: user.id, aud: spa.id, nonce })
    expect(result.token_type).toBe("bearer")

    // The access token as a resource server sees it (RFC 9068 validation incl. signature via the JWKS)
    const access = await oauth.validateJwtAccessToken(
      as,
      new Request("http://rs.example/", {
        headers: { authorization: `Bearer ${result.access_token}` },
      }),
      env.issuer,
      { ...insecure, signingAlgorithms: ["ES256"] },
    )
    expect(access).toMatchObject({ sub: user.id, client_id: spa.id, scope: SCOPE })

    const info = await oauth.processUserInfoResponse(
      as,
      client,
      claims.sub,
      await oauth.userInfoRequest(as, client, result.access_token, insecure),
    )
    expect(info).toMatchObject({ sub: user.id, email_verified: true })

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, result.refresh_token!, insecure),
    )
    expect(oauth.getValidatedIdTokenClaims(refreshed)).toMatchObject({ sub: user.id, amr: ["refresh_token"] })

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure),
    )
    const refused = await oauth
      .processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(refused).toBeInstanceOf(oauth.ResponseBodyError)
    expect((refused as oauth.ResponseBodyError).error).toBe("invalid_grant")
  })

  it("introspection as a web_bff client (client_secret_post)", async () => {
    const issuer = new URL(env.issuer)
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...insecure }),
    )
    const client: oauth.Client = { client_id: bffPost.id }
    const verifier = oauth.generateRandomCodeVerifier()
    const url = new URL(as.authorization_endpoint!)
    for (const [k, v] of Object.entries({
      client_id: bffPost.id,
      redirect_uri: bffPost.redirectUri,
      response_type: "code",
      scope: "openid",
      state: "s1",
      nonce: "n1",
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v)
    const params = oauth.validateAuthResponse(as, client, await completeLogin(url, bffPost, verifier), "s1")
    const result = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretPost(bffPost.secret!),
        params,
        bffPost.redirectUri,
        verifier,
        insecure,
      ),
      { expectedNonce: "n1" },
    )
    const introspection = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(
        as,
        client,
        oauth.ClientSecretPost(bffPost.secret!),
        result.access_token,
        insecure,
      ),
    )
    expect(introspection).toMatchObject({ active: true, sub: user.id, client_id: bffPost.id })
  })
})
