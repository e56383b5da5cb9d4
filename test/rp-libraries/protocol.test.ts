import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import type { TestResponse } from "../support/http.js"
import {
  challengeOf,
  claimsOf,
  createClient,
  createUser,
  exchangeCode,
  expectOAuthError,
  headerOf,
  type MintedCode,
  mintCode,
  newVerifier,
  postForm,
  queryRows,
  type TestClient,
  type TestUser,
  basic,
} from "../oidc/support.js"

// docs/decisions/rp-libraries.md, the defects a relying-party library runs into before its first login: CORS of
// the public documents, WWW-Authenticate readable by browser code, the registered
// token_endpoint_auth_method enforced, discovery true to the behaviour, and authorize
// errors that name the rule and reach the client where RFC 6749 4.1.2.1 allows.

let app: TestApp
let env: Bootstrapped
let user: TestUser
const SPA_ORIGIN = "https://spa.example.com"
const METHODS = ["none", "client_secret_basic", "client_secret_post"] as const
type Method = (typeof METHODS)[number]
const clients = {} as Record<Method, TestClient>

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  user = await createUser(app, env)
  clients.none = await createClient(app, env, { allowedOrigins: [SPA_ORIGIN] })
  clients.client_secret_basic = await createClient(app, env, { type: "web_bff", method: "client_secret_basic" })
  clients.client_secret_post = await createClient(app, env, { type: "web_bff", method: "client_secret_post" })
})
afterAll(async () => {
  await app?.close()
})

/** A code for every scope, exchanged: an ID token, an access token and a refresh token. */
const exchangeCodeAll = async () => exchangeCode(app, env, clients.none, await mintCode(app, env, clients.none, user))
const decodeJwtPayload = (jwt: string) => claimsOf(jwt)
const decodeProtectedHeaderOf = (jwt: string) => headerOf(jwt)

const DOCUMENTS = ["/.well-known/openid-configuration", "/oauth2/jwks"]

describe("discovery and JWKS are public documents any page may read (CORS *, no credentials)", () => {
  it("a GET from any Origin gets Access-Control-Allow-Origin: * and never Allow-Credentials", async () => {
    for (const path of DOCUMENTS) {
      for (const origin of [SPA_ORIGIN, "https://unregistered.example.org"]) {
        const res = await app.issuer(env.environment_id, path, { headers: { origin } })
        expect(res.status).toBe(200)
        expect(res.headers["access-control-allow-origin"]).toBe("*")
        expect(res.headers["access-control-allow-credentials"]).toBeUndefined()
        expect(res.headers["cache-control"]).toBe("public, max-age=60")
      }
    }
  })

  it("a preflight is answered 204 for GET with the requested headers; no credentials", async () => {
    for (const path of DOCUMENTS) {
      const res = await app.issuer(env.environment_id, path, {
        method: "OPTIONS",
        headers: {
          origin: "https://anywhere.example.net",
          "access-control-request-method": "GET",
          "access-control-request-headers": "x-requested-with, dpop",
        },
      })
      expect(res.status).toBe(204)
      expect(res.headers["access-control-allow-origin"]).toBe("*")
      expect(res.headers["access-control-allow-methods"]).toBe("GET, HEAD, OPTIONS")
      expect(res.headers["access-control-allow-headers"]).toBe("x-requested-with, dpop")
      expect(res.headers["access-control-allow-credentials"]).toBeUndefined()
      // A header list that is not a list of field names is not echoed.
      const odd = await app.issuer(env.environment_id, path, {
        method: "OPTIONS",
        headers: {
          origin: SPA_ORIGIN,
          "access-control-request-method": "GET",
          "access-control-request-headers": "a b",
        },
      })
      expect(odd.status).toBe(204)
      expect(odd.headers["access-control-allow-headers"]).toBeUndefined()
    }
  })
})

