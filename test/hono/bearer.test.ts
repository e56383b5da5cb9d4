import { createHmac } from "node:crypto"
import { type ServerType, serve } from "@hono/node-server"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Hono } from "hono"
import { decodeJwt, decodeProtectedHeader } from "jose"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { bearerTokenMiddleware, type BearerTokenOptions, type BearerVariables } from "../../packages/hono/src/index.js"
import { signEs256 } from "../../src/oidc/tokens/jws.js"
import { freePort } from "../../src/platform/free-port.js"
import { Keys } from "../../src/platform/keys/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, type TestClient, type TestUser } from "../oidc/support.js"
import { dashboardUser } from "../management/support/callers.js"

// bearerTokenMiddleware against the real issuer's discovery document and JWKS over a socket:
// real access tokens from the token endpoint, and tokens signed with the Environment's real
// key (through the server's own Keys service) where a refusal needs a header or claim the
// server never issues (typ, iss, exp).

const RESOURCE = "https://api.example.com"
const JWKS_PATH = "oauth2/jwks"
const CHALLENGE = 'Bearer realm="api", error="invalid_token"'

let app: TestApp
let b: Bootstrapped
let client: TestClient
let user: TestUser

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await createClient(app, b, { allowedResources: [RESOURCE] })
  user = await createUser(app, b)
}, 60_000)
afterAll(async () => {
  await app?.close()
})
afterEach(() => {
  vi.useRealTimers()
})

/** A real access token from the token endpoint; `resources` become audiences. */
const accessToken = async (resources: ReadonlyArray<string> = [RESOURCE]) => {
  const minted = await mintCode(app, b, client, user, { resources, scopes: ["openid", "email"] })
  const res = await exchangeCode(app, b, client, minted)
  expect(res.status, res.text).toBe(200)
  return res.json as { access_token: string; id_token: string }
}

const signingKey = () => app.run(Keys.use((k) => k.signingKey(b.environment_id)))
const rotateKey = () =>
  app.run(
    Effect.gen(function* () {
      const keys = yield* Keys
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(keys.rotate(b.environment_id))
    }),
  )

/** Re-signs a real token's claims with the Environment's real key, changing header or claims. */
const forge = async (token: string, header: Record<string, unknown> = {}, claims: Record<string, unknown> = {}) => {
  const key = await signingKey()
  return signEs256(
    { alg: "ES256", typ: "at+jwt", kid: key.kid, ...header } as never,
    { ...decodeJwt(token), ...claims },
    key.key,
  )
}

interface Api {
  readonly url: string
  readonly fetches: Array<string>
  readonly close: () => Promise<void>
}

