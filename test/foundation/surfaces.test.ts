import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createRemoteJWKSet, jwtVerify, SignJWT } from "jose"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Keys } from "../../src/platform/keys/service.js"
import { Tenancy } from "../../src/tenancy/service.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"

let app: TestApp
let a: Bootstrapped
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  a = await app.bootstrap()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const interactionHost = (env: Bootstrapped) => env.interaction_domain

const expectProblem = (
  res: { status: number; headers: Record<string, unknown>; json: any },
  status: number,
  code: string,
) => {
  expect(res.status).toBe(status)
  expect(res.headers["content-type"]).toBe("application/problem+json")
  expect(res.json).toMatchObject({ status, code, type: `https://authservice.dev/problems/${code}` })
  expect(typeof res.json.title).toBe("string")
  expect(res.json.request_id).toMatch(/^req_[a-z2-7]{32}$/)
  expect(res.headers["x-request-id"]).toBe(res.json.request_id)
}

const setStatus = (environmentId: string, status: string) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`update environments set status = ${status} where id = ${environmentId}`
      const tenancy = yield* Tenancy
      tenancy.forgetEnvironment(environmentId)
    }),
  )

describe("host dispatch", () => {
  it("the same path reaches three different surfaces on the three hosts", async () => {
    const path = `/v1/workspaces/${a.workspace_id}`
    const management = await app.request(app.config.managementHost, path)
    const issuer = await app.request(app.config.canonicalIssuerHost, `/e/${a.environment_id}${path}`)
    const interaction = await app.request(interactionHost(a), path)
    expectProblem(management, 401, "unauthorized")
    expectProblem(issuer, 404, "not_found")
    expectProblem(interaction, 404, "not_found")
    const discovery = "/.well-known/openid-configuration"
    expect((await app.request(app.config.canonicalIssuerHost, `/e/${a.environment_id}${discovery}`)).status).toBe(200)
    expectProblem(await app.request(app.config.managementHost, discovery), 404, "not_found")
    expectProblem(await app.request(interactionHost(a), discovery), 404, "not_found")
  })

  it("an Interaction Domain is accepted on any port", async () => {
    const host = interactionHost(a).replace(/:\d+$/, ":443")
    expectProblem(await app.request(host, "/nope"), 404, "not_found")
    expect((await app.request(host, "/healthz")).status).toBe(200)
  })

  it("an unknown host, an unknown Environment and a malformed issuer path are 404", async () => {
    expectProblem(await app.request("evil.example.com", "/healthz".replace("healthz", "v1/x")), 404, "not_found")
    expectProblem(await app.request("localhost", "/"), 404, "not_found")
    expectProblem(
      await app.request(app.config.canonicalIssuerHost, `/e/env_${"a".repeat(32)}/.well-known/openid-configuration`),
      404,
      "not_found",
    )
    expectProblem(
      await app.request(`env-${"a".repeat(32)}.login.localhost:${app.port}`, "/v1/config"),
      404,
      "not_found",
    )
    expectProblem(await app.request(app.config.canonicalIssuerHost, "/e/"), 404, "not_found")
  })

  it("the root-level discovery path is not used", async () => {
    expectProblem(
      await app.request(app.config.canonicalIssuerHost, "/.well-known/openid-configuration"),
      404,
      "not_found",
    )
  })

  it("health endpoints answer on every host, unknown ones included (a container or load balancer probe names any)", async () => {
    for (const host of [
      app.config.managementHost,
      app.config.canonicalIssuerHost,
      interactionHost(a),
      "localhost",
      "127.0.0.1",
      "evil.example.com",
    ]) {
      const healthz = await app.request(host, "/healthz")
      expect([healthz.status, healthz.json]).toEqual([200, { status: "ok" }])
      const readyz = await app.request(host, "/readyz")
      expect([readyz.status, readyz.json]).toEqual([200, { status: "ready" }])
      expect(readyz.headers["x-request-id"]).toMatch(/^req_[a-z2-7]{32}$/)
    }
  })

  it("a suspended Environment keeps serving discovery and JWKS but refuses everything else", async () => {
    const env = await app.bootstrap()
    await setStatus(env.environment_id, "suspended")
    expect((await app.issuer(env.environment_id, "/.well-known/openid-configuration")).status).toBe(200)
    expect((await app.issuer(env.environment_id, "/oauth2/jwks")).status).toBe(200)
    // A person's browser reads authorize: the same refusal as a page (test/login/authorize-failure-pages.test.ts).
    const authorize = await app.issuer(env.environment_id, "/oauth2/authorize")
    expect([authorize.status, authorize.headers["content-type"]]).toEqual([403, "text/html; charset=utf-8"])
    expect(authorize.text).toContain('data-error="environment_suspended"')
    expectProblem(await app.request(interactionHost(env), "/v1/config"), 403, "environment_suspended")
    await setStatus(env.environment_id, "active")
    expect((await app.issuer(env.environment_id, "/.well-known/openid-configuration")).status).toBe(200)
  })

  it("a deleted Environment is 404 everywhere", async () => {
    const env = await app.bootstrap()
    await setStatus(env.environment_id, "deleted")
    expectProblem(await app.issuer(env.environment_id, "/.well-known/openid-configuration"), 404, "not_found")
    expectProblem(await app.issuer(env.environment_id, "/oauth2/jwks"), 404, "not_found")
    expectProblem(await app.request(interactionHost(env), "/v1/config"), 404, "not_found")
  })
})