describe("discovery and JWKS: Access-Control-Allow-Origin: * on every answer, not only the 200", () => {
  const origin = { origin: "https://spa.example.org" }
  const expectAnyOrigin = (res: TestResponse, status: number) => {
    expect(res.status, res.text).toBe(status)
    expect(res.headers["access-control-allow-origin"]).toBe("*")
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined()
  }

  it("a 304 to If-None-Match, from the listener's memory and through the application", async () => {
    for (const path of DOCUMENTS) {
      const etag = String((await app.issuer(env.environment_id, path)).headers["etag"])
      // Without a query the listener answers from memory; a query takes the application's path.
      for (const target of [path, `${path}?via=app`]) {
        expectAnyOrigin(
          await app.issuer(env.environment_id, target, { headers: { ...origin, "if-none-match": etag } }),
          304,
        )
      }
    }
  })

  it("an unknown Environment's 404, its preflight, and a method the document does not take", async () => {
    for (const path of DOCUMENTS) {
      const missing = await app.issuer(`env_${"u".repeat(32)}`, path, { headers: origin })
      expectAnyOrigin(missing, 404)
      expect(missing.json.code).toBe("not_found")
      expectAnyOrigin(
        await app.issuer(`env_${"u".repeat(32)}`, path, {
          method: "OPTIONS",
          headers: { ...origin, "access-control-request-method": "GET" },
        }),
        404,
      )
      const post = await app.issuer(env.environment_id, path, { method: "POST", headers: origin })
      expect(post.status).toBeGreaterThanOrEqual(400)
      expect(post.headers["access-control-allow-origin"]).toBe("*")
    }
  })

  it("a 503 when the Environment cannot be read (storage failure in the lookup before any route runs)", async () => {
    // The lookup's read fails as it does when Postgres ends the session (57P01, a restart):
    // the table is swapped for a view whose every read raises that error (a stable function: a
    // one-time filter, evaluated even when no row matches).
    await queryRows(app, "alter table environments rename to environments_away")
    await queryRows(
      app,
      `create function storage_down() returns boolean stable language plpgsql as $$
      begin raise exception 'terminating connection due to administrator command' using errcode = '57P01'; end $$`,
    )
    await queryRows(app, "create view environments as select * from environments_away where storage_down()")
    try {
      for (const path of DOCUMENTS) {
        // An id no cache holds, so the lookup reaches the database.
        const res = await app.issuer(`env_${"s".repeat(31)}${path.length % 10}`, path, { headers: origin })
        expectAnyOrigin(res, 503)
        expect(res.json.code).toBe("service_unavailable")
      }
    } finally {
      await queryRows(app, "drop view environments")
      await queryRows(app, "drop function storage_down()")
      await queryRows(app, "alter table environments_away rename to environments")
    }
  })
})

describe("token, userinfo and revoke expose WWW-Authenticate to browser code", () => {
  it("an invalid_client answer, a UserInfo Bearer challenge and a revoke answer list it in Access-Control-Expose-Headers", async () => {
    const headers = { origin: SPA_ORIGIN }
    const minted = await mintCode(app, env, clients.none, user)
    const token = await postForm(
      app,
      env,
      "/oauth2/token",
      {
        grant_type: "authorization_code",
        code: minted.code,
        redirect_uri: clients.none.redirectUri,
        code_verifier: minted.verifier,
        client_id: clients.none.id,
        client_secret: "nope",
      },
      headers,
    )
    expectOAuthError(token, 401, "invalid_client")
    const info = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      headers: { ...headers, authorization: "Bearer not-a-token" },
    })
    expect(info.status).toBe(401)
    expect(info.headers["www-authenticate"]).toContain('error="invalid_token"')
    const revoke = await postForm(app, env, "/oauth2/revoke", { token: "unknown" }, headers)
    expect(revoke.status).toBe(200)
    for (const res of [token, info, revoke]) {
      expect(res.headers["access-control-allow-origin"]).toBe(SPA_ORIGIN)
      expect(String(res.headers["access-control-expose-headers"]).split(/,\s*/)).toContain("WWW-Authenticate")
    }
  })
})

/** A token request presenting the client by `presented`, with the client's own secret where one is sent. */
const tokenRequestAs = (client: TestClient, presented: Method, base: Record<string, string>) => {
  const secret = client.secret ?? "a-secret-the-public-client-does-not-have"
  if (presented === "none") return postForm(app, env, "/oauth2/token", { ...base, client_id: client.id })
  if (presented === "client_secret_post")
    return postForm(app, env, "/oauth2/token", { ...base, client_id: client.id, client_secret: secret })
  return postForm(app, env, "/oauth2/token", base, { authorization: basic(client.id, secret) })
}

const exchangeAs = (client: TestClient, presented: Method, minted: MintedCode) =>
  tokenRequestAs(client, presented, {
    grant_type: "authorization_code",
    code: minted.code,
    redirect_uri: client.redirectUri,
    code_verifier: minted.verifier,
  })