/** An API protected by bearerTokenMiddleware (audience RESOURCE unless told), served over a socket; counts the middleware's fetches. */
const startApi = async (
  options: Partial<BearerTokenOptions> & { failing?: (url: string) => boolean } = {},
): Promise<Api> => {
  const fetches: Array<string> = []
  const { failing, ...rest } = options
  const hono = new Hono<{ Variables: BearerVariables }>()
  hono.use(
    "/api/*",
    bearerTokenMiddleware({
      issuer: b.issuer,
      audience: RESOURCE,
      now: () => app.now(),
      fetch: async (input, init) => {
        const url = input instanceof Request ? input.url : String(input)
        fetches.push(new URL(url).pathname.split("/").slice(3).join("/"))
        if (failing?.(url)) throw new TypeError("fetch failed (test: unreachable)")
        return fetch(input, init)
      },
      ...rest,
    }),
  )
  hono.get("/api/whoami", (c) =>
    c.json({
      sub: c.get("accessTokenSubject"),
      scope: c.get("accessTokenScope"),
      claims: c.get("accessTokenClaims"),
      act: c.get("accessTokenAct") ?? null,
      impersonator: c.get("accessTokenImpersonator") ?? null,
    }),
  )
  const port = await freePort()
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: hono.fetch, port, hostname: "127.0.0.1" }, () => resolve(s))
  })
  return {
    url: `http://127.0.0.1:${port}/api/whoami`,
    fetches,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

const call = (api: Api, authorization?: string) =>
  fetch(api.url, authorization === undefined ? {} : { headers: { authorization } })

const expectRefused = async (res: Response, why: string) => {
  expect(res.status, why).toBe(401)
  expect(res.headers.get("www-authenticate"), why).toBe(CHALLENGE)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(await res.json()).toMatchObject({
    status: 401,
    code: "invalid_token",
    type: "https://authservice.dev/problems/invalid_token",
  })
}

describe("bearerTokenMiddleware", () => {
  it("accepts the issuer's access token and sets accessTokenClaims, accessTokenSubject and accessTokenScope", async () => {
    const api = await startApi({ audience: RESOURCE })
    try {
      const { access_token } = await accessToken()
      const res = await call(api, `Bearer ${access_token}`)
      expect(res.status).toBe(200)
      const body = (await res.json()) as any
      expect(body.sub).toBe(user.id)
      expect(body.scope).toEqual(["openid", "email"])
      expect(body.claims).toMatchObject({ iss: b.issuer, sub: user.id, client_id: client.id })
      expect(body.claims.aud).toContain(RESOURCE)
      // the scheme name is case-insensitive (RFC 6750 2.1 via RFC 7235 2.1)
      expect((await call(api, `bearer ${access_token}`)).status).toBe(200)
      // discovery then JWKS once; the second call used the cache
      expect(api.fetches).toEqual([".well-known/openid-configuration", JWKS_PATH])
    } finally {
      await api.close()
    }
  })

  it('missing or malformed Authorization: 401 with WWW-Authenticate Bearer realm="api", error="invalid_token"', async () => {
    const api = await startApi()
    try {
      const { access_token } = await accessToken()
      await expectRefused(await call(api), "no header")
      for (const header of [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer ",
        `Bearer  ${access_token}`,
        `Bearer ${access_token} extra`,
        `Token ${access_token}`,
        "Bearer not-a-jwt",
      ]) {
        await expectRefused(await call(api, header), header)
      }
      // a custom realm is quoted into the challenge
      const custom = await startApi({ realm: "billing" })
      try {
        const res = await call(custom)
        expect(res.headers.get("www-authenticate")).toBe('Bearer realm="billing", error="invalid_token"')
      } finally {
        await custom.close()
      }
    } finally {
      await api.close()
    }
  })

  it("ES256 is fixed: alg none, HS256 keyed with the public key, and a re-labelled ES384 header are refused", async () => {
    const api = await startApi()
    try {
      const { access_token } = await accessToken()
      const [h, p] = access_token.split(".") as [string, string, string]
      const header = decodeProtectedHeader(access_token)
      const enc = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url")
      const none = `${enc({ ...header, alg: "none" })}.${p}.`
      const jwks = (await app.issuer(b.environment_id, "/oauth2/jwks")).text
      const hsInput = `${enc({ ...header, alg: "HS256" })}.${p}`
      const hs256 = `${hsInput}.${createHmac("sha256", jwks).update(hsInput).digest("base64url")}`
      const es384 = `${enc({ ...header, alg: "ES384" })}.${p}.${access_token.split(".")[2]}`
      for (const [name, token] of [
        ["none", none],
        ["HS256", hs256],
        ["ES384", es384],
      ] as const) {
        await expectRefused(await call(api, `Bearer ${token}`), name)
      }
      expect(h).toBe(access_token.split(".")[0])
      expect((await call(api, `Bearer ${access_token}`)).status).toBe(200)
    } finally {
      await api.close()
    }
  })

  it("typ must be at+jwt: the issuer's own ID token and a re-signed typ JWT are refused", async () => {
    const api = await startApi()
    try {
      const { access_token, id_token } = await accessToken()
      expect(decodeProtectedHeader(id_token).typ).toBe("JWT")
      await expectRefused(await call(api, `Bearer ${id_token}`), "ID token")
      await expectRefused(await call(api, `Bearer ${await forge(access_token, { typ: "JWT" })}`), "typ JWT")
      await expectRefused(await call(api, `Bearer ${await forge(access_token, { typ: undefined })}`), "no typ")
      // the forging itself is sound: the same claims with typ at+jwt pass
      expect((await call(api, `Bearer ${await forge(access_token)}`)).status).toBe(200)
    } finally {
      await api.close()
    }
  })

  it("aud must contain the configured audience; iss must be the issuer; a wrong signature is refused", async () => {
    const api = await startApi({ audience: RESOURCE })
    const open = await startApi({ audience: false })
    try {
      const other = await accessToken([])
      expect(decodeJwt(other.access_token).aud).not.toContain(RESOURCE)
      await expectRefused(await call(api, `Bearer ${other.access_token}`), "wrong aud")
      expect((await call(open, `Bearer ${other.access_token}`)).status).toBe(200) // audience: false
      const { access_token } = await accessToken()
      await expectRefused(
        await call(api, `Bearer ${await forge(access_token, {}, { iss: `${b.issuer}x` })}`),
        "wrong iss",
      )
      const [h, p, s] = access_token.split(".") as [string, string, string]
      const flipped = `${h}.${p}.${s.startsWith("A") ? "B" : "A"}${s.slice(1)}`
      await expectRefused(await call(api, `Bearer ${flipped}`), "bad signature")
      const altered = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(access_token), sub: "usr_someoneelse" })).toString("base64url")}.${s}`
      await expectRefused(await call(api, `Bearer ${altered}`), "altered claims")
    } finally {
      await api.close()
      await open.close()
    }
  })

  it("an expired access token is refused (300 s lifetime on the server's clock)", async () => {
    const api = await startApi()
    try {
      const { access_token } = await accessToken()
      expect((await call(api, `Bearer ${access_token}`)).status).toBe(200)
      await app.advance("301 seconds")
      await expectRefused(await call(api, `Bearer ${access_token}`), "expired")
      await expectRefused(await call(api, `Bearer ${await forge(access_token, {}, { exp: undefined })}`), "no exp")
    } finally {
      await api.close()
    }
  })

  it("unknown kid: the JWKS is refetched (key rotation), at most once per cooldown", async () => {
    const api = await startApi()
    try {
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() })
      const first = await accessToken()
      expect((await call(api, `Bearer ${first.access_token}`)).status).toBe(200)
      const jwksFetches = () => api.fetches.filter((f) => f.includes("jwks")).length
      expect(jwksFetches()).toBe(1)

      await rotateKey()
      const rotated = await accessToken()
      expect(decodeProtectedHeader(rotated.access_token).kid).not.toBe(decodeProtectedHeader(first.access_token).kid)
      // within 30 s of the last fetch: no refetch, so the new kid is not known yet
      await expectRefused(await call(api, `Bearer ${rotated.access_token}`), "cooling down")
      expect(jwksFetches()).toBe(1)
      vi.setSystemTime(Date.now() + 31_000)
      expect((await call(api, `Bearer ${rotated.access_token}`)).status).toBe(200)
      expect(jwksFetches()).toBe(2)
      // the old key's tokens still verify (the issuer keeps a retired key published)
      expect((await call(api, `Bearer ${first.access_token}`)).status).toBe(200)

      // a kid nobody has: one refetch per cooldown, however many such tokens arrive
      const unknown = await forge(rotated.access_token, { kid: "not-a-real-kid" })
      vi.setSystemTime(Date.now() + 31_000)
      for (let i = 0; i < 5; i++) await expectRefused(await call(api, `Bearer ${unknown}`), "unknown kid")
      expect(jwksFetches()).toBe(3)
      vi.setSystemTime(Date.now() + 31_000)
      await expectRefused(await call(api, `Bearer ${unknown}`), "unknown kid after cooldown")
      expect(jwksFetches()).toBe(4)
    } finally {
      vi.useRealTimers()
      await api.close()
    }
  })

  it("JWKS or discovery unreachable: 503 problem JSON (not 401); recovers when the issuer is back", async () => {
    const { access_token } = await accessToken()
    let down = true
    const jwksDown = await startApi({ failing: (url) => down && url.includes("jwks") })
    const discoveryDown = await startApi({ failing: (url) => down && url.includes("openid-configuration") })
    try {
      for (const api of [jwksDown, discoveryDown]) {
        const res = await call(api, `Bearer ${access_token}`)
        expect(res.status).toBe(503)
        expect(res.headers.get("content-type")).toBe("application/problem+json")
        expect(res.headers.get("www-authenticate")).toBeNull()
        expect(await res.json()).toMatchObject({ status: 503, code: "temporarily_unavailable" })
      }
      down = false
      for (const api of [jwksDown, discoveryDown]) expect((await call(api, `Bearer ${access_token}`)).status).toBe(200)
    } finally {
      await jwksDown.close()
      await discoveryDown.close()
    }
    // an issuer whose host does not answer at all
    const closedPort = await freePort()
    const hono = new Hono()
    hono.use(
      "*",
      bearerTokenMiddleware({ issuer: `http://127.0.0.1:${closedPort}/e/${b.environment_id}`, audience: RESOURCE }),
    )
    hono.get("/", (c) => c.text("ok"))
    const res = await hono.request("/", { headers: { authorization: `Bearer ${access_token}` } })
    expect(res.status).toBe(503)
  })

  it("issuer unreachable: a malformed token, a wrong alg or typ is still 401, decided before any fetch; a well-formed token is 503", async () => {
    const { access_token, id_token } = await accessToken()
    const [, p, sig] = access_token.split(".") as [string, string, string]
    const header = decodeProtectedHeader(access_token)
    const enc = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url")
    const api = await startApi({ failing: () => true })
    try {
      const refused = [
        ["three parts that do not decode", "a.b.c"],
        ["not a JWT", "not-a-jwt"],
        ["a payload that is not JSON", `${enc(header)}.${Buffer.from("nope").toString("base64url")}.${sig}`],
        ["alg none", `${enc({ ...header, alg: "none" })}.${p}.`],
        ["alg ES384", `${enc({ ...header, alg: "ES384" })}.${p}.${sig}`],
        ["alg RS256", `${enc({ ...header, alg: "RS256" })}.${p}.${sig}`],
        ["typ JWT (an ID token)", id_token],
        ["no typ", await forge(access_token, { typ: undefined })],
      ] as const
      for (const [why, token] of refused) await expectRefused(await call(api, `Bearer ${token}`), why)
      expect(api.fetches).toEqual([])
      // RFC 7515 4.1.9: the media type form of the same typ is the same type, so it waits for the keys.
      for (const token of [access_token, await forge(access_token, { typ: "application/at+jwt" })]) {
        const res = await call(api, `Bearer ${token}`)
        expect(res.status).toBe(503)
        expect(res.headers.get("www-authenticate")).toBeNull()
        expect(await res.json()).toMatchObject({ status: 503, code: "temporarily_unavailable" })
      }
      expect(api.fetches).toEqual([".well-known/openid-configuration", ".well-known/openid-configuration"])
    } finally {
      await api.close()
    }
  })

  it("refuses an issuer that is not https outside localhost", () => {
    expect(() => bearerTokenMiddleware({ issuer: "http://auth.example.com/e/env_x", audience: RESOURCE })).toThrow(
      /https/,
    )
  })

  it("audience is required: without it (or with an empty one) the middleware is not built; audience: false is the explicit opt-out", () => {
    const issuer = "https://auth.example.com/e/env_x"
    for (const audience of [undefined, "", [], [""], null, 0, true] as const) {
      const build = () => bearerTokenMiddleware({ issuer, audience } as unknown as BearerTokenOptions)
      expect(build, JSON.stringify(audience)).toThrow(TypeError)
      expect(build, JSON.stringify(audience)).toThrow(/set `audience` to this API's identifier.*or `audience: false`/)
    }
    expect(() => bearerTokenMiddleware({ issuer } as unknown as BearerTokenOptions)).toThrow(/audience/)
    expect(typeof bearerTokenMiddleware({ issuer, audience: RESOURCE })).toBe("function")
    expect(typeof bearerTokenMiddleware({ issuer, audience: [RESOURCE, "https://other.example.com"] })).toBe("function")
    expect(typeof bearerTokenMiddleware({ issuer, audience: false })).toBe("function")
  })
})