describe("problem details and request ids", () => {
  it("every response, success or error, carries a generated X-Request-Id; an inbound one is never echoed", async () => {
    const ok = await app.issuer(a.environment_id, "/.well-known/openid-configuration", {
      headers: { "x-request-id": "caller-chosen" },
    })
    expect(ok.headers["x-request-id"]).toMatch(/^req_[a-z2-7]{32}$/)
    const notFound = await app.request(app.config.managementHost, "/v1/nothing-here", {
      headers: { "x-request-id": "caller-chosen" },
    })
    expectProblem(notFound, 404, "not_found")
    expect(notFound.json.request_id).not.toBe("caller-chosen")
  })

  it("malformed JSON is 400 invalid_request_body and creates nothing", async () => {
    const res = await app.management("/v1/projects", {
      method: "POST",
      body: '{"workspace_id": "x", "name": ',
      key: a.api_key,
    })
    expectProblem(res, 400, "invalid_request_body")
    const list = await app.management(`/v1/projects?workspace_id=${a.workspace_id}`, { key: a.api_key })
    expect(list.json.data).toHaveLength(1)
  })

  it("a body over 1 MiB is 413 payload_too_large, declared or streamed", async () => {
    const big = JSON.stringify({ workspace_id: a.workspace_id, name: "x".repeat(1024 * 1024 + 10) })
    expectProblem(
      await app.management("/v1/projects", { method: "POST", body: big, key: a.api_key }),
      413,
      "payload_too_large",
    )
    const streamed = await new Promise<{ status: number; json: any; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port: app.port,
            path: "/v1/projects",
            method: "POST",
            headers: {
              host: app.config.managementHost,
              authorization: `Bearer ${a.api_key}`,
              "content-type": "application/json",
              "transfer-encoding": "chunked",
            },
          },
          (res) => {
            let text = ""
            res.on("data", (c: Buffer) => {
              text += c
            })
            res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text), headers: res.headers }))
          },
        )
        req.on("error", reject)
        for (let i = 0; i < 20; i++) req.write("x".repeat(64 * 1024))
        req.end()
      },
    )
    expectProblem(streamed, 413, "payload_too_large")
  })

  it("a wrong method is 405 with Allow", async () => {
    const res = await app.issuer(a.environment_id, "/oauth2/jwks", { method: "DELETE" })
    expectProblem(res, 405, "method_not_allowed")
    expect(res.headers["allow"]).toContain("GET")
  })
})