const refreshAs = (client: TestClient, presented: Method, refreshToken: string) =>
  tokenRequestAs(client, presented, { grant_type: "refresh_token", refresh_token: refreshToken })

/** The generation that may refresh (`rt_<family>.<generation>.<secret>`): it moves only on rotation. */
const familyGeneration = async (refreshToken: string) => {
  const familyId = refreshToken.slice("rt_".length).split(".")[0]!
  return (
    await queryRows<{ generation: number }>(app, "select generation from refresh_families where id = $1", [familyId])
  )[0]!.generation
}

const consumedAt = async (minted: MintedCode) =>
  (
    await queryRows<{ consumed_at: Date | null }>(
      app,
      "select consumed_at from authorization_codes where session_id = $1",
      [minted.sessionId],
    )
  )[0]!.consumed_at

describe("the registered token_endpoint_auth_method is enforced (RFC 7591 2)", () => {
  for (const registered of METHODS) {
    for (const presented of METHODS) {
      const allowed = registered === presented
      it(`registered ${registered}, presented ${presented}: ${allowed ? "200" : "401 invalid_client, code unused"}`, async () => {
        const client = clients[registered]
        const minted = await mintCode(app, env, client, user)
        const res = await exchangeAs(client, presented, minted)
        if (allowed) {
          expect(res.status, res.text).toBe(200)
          expect(await consumedAt(minted)).not.toBeNull()
          return
        }
        expectOAuthError(res, 401, "invalid_client")
        // RFC 6749 5.2: the Basic challenge answers a Basic attempt, or a client registered for Basic.
        const challenged = presented === "client_secret_basic" || registered === "client_secret_basic"
        expect(res.headers["www-authenticate"]).toBe(challenged ? 'Basic realm="token"' : undefined)
        if (registered !== "none") expect(res.json.error_description).toContain(`registered for ${registered}`)
        expect(await consumedAt(minted)).toBeNull()
        // The refused request changed nothing: the right method still redeems the code.
        expect((await exchangeAs(client, registered, minted)).status).toBe(200)
      })
    }
  }

  // The same one check guards the refresh_token grant: a refused presentation rotates nothing.
  for (const registered of METHODS) {
    for (const presented of METHODS) {
      const allowed = registered === presented
      it(`refresh_token grant, registered ${registered}, presented ${presented}: ${allowed ? "200, rotated" : "401 invalid_client, not rotated"}`, async () => {
        const client = clients[registered]
        const issued = await exchangeAs(client, registered, await mintCode(app, env, client, user))
        expect(issued.status, issued.text).toBe(200)
        const refreshToken = issued.json.refresh_token as string
        const generation = await familyGeneration(refreshToken)
        const res = await refreshAs(client, presented, refreshToken)
        if (allowed) {
          expect(res.status, res.text).toBe(200)
          expect(await familyGeneration(refreshToken)).toBe(generation + 1)
          return
        }
        expectOAuthError(res, 401, "invalid_client")
        const challenged = presented === "client_secret_basic" || registered === "client_secret_basic"
        expect(res.headers["www-authenticate"]).toBe(challenged ? 'Basic realm="token"' : undefined)
        if (registered !== "none") expect(res.json.error_description).toContain(`registered for ${registered}`)
        expect(await familyGeneration(refreshToken)).toBe(generation)
        // Not a reuse either: the registered method still rotates the same token.
        const right = await refreshAs(client, registered, refreshToken)
        expect(right.status, right.text).toBe(200)
        expect(right.json.refresh_token).not.toBe(refreshToken)
        expect(await familyGeneration(refreshToken)).toBe(generation + 1)
      })
    }
  }

  it("an unknown public client (client_id only) gets invalid_client without a WWW-Authenticate: Basic challenge", async () => {
    const verifier = newVerifier()
    const res = await postForm(app, env, "/oauth2/token", {
      grant_type: "authorization_code",
      code: "ac_unknown",
      redirect_uri: "http://localhost:5173/callback",
      code_verifier: verifier,
      client_id: `cli_${"q".repeat(32)}`,
    })
    expectOAuthError(res, 401, "invalid_client")
    expect(res.headers["www-authenticate"]).toBeUndefined()
    expect(challengeOf(verifier)).toHaveLength(43)
  })

  it("introspection follows the same rule: a Basic client posting its secret is not an allowed caller", async () => {
    const minted = await mintCode(app, env, clients.none, user)
    const tokens = (await exchangeAs(clients.none, "none", minted)).json
    const asRegistered = await postForm(
      app,
      env,
      "/oauth2/introspect",
      { token: tokens.access_token },
      { authorization: basic(clients.client_secret_basic.id, clients.client_secret_basic.secret!) },
    )
    expect(asRegistered.json.active).toBe(true)
    const asPost = await postForm(app, env, "/oauth2/introspect", {
      token: tokens.access_token,
      client_id: clients.client_secret_basic.id,
      client_secret: clients.client_secret_basic.secret!,
    })
    expect(asPost.json).toEqual({ active: false })
  })
})