describe("bearerTokenMiddleware and impersonation tokens (RFC 8693 act)", () => {
  /** A real impersonation token: an Owner's Dashboard session starts one through the Management API. */
  const impersonationToken = async () => {
    const settings = await app.management(`/v1/environments/${b.environment_id}/settings`, {
      method: "PATCH",
      body: { impersonation_enabled: true },
      key: b.api_key,
    })
    expect(settings.status, settings.text).toBe(200)
    const owner = await dashboardUser(app, { workspaceId: b.workspace_id, role: "owner" })
    const res = await app.request(app.config.managementHost, `/v1/impersonation?environment_id=${b.environment_id}`, {
      method: "POST",
      headers: owner.headers,
      body: { user_id: user.id, reason: "Support ticket 1234: cannot see invoices", duration_minutes: 5 },
    })
    expect(res.status, res.text).toBe(201)
    return { token: res.json.access_token as string, ownerId: owner.id }
  }

  it("an impersonation token is marked: accessTokenAct and accessTokenImpersonator name the Workspace member; the user's own token leaves them unset", async () => {
    const { token, ownerId } = await impersonationToken()
    expect(decodeJwt(token)).toMatchObject({ sub: user.id, aud: b.issuer, act: { sub: ownerId } })
    // the issuer is its audience: an API that accepts tokens minted without `resource`
    const api = await startApi({ audience: b.issuer })
    try {
      const res = await call(api, `Bearer ${token}`)
      expect(res.status, await res.clone().text()).toBe(200)
      const body = (await res.json()) as any
      expect(body.sub).toBe(user.id)
      expect(body.act).toEqual({ sub: ownerId, actor_type: "workspace_member" })
      expect(body.impersonator).toBe(ownerId)
      const own = (await (await call(api, `Bearer ${(await accessToken([])).access_token}`)).json()) as any
      expect([own.sub, own.act, own.impersonator]).toEqual([user.id, null, null])
    } finally {
      await api.close()
    }
  })

  it("an impersonation token does not open an API whose audience is its own identifier; a malformed act is refused", async () => {
    const { token } = await impersonationToken()
    const api = await startApi({ audience: RESOURCE })
    const open = await startApi({ audience: false })
    try {
      await expectRefused(await call(api, `Bearer ${token}`), "aud is the issuer, not this API")
      expect((await call(open, `Bearer ${token}`)).status).toBe(200)
      for (const act of ["someone", { actor_type: "workspace_member" }, { sub: 42 }, [{ sub: "x" }], null]) {
        await expectRefused(await call(open, `Bearer ${await forge(token, {}, { act })}`), JSON.stringify(act))
      }
    } finally {
      await api.close()
      await open.close()
    }
  })
})