describe("discovery and JWKS per Environment", () => {
  it("discovery has every field and capability of the spec with issuer exactly the Environment's", async () => {
    const res = await app.issuer(a.environment_id, "/.well-known/openid-configuration")
    const issuer = `http://localhost:${app.port}/e/${a.environment_id}`
    expect(a.issuer).toBe(issuer)
    expect(res.json).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth2/authorize`,
      token_endpoint: `${issuer}/oauth2/token`,
      userinfo_endpoint: `${issuer}/oauth2/userinfo`,
      jwks_uri: `${issuer}/oauth2/jwks`,
      revocation_endpoint: `${issuer}/oauth2/revoke`,
      introspection_endpoint: `${issuer}/oauth2/introspect`,
      end_session_endpoint: `${issuer}/oauth2/logout`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      scopes_supported: ["openid", "profile", "email", "offline_access"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
    })
    expect([...res.json.claims_supported].sort()).toEqual(
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
    expect(res.headers["cache-control"]).toBe("public, max-age=60")
  })

  it("JWKS has exactly the spec's key fields, is cacheable for 60 s, and differs per Environment", async () => {
    const ja = await app.issuer(a.environment_id, "/oauth2/jwks")
    const jb = await app.issuer(b.environment_id, "/oauth2/jwks")
    expect(ja.status).toBe(200)
    expect(ja.headers["cache-control"]).toBe("public, max-age=60")
    expect(ja.headers["content-type"]).toMatch(/^application\/json/)
    expect(ja.json.keys).toHaveLength(1)
    const key = ja.json.keys[0]
    expect(Object.keys(key).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"])
    expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" })
    expect(jb.json.keys[0].kid).not.toBe(key.kid)
    expect(jb.json.keys[0].x).not.toBe(key.x)
  })

  it("a JWT signed by Environment A's key verifies with A's remote JWKS and not with B's", async () => {
    const signingKey = await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        return yield* keys.signingKey(a.environment_id)
      }),
    )
    const jwt = await new SignJWT({ probe: true })
      .setProtectedHeader({ alg: "ES256", kid: signingKey.kid, typ: "JWT" })
      .setIssuer(a.issuer)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(signingKey.key)
    const jwksA = createRemoteJWKSet(new URL(`${a.issuer}/oauth2/jwks`))
    const jwksB = createRemoteJWKSet(new URL(`${b.issuer}/oauth2/jwks`))
    const verified = await jwtVerify(jwt, jwksA, { issuer: a.issuer, algorithms: ["ES256"] })
    expect(verified.payload["probe"]).toBe(true)
    await expect(jwtVerify(jwt, jwksB, { algorithms: ["ES256"] })).rejects.toThrow()
  })

  it("after rotation the previous key stays published until its tokens expire, and on the server for 30 days", async () => {
    const env = await app.bootstrap()
    const before = (await app.issuer(env.environment_id, "/oauth2/jwks")).json.keys[0].kid
    await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(keys.rotate(env.environment_id))
      }),
    )
    const during = (await app.issuer(env.environment_id, "/oauth2/jwks")).json.keys.map((k: { kid: string }) => k.kid)
    expect(during).toHaveLength(2)
    expect(during).toContain(before)
    await app.advance("361 seconds")
    const after = (await app.issuer(env.environment_id, "/oauth2/jwks")).json.keys.map((k: { kid: string }) => k.kid)
    expect(after).toHaveLength(1)
    expect(after).not.toContain(before)
    const stillKept = await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        return yield* keys.verificationKey(env.environment_id, before)
      }),
    )
    expect(stillKept._tag).toBe("Some")
    await app.advance("30 days")
    const gone = await app.run(
      Effect.gen(function* () {
        const keys = yield* Keys
        return yield* keys.verificationKey(env.environment_id, before)
      }),
    )
    expect(gone._tag).toBe("None")
  })
})