describe("discovery states what libraries would otherwise assume", () => {
  it("request, request_uri and claims parameters unsupported; iss in authorization responses; auth methods per endpoint; the spec's fields unchanged", async () => {
    const res = await app.issuer(env.environment_id, "/.well-known/openid-configuration")
    expect(res.json).toMatchObject({
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      claims_parameter_supported: false,
      authorization_response_iss_parameter_supported: true,
      revocation_endpoint_auth_methods_supported: ["none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      id_token_signing_alg_values_supported: ["ES256"],
      code_challenge_methods_supported: ["S256"],
      response_types_supported: ["code"],
      scopes_supported: ["openid", "profile", "email", "offline_access"],
    })
  })
})

describe("discovery against what the server does", () => {
  const discovery = async () =>
    (await app.issuer(env.environment_id, "/.well-known/openid-configuration")).json as Record<string, unknown>
  const authorizeQuery = (extra: Record<string, string>) =>
    new URLSearchParams({
      response_type: "code",
      client_id: clients.none.id,
      redirect_uri: clients.none.redirectUri,
      scope: "openid",
      state: "s-d",
      nonce: "n-d",
      code_challenge: challengeOf(newVerifier()),
      code_challenge_method: "S256",
      ...extra,
    }).toString()

  it("claims_supported lists every claim the ID token, the access token and UserInfo carry (and the spec's list exactly)", async () => {
    const listed = (await discovery())["claims_supported"] as Array<string>
    expect([...listed].sort()).toEqual(
      [
        "iss",
        "sub",
        "aud",
        "exp",
        "iat",
        "jti",
        "sid",
        "client_id",
        "scope",
        "amr",
        "acr",
        "auth_time",
        "sv",
        "nonce",
        "name",
        "email",
        "email_verified",
        "locale",
        "updated_at",
      ].sort(),
    )
    const tokens = (await exchangeCodeAll()).json
    const info = (
      await app.issuer(env.environment_id, "/oauth2/userinfo", {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      })
    ).json
    const issued = new Set([
      ...Object.keys(decodeJwtPayload(tokens.id_token)),
      ...Object.keys(decodeJwtPayload(tokens.access_token)),
      ...Object.keys(info),
    ])
    for (const claim of issued) expect(listed, `${claim} is issued but not listed`).toContain(claim)
  })

  it("userinfo_endpoint answers GET and POST (OIDC Core 5.3.1) alike, the token in the Authorization header", async () => {
    const token = (await exchangeCodeAll()).json.access_token as string
    const get = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      headers: { authorization: `Bearer ${token}` },
    })
    const post = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    })
    expect(get.status).toBe(200)
    expect([post.status, post.headers["cache-control"], post.json]).toEqual([200, "no-store", get.json])
    const formPost = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      method: "POST",
      body: "",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
    })
    expect(formPost.json).toEqual(get.json)
    // refusals as GET's: no token, a bad token
    const none = await app.issuer(env.environment_id, "/oauth2/userinfo", { method: "POST" })
    expect([none.status, String(none.headers["www-authenticate"])]).toEqual([401, expect.stringContaining("Bearer")])
    const bad = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      method: "POST",
      headers: { authorization: "Bearer x.y.z" },
    })
    expect([bad.status, bad.json.code]).toEqual([401, "invalid_token"])
  })

  it("request_parameter_supported and request_uri_parameter_supported are false: the parameters are refused at the redirect URI", async () => {
    const doc = await discovery()
    expect([doc["request_parameter_supported"], doc["request_uri_parameter_supported"]]).toEqual([false, false])
    for (const [extra, error] of [
      [{ request: "e30.e30." }, "request_not_supported"],
      [{ request_uri: "https://rp.example/r" }, "request_uri_not_supported"],
    ] as const) {
      const res = await app.issuer(env.environment_id, `/oauth2/authorize?${authorizeQuery(extra)}`)
      const location = new URL(String(res.headers["location"]))
      expect(`${location.origin}${location.pathname}`).toBe(clients.none.redirectUri)
      expect([
        location.searchParams.get("error"),
        location.searchParams.get("state"),
        location.searchParams.get("iss"),
      ]).toEqual([error, "s-d", env.issuer])
    }
  })

  it("claims_parameter_supported is false: a claims parameter changes nothing (the scopes alone decide)", async () => {
    expect((await discovery())["claims_parameter_supported"]).toBe(false)
    const res = await app.issuer(
      env.environment_id,
      `/oauth2/authorize?${authorizeQuery({ claims: JSON.stringify({ id_token: { email: { essential: true } } }) })}`,
    )
    expect(new URL(String(res.headers["location"])).pathname).toBe("/login/continue")
    const rows = await queryRows<{ scopes: Array<string> }>(
      app,
      "select scopes from auth_transactions where client_id = $1 order by created_at desc limit 1",
      [clients.none.id],
    )
    expect(rows[0]!.scopes).toEqual(["openid"])
  })

  it("response_types, response_modes, PKCE methods and algorithms are what the endpoints accept", async () => {
    const doc = await discovery()
    expect([
      doc["response_types_supported"],
      doc["response_modes_supported"],
      doc["code_challenge_methods_supported"],
    ]).toEqual([["code"], ["query"], ["S256"]])
    const token = await app.issuer(
      env.environment_id,
      `/oauth2/authorize?${authorizeQuery({ response_type: "token" })}`,
    )
    expect(new URL(String(token.headers["location"])).searchParams.get("error")).toBe("invalid_request")
    const plain = await app.issuer(
      env.environment_id,
      `/oauth2/authorize?${authorizeQuery({ code_challenge_method: "plain" })}`,
    )
    expect(new URL(String(plain.headers["location"])).searchParams.get("error")).toBe("invalid_request")
    const tokens = (await exchangeCodeAll()).json
    expect(decodeProtectedHeaderOf(tokens.id_token).alg).toBe("ES256")
    expect(doc["id_token_signing_alg_values_supported"]).toEqual(["ES256"])
  })
})

describe("authorize errors name the rule, and reach the client only where RFC 6749 4.1.2.1 allows", () => {
  const base = (client: TestClient, overrides: Record<string, string | undefined> = {}) => {
    const q = new URLSearchParams()
    const all: Record<string, string | undefined> = {
      response_type: "code",
      client_id: client.id,
      redirect_uri: client.redirectUri,
      scope: "openid email",
      state: "st-42",
      nonce: "n-42",
      code_challenge: challengeOf(newVerifier()),
      code_challenge_method: "S256",
      ...overrides,
    }
    for (const [k, v] of Object.entries(all)) if (v !== undefined) q.set(k, v)
    return q.toString()
  }
  const authorize = (query: string) => app.issuer(env.environment_id, `/oauth2/authorize?${query}`)
  const follow = async (res: TestResponse) => {
    expect(res.status).toBe(302)
    const location = new URL(String(res.headers["location"]))
    expect(location.host).toBe(env.interaction_domain)
    expect(location.pathname).toBe("/login/error")
    return app.request(env.interaction_domain, `${location.pathname}${location.search}`)
  }
  const returnLink = (page: TestResponse) => {
    const m = /id="return-to-client" class="button" href="([^"]+)"/.exec(page.text)
    return m ? new URL(m[1]!.replace(/&amp;/g, "&")) : undefined
  }
  const transactions = async () =>
    Number((await queryRows<{ n: number }>(app, "select count(*)::int as n from auth_transactions"))[0]!.n)

  it.each([
    ["openid without a nonce", { nonce: undefined }, "invalid_request", "must send a nonce with scope openid"],
    [
      "a scope the client may not request",
      { scope: "openid offline_access" },
      "invalid_scope",
      "not in its allowed_scopes",
    ],
    [
      "a resource the client did not register",
      { resource: "https://unregistered.example.com" },
      "invalid_target",
      "allowed_resources",
    ],
  ] as const)(
    "%s: the page names the rule and links back with error, error_description, state and iss; no code, nothing created",
    async (_n, overrides, error, rule) => {
      const narrow = await createClient(app, env, { redirectUris: ["http://localhost:5173/cb?app=1"] })
      await queryRows(app, "update clients set allowed_scopes = '{openid,email}' where id = $1", [narrow.id])
      const before = await transactions()
      const page = await follow(await authorize(base(narrow, overrides)))
      expect(page.status).toBe(400)
      expect(page.headers["content-security-policy"]).toContain("default-src 'none'")
      expect(page.text).toContain(rule)
      const back = returnLink(page)!
      expect(`${back.origin}${back.pathname}`).toBe("http://localhost:5173/cb")
      expect(Object.fromEntries(back.searchParams)).toEqual({
        app: "1",
        error,
        error_description: expect.any(String),
        state: "st-42",
        iss: env.issuer,
      })
      expect(back.searchParams.has("code")).toBe(false)
      expect(await transactions()).toBe(before)
    },
  )

  it("an unknown client and an unregistered redirect URI get the page and no way back", async () => {
    const cases = [
      [
        base(clients.none, { client_id: `cli_${"u".repeat(32)}`, nonce: undefined }),
        "client_id is not a registered client",
      ],
      [base(clients.none, { redirect_uri: "https://attacker.example.com/cb", nonce: undefined }), "byte for byte"],
      // even a request that breaks syntax rules too: the redirect URI is checked first
      [
        base(clients.none, {
          redirect_uri: "https://attacker.example.com/cb",
          code_challenge_method: "plain",
          state: undefined,
        }),
        "byte for byte",
      ],
    ] as const
    for (const [query, rule] of cases) {
      const res = await authorize(query)
      expect(new URL(String(res.headers["location"])).searchParams.has("redirect_uri")).toBe(false)
      const page = await follow(res)
      expect(page.text).toContain(rule)
      expect(returnLink(page)).toBeUndefined()
      expect(page.text).not.toContain("attacker.example.com")
    }
  })

  it("a disabled client gets the page, before any other rule, and a way back with unauthorized_client", async () => {
    const disabled = await createClient(app, env, { status: "disabled" })
    const before = await transactions()
    const page = await follow(await authorize(base(disabled, { nonce: undefined, code_challenge_method: "plain" })))
    expect(page.text).toContain("This client is disabled")
    const back = returnLink(page)!
    expect(`${back.origin}${back.pathname}`).toBe(disabled.redirectUri)
    expect(Object.fromEntries(back.searchParams)).toEqual({
      error: "unauthorized_client",
      error_description: "the client is disabled",
      state: "st-42",
      iss: env.issuer,
    })
    // without state in the request, none in the way back
    const noState = returnLink(await follow(await authorize(base(disabled, { state: undefined }))))!
    expect(noState.searchParams.has("state")).toBe(false)
    expect(noState.searchParams.get("error")).toBe("unauthorized_client")
    expect(await transactions()).toBe(before)
    // enabled since: the page offers no stale way back
    const res = await authorize(base(disabled))
    await queryRows(app, "update clients set status = 'active' where id = $1", [disabled.id])
    const location = new URL(String(res.headers["location"]))
    expect(
      returnLink(await app.request(env.interaction_domain, `${location.pathname}${location.search}`)),
    ).toBeUndefined()
  })

  it("the error page trusts nothing in its URL: an unregistered redirect URI, or a client disabled since, gets no link", async () => {
    const client = await createClient(app, env)
    const forged = new URLSearchParams({
      error: "nonce_required",
      client_id: client.id,
      redirect_uri: "https://attacker.example.com/cb",
      state: "s",
    })
    const page = await app.request(env.interaction_domain, `/login/error?${forged.toString()}`)
    expect(page.text).toContain("must send a nonce")
    expect(returnLink(page)).toBeUndefined()
    // A failure that is never returnable stays without a link even with a registered target.
    const mismatch = new URLSearchParams({
      error: "redirect_uri_mismatch",
      client_id: client.id,
      redirect_uri: client.redirectUri,
      state: "s",
    })
    expect(returnLink(await app.request(env.interaction_domain, `/login/error?${mismatch.toString()}`))).toBeUndefined()

    const res = await authorize(base(client, { nonce: undefined }))
    const location = new URL(String(res.headers["location"]))
    await queryRows(app, "update clients set status = 'disabled' where id = $1", [client.id])
    const later = await app.request(env.interaction_domain, `${location.pathname}${location.search}`)
    expect(later.text).toContain("must send a nonce")
    expect(returnLink(later)).toBeUndefined()
  })
})
