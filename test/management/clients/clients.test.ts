import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { clientSecretMatches } from "../../../src/management/clients/secret.js"
import { type Bootstrapped, type TestApp, startApp } from "../../support/app.js"
import { makeEnvironment, makeKey } from "../support/callers.js"
import { countRows, query } from "../support/db.js"
import { expectProblem } from "../support/problem.js"
import { subjectAuditActions } from "../support/records.js"

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

const CLIENT_ID = /^cli_[a-z2-7]{32}$/
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex")

const create = (
  body: Record<string, unknown>,
  opts: { key?: string; headers?: Record<string, string>; env?: string } = {},
) =>
  app.management("/v1/clients", {
    method: "POST",
    body: { environment_id: opts.env ?? a.environment_id, ...body },
    ...(opts.key ? { key: opts.key } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
  })

const spa = (extra: Record<string, unknown> = {}) => ({
  client_type: "web_spa",
  name: "SPA",
  token_endpoint_auth_method: "none",
  ...extra,
})
const bff = (extra: Record<string, unknown> = {}) => ({
  client_type: "web_bff",
  name: "BFF",
  token_endpoint_auth_method: "client_secret_basic",
  ...extra,
})
const native = (extra: Record<string, unknown> = {}) => ({
  client_type: "react_native",
  name: "App",
  token_endpoint_auth_method: "none",
  ...extra,
})

const patch = (id: string, body: unknown, headers: Record<string, string> = {}) =>
  app.management(`/v1/clients/${id}`, { method: "PATCH", body, headers })

describe("POST /v1/clients", () => {
  it("creates a web_bff client and returns its 256-bit secret once; only the SHA-256 is stored", async () => {
    const res = await create(bff({ redirect_uris: ["https://app.example.com/callback"] }))
    expect(res.status).toBe(201)
    expect(res.json.id).toMatch(CLIENT_ID)
    expect(res.json.client_id).toBe(res.json.id)
    expect(res.headers["etag"]).toBe(`"${res.json.id}.1"`)
    expect(res.headers["location"]).toBe(`/v1/clients/${res.json.id}`)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.json).toMatchObject({
      environment_id: a.environment_id,
      client_type: "web_bff",
      name: "BFF",
      token_endpoint_auth_method: "client_secret_basic",
      redirect_uris: ["https://app.example.com/callback"],
      post_logout_redirect_uris: [],
      allowed_origins: [],
      allowed_scopes: ["openid", "profile", "email", "offline_access"],
      allowed_resources: [],
      require_pkce: true,
      status: "active",
      mobile_app: null,
    })
    const secret: string = res.json.client_secret
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(secret, "base64url")).toHaveLength(32)
    const [row] = await query<{ secret_hash: string }>(app, "select secret_hash from clients where id = $1", [
      res.json.id,
    ])
    expect(row!.secret_hash).toBe(sha256(secret))
    expect(clientSecretMatches(row!, secret)).toBe(true)
    expect(clientSecretMatches(row!, `${secret}x`)).toBe(false)
    expect(JSON.stringify(await query(app, "select * from clients where id = $1", [res.json.id]))).not.toContain(secret)

    const got = await app.management(`/v1/clients/${res.json.id}`)
    expect(got.status).toBe(200)
    expect(got.json).not.toHaveProperty("client_secret")
    expect(got.text).not.toContain(secret)
    const list = await app.management(`/v1/clients?environment_id=${a.environment_id}`)
    expect(list.text).not.toContain(secret)
    expect(list.json.data.every((c: object) => !("client_secret" in c))).toBe(true)
  })

  it("creates public clients (web_spa, react_native) without a secret", async () => {
    for (const body of [spa(), native()]) {
      const res = await create(body)
      expect(res.status).toBe(201)
      expect(res.json).not.toHaveProperty("client_secret")
      const [row] = await query<{ secret_hash: string | null }>(app, "select secret_hash from clients where id = $1", [
        res.json.id,
      ])
      expect(row!.secret_hash).toBeNull()
    }
    expect((await create(bff({ token_endpoint_auth_method: "client_secret_post" }))).json.client_secret).toMatch(
      /^[\w-]{43}$/,
    )
  })

  it("client_type decides token_endpoint_auth_method: web_spa/react_native none only, web_bff a secret method only", async () => {
    const before = await countRows(app, "clients", a.environment_id)
    for (const body of [
      spa({ token_endpoint_auth_method: "client_secret_basic" }),
      spa({ token_endpoint_auth_method: "client_secret_post" }),
      native({ token_endpoint_auth_method: "client_secret_basic" }),
      native({ token_endpoint_auth_method: "client_secret_post" }),
      bff({ token_endpoint_auth_method: "none" }),
    ]) {
      const res = await create(body)
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toContain("token_endpoint_auth_method")
    }
    expect(await countRows(app, "clients", a.environment_id)).toBe(before)
  })

  it("refuses a wrongly shaped body with invalid_request_body, a broken rule with invalid_request, and creates nothing", async () => {
    const before = await countRows(app, "clients", a.environment_id)
    for (const body of [
      { client_type: "web_spa", name: "x" }, // token_endpoint_auth_method missing
      spa({ client_type: "mobile" }),
      spa({ token_endpoint_auth_method: "private_key_jwt" }),
      spa({ redirect_uris: "https://a.example.com/cb" }),
      spa({ allowed_scopes: ["openid", "admin"] }),
      spa({ require_pkce: "yes" }),
      spa({ status: "deleted" }),
      spa({ unknown_field: 1 }),
      spa({ client_secret: "mine" }),
      spa({ name: 7 }),
    ])
      expectProblem(await create(body), 400, "invalid_request_body")
    expectProblem(
      await app.management("/v1/clients", { method: "POST", body: "{not json" }),
      400,
      "invalid_request_body",
    )
    // Well-typed values that break a rule (docs/architecture.md): an empty name, more than 20 resources.
    for (const body of [
      spa({ name: "" }),
      spa({ name: "x".repeat(201) }),
      bff({ allowed_resources: Array.from({ length: 21 }, (_, i) => `https://api${i}.example.com`) }),
    ])
      expectProblem(await create(body), 400, "invalid_request")
    // A wrong type anywhere makes the body wrongly shaped, even next to a broken rule.
    expectProblem(await create(spa({ name: "", require_pkce: "yes" })), 400, "invalid_request_body")
    expect(await countRows(app, "clients", a.environment_id)).toBe(before)
  })

  it("needs an environment_id the caller can reach, and a matching workspace_id when one is sent", async () => {
    expectProblem(await app.management("/v1/clients", { method: "POST", body: spa() }), 400, "invalid_request_body")
    expectProblem(await create(spa(), { env: b.environment_id }), 404, "not_found")
    expectProblem(await create(spa(), { env: "env_doesnotexist" }), 404, "not_found")
    expectProblem(await create(spa({ workspace_id: b.workspace_id })), 400, "invalid_request")
    expect((await create(spa({ workspace_id: a.workspace_id }))).status).toBe(201)
  })
})

describe("redirect URI rules (spec: Authentication rule 10)", () => {
  const webGood = [
    "https://app.example.com/callback",
    "https://app.example.com:8443/cb?x=1",
    "http://localhost:3000/callback",
    "http://127.0.0.1/cb",
    "http://localhost/cb",
    "https://localhost/cb",
  ]
  const webBad = [
    "https://app.example.com/cb#frag",
    "https://app.example.com/cb#",
    "https://*.example.com/cb",
    "https://app.example.com/*",
    "http://app.example.com/cb",
    "http://[::1]:3000/cb",
    "http://localhost.example.com/cb",
    "http://127.0.0.2/cb",
    "/callback",
    "app.example.com/cb",
    "com.example.app:/callback",
    "ftp://app.example.com/cb",
    "https://user:pw@app.example.com/cb",
    "https://app.example.com/c b",
    "",
    "javascript:alert(1)",
  ]
  const nativeGood = [
    "com.example.app:/callback",
    "com.example.app://oauth/callback",
    "https://app.example.com/native-callback",
  ]
  const nativeBad = [
    "myapp://callback",
    "exp://127.0.0.1:19000",
    "http://localhost:3000/cb",
    "com.example.app:/cb#x",
    "com.example.*:/cb",
    "com.example.app:",
    "https://app.example.com/cb#x",
  ]

  it("accepts exact https (or loopback http) URIs for web clients and stores them unchanged", async () => {
    for (const type of [spa, bff]) {
      const res = await create(type({ redirect_uris: webGood, post_logout_redirect_uris: webGood }))
      expect(res.status).toBe(201)
      expect(res.json.redirect_uris).toEqual(webGood)
      expect(res.json.post_logout_redirect_uris).toEqual(webGood)
    }
    // No normalisation: a URI is kept byte for byte (upper-case host, explicit default port, trailing ?).
    const exact = ["https://App.Example.com:443/cb?", "HTTP://LOCALHOST:3000/cb"]
    expect((await create(spa({ redirect_uris: exact }))).json.redirect_uris).toEqual(exact)
  })

  it("refuses fragments, wildcards, non-https hosts, [::1] and non-URIs for web clients: 400 invalid_redirect_uri", async () => {
    const before = await countRows(app, "clients", a.environment_id)
    for (const uri of webBad) {
      for (const type of [spa, bff]) {
        const res = await create(type({ redirect_uris: [uri] }))
        expectProblem(res, 400, "invalid_redirect_uri")
        expect(res.json.detail).toMatch(/^redirect_uris\[0\] /)
        expectProblem(
          await create(type({ post_logout_redirect_uris: ["https://ok.example.com/", uri] })),
          400,
          "invalid_redirect_uri",
        )
      }
    }
    expect((await create(spa({ redirect_uris: ["http://[::1]:3000/cb"] }))).json.detail).toContain("[::1]")
    expect(
      (await create(spa({ redirect_uris: ["https://a.example.com/cb", "https://a.example.com/cb"] }))).json.code,
    ).toBe("invalid_redirect_uri")
    expect(await countRows(app, "clients", a.environment_id)).toBe(before)
  })

  it("react_native: https Universal/App Links or reverse-DNS custom schemes only", async () => {
    const res = await create(native({ redirect_uris: nativeGood, post_logout_redirect_uris: nativeGood }))
    expect(res.status).toBe(201)
    expect(res.json.redirect_uris).toEqual(nativeGood)
    for (const uri of nativeBad) {
      expectProblem(await create(native({ redirect_uris: [uri] })), 400, "invalid_redirect_uri")
      expectProblem(await create(native({ post_logout_redirect_uris: [uri] })), 400, "invalid_redirect_uri")
    }
  })

  it("PATCH applies the same rules and changes nothing on refusal", async () => {
    const created = (await create(spa({ redirect_uris: ["https://app.example.com/cb"] }))).json
    for (const uri of webBad) {
      expectProblem(await patch(created.id, { redirect_uris: [uri] }), 400, "invalid_redirect_uri")
      expectProblem(await patch(created.id, { post_logout_redirect_uris: [uri] }), 400, "invalid_redirect_uri")
    }
    const after = await app.management(`/v1/clients/${created.id}`)
    expect(after.json.redirect_uris).toEqual(["https://app.example.com/cb"])
    expect(after.headers["etag"]).toBe(`"${created.id}.1"`)
  })
})

describe("other client fields", () => {
  it("allowed_origins are exact origins: scheme://host[:port], no path, no wildcard", async () => {
    const good = [
      "https://app.example.com",
      "https://app.example.com:8443",
      "http://localhost:5173",
      "http://127.0.0.1:8080",
    ]
    expect((await create(spa({ allowed_origins: good }))).json.allowed_origins).toEqual(good)
    for (const bad of [
      "https://app.example.com/",
      "https://app.example.com/path",
      "https://*.example.com",
      "*",
      "https://App.Example.com",
      "https://app.example.com:443",
      "http://app.example.com",
      "ftp://app.example.com",
      "app.example.com",
      "https://app.example.com?x=1",
      "https://app.example.com#x",
      "null",
    ]) {
      const res = await create(spa({ allowed_origins: [bad] }))
      expectProblem(res, 400, "invalid_request")
      expect(res.json.detail).toMatch(/^allowed_origins\[0\] /)
    }
  })

  it("allowed_scopes is a subset of openid/profile/email/offline_access", async () => {
    expect((await create(spa({ allowed_scopes: ["openid", "email"] }))).json.allowed_scopes).toEqual([
      "openid",
      "email",
    ])
    expect((await create(spa({ allowed_scopes: [] }))).json.allowed_scopes).toEqual([])
    expectProblem(await create(spa({ allowed_scopes: ["openid", "address"] })), 400, "invalid_request_body")
    expectProblem(await create(spa({ allowed_scopes: ["openid", "openid"] })), 400, "invalid_request")
  })

  it("allowed_resources: at most 20 HTTPS URLs", async () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `https://api${i}.example.com/v1`)
    expect((await create(bff({ allowed_resources: twenty }))).json.allowed_resources).toEqual(twenty)
    expectProblem(
      await create(bff({ allowed_resources: [...twenty, "https://api20.example.com"] })),
      400,
      "invalid_request",
    )
    for (const bad of [
      "http://api.example.com",
      "https://api.example.com/#x",
      "https://*.example.com",
      "urn:example:api",
      "api.example.com",
    ]) {
      expectProblem(await create(bff({ allowed_resources: [bad] })), 400, "invalid_request")
    }
  })

  it("require_pkce is stored and returned (S256 stays required regardless)", async () => {
    const res = await create(spa({ require_pkce: false }))
    expect(res.json.require_pkce).toBe(false)
    expect((await app.management(`/v1/clients/${res.json.id}`)).json.require_pkce).toBe(false)
    expect((await patch(res.json.id, { require_pkce: true })).json.require_pkce).toBe(true)
  })

  it("status is active or disabled", async () => {
    const res = await create(spa({ status: "disabled" }))
    expect(res.json.status).toBe("disabled")
    expect((await patch(res.json.id, { status: "active" })).json.status).toBe("active")
    expectProblem(await patch(res.json.id, { status: "suspended" }), 400, "invalid_request_body")
  })

  const fingerprint = Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, "0").toUpperCase()).join(
    ":",
  )
  const mobileApp = {
    app_scheme: "com.example.app",
    ios_bundle_id: "com.example.App",
    ios_team_id: "ABCDE12345",
    android_package_name: "com.example.app",
    android_sha256_fingerprints: [fingerprint],
    universal_link_host: "app.example.com",
  }

  it("mobile_app: only for react_native, validated formats, null clears it", async () => {
    const res = await create(native({ mobile_app: mobileApp }))
    expect(res.status).toBe(201)
    expect(res.json.mobile_app).toEqual(mobileApp)
    expect(
      (await create(native({ mobile_app: { ios_bundle_id: "com.example.App", ios_team_id: "ABCDE12345" } }))).json
        .mobile_app,
    ).toEqual({
      app_scheme: null,
      ios_bundle_id: "com.example.App",
      ios_team_id: "ABCDE12345",
      android_package_name: null,
      android_sha256_fingerprints: [],
      universal_link_host: null,
    })
    for (const type of [spa, bff]) {
      const refused = await create(type({ mobile_app: mobileApp }))
      expectProblem(refused, 400, "invalid_request")
      expect(refused.json.detail).toContain("react_native")
    }
    expect((await create(spa({ mobile_app: null }))).json.mobile_app).toBeNull()
    // Formats are rules (400 invalid_request); an unknown field or a wrong type is a wrong shape.
    const before = await countRows(app, "clients", a.environment_id)
    for (const bad of [
      { android_sha256_fingerprints: [fingerprint.slice(0, -3)] },
      { android_sha256_fingerprints: [fingerprint.replaceAll(":", "")] },
      { android_sha256_fingerprints: [`${fingerprint.slice(0, -2)}ZZ`] },
      { ios_team_id: "abc" },
      { ios_bundle_id: "nodots" },
      { android_package_name: "1com.example" },
      { app_scheme: "myapp" },
      { universal_link_host: "https://app.example.com" },
    ])
      expectProblem(await create(native({ mobile_app: bad })), 400, "invalid_request")
    for (const bad of [
      { unknown: "x" },
      "com.example.app",
      { ios_team_id: 1234567890 },
      { android_sha256_fingerprints: fingerprint },
    ]) {
      expectProblem(await create(native({ mobile_app: bad })), 400, "invalid_request_body")
    }
    expectProblem(await create(native({ mobile_app: {} })), 400, "invalid_request")
    expect(await countRows(app, "clients", a.environment_id)).toBe(before)

    const id = res.json.id
    const replaced = await patch(id, { mobile_app: { android_package_name: "com.example.other" } })
    expect(replaced.json.mobile_app).toMatchObject({ android_package_name: "com.example.other", app_scheme: null })
    const cleared = await patch(id, { mobile_app: null })
    expect(cleared.status).toBe(200)
    expect(cleared.json.mobile_app).toBeNull()
    const [row] = await query<{ mobile_app: unknown }>(app, "select mobile_app from clients where id = $1", [id])
    expect(row!.mobile_app).toBeNull()
  })
})

describe("GET, PATCH, DELETE /v1/clients/{id}", () => {
  it("PATCH changes any settable field, bumps the ETag and honours If-Match (412, nothing changed)", async () => {
    const created = (await create(bff())).json
    const fields = {
      name: "Renamed",
      redirect_uris: ["https://bff.example.com/cb"],
      post_logout_redirect_uris: ["https://bff.example.com/"],
      allowed_origins: ["https://bff.example.com"],
      allowed_scopes: ["openid"],
      allowed_resources: ["https://api.example.com"],
      token_endpoint_auth_method: "client_secret_post",
      require_pkce: false,
      status: "disabled",
    }
    const stale = `"${created.id}.1"`
    const res = await patch(created.id, fields, { "if-match": stale })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject(fields)
    expect(res.json).not.toHaveProperty("client_secret")
    expect(res.headers["etag"]).toBe(`"${created.id}.2"`)
    expectProblem(await patch(created.id, { name: "Again" }, { "if-match": stale }), 412, "precondition_failed")
    expectProblem(
      await app.management(`/v1/clients/${created.id}`, { method: "DELETE", headers: { "if-match": stale } }),
      412,
      "precondition_failed",
    )
    const now = await app.management(`/v1/clients/${created.id}`)
    expect(now.json.name).toBe("Renamed")
    expect(now.headers["etag"]).toBe(`"${created.id}.2"`)
    expect((await patch(created.id, { name: "Third" }, { "if-match": now.headers["etag"] as string })).json.name).toBe(
      "Third",
    )
    // client_secret_basic -> client_secret_post keeps the secret (client_type never changes).
    const [row] = await query<{ secret_hash: string }>(app, "select secret_hash from clients where id = $1", [
      created.id,
    ])
    expect(row!.secret_hash).toBe(sha256(created.client_secret))
  })

  it("PATCH refuses an auth method the client_type does not allow, unknown fields and an empty body", async () => {
    const s = (await create(spa())).json
    const f = (await create(bff())).json
    expectProblem(await patch(s.id, { token_endpoint_auth_method: "client_secret_basic" }), 400, "invalid_request")
    expectProblem(await patch(f.id, { token_endpoint_auth_method: "none" }), 400, "invalid_request")
    expectProblem(await patch(s.id, { client_type: "web_bff" }), 400, "invalid_request_body")
    expectProblem(await patch(s.id, { environment_id: b.environment_id }), 400, "invalid_request_body")
    expectProblem(await patch(s.id, {}), 400, "invalid_request")
    expectProblem(await patch(s.id, { mobile_app: { app_scheme: "com.example.app" } }), 400, "invalid_request")
    expect((await app.management(`/v1/clients/${s.id}`)).headers["etag"]).toBe(`"${s.id}.1"`)
  })

  it("concurrent PATCHes with the same If-Match: exactly one wins", async () => {
    const created = (await create(spa())).json
    const etag = `"${created.id}.1"`
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => patch(created.id, { name: `n${i}` }, { "if-match": etag })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412, 412])
    expect((await app.management(`/v1/clients/${created.id}`)).headers["etag"]).toBe(`"${created.id}.2"`)
  })

  it("DELETE is logical: the client is gone from get, list, patch and rotation but the row remains", async () => {
    const created = (await create(bff())).json
    const res = await app.management(`/v1/clients/${created.id}`, {
      method: "DELETE",
      headers: { "if-match": `"${created.id}.1"` },
    })
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ id: created.id, deleted: true })
    expectProblem(await app.management(`/v1/clients/${created.id}`), 404, "not_found")
    expectProblem(await patch(created.id, { name: "x" }), 404, "not_found")
    expectProblem(await app.management(`/v1/clients/${created.id}`, { method: "DELETE" }), 404, "not_found")
    expectProblem(await app.management(`/v1/clients/${created.id}/rotate-secret`, { method: "POST" }), 404, "not_found")
    const ids = await listAll(`/v1/clients?environment_id=${a.environment_id}`)
    expect(ids).not.toContain(created.id)
    const [row] = await query<{ deleted_at: Date | null }>(app, "select deleted_at from clients where id = $1", [
      created.id,
    ])
    expect(row!.deleted_at).not.toBeNull()
  })

  it("records an audit event for every write, with no secret in it", async () => {
    // The test clock stands still unless advanced: advance it so the records sort by time.
    const created = (await create(bff())).json
    await app.advance("1 second")
    await patch(created.id, { name: "Audited" })
    await app.advance("1 second")
    const rotated = await app.management(`/v1/clients/${created.id}/rotate-secret`, { method: "POST" })
    await app.advance("1 second")
    await app.management(`/v1/clients/${created.id}`, { method: "DELETE" })
    expect(await subjectAuditActions(app, created.id)).toEqual([
      "client.created",
      "client.updated",
      "client.secret_rotated",
      "client.deleted",
    ])
    const rows = await query<{
      actor_type: string
      actor_id: string
      environment_id: string
      workspace_id: string
      details: unknown
    }>(
      app,
      "select actor_type, actor_id, environment_id, workspace_id, details from audit_events where subject_id = $1 order by created_at",
      [created.id],
    )
    expect(
      rows.every(
        (r) => r.actor_type === "api_key" && r.actor_id.startsWith("mky_") && r.environment_id === a.environment_id,
      ),
    ).toBe(true)
    expect(JSON.stringify(rows)).not.toContain(created.client_secret)
    expect(JSON.stringify(rows)).not.toContain(rotated.json.client_secret)
    expect((rows[1]!.details as { changed_fields: Array<string> }).changed_fields).toEqual(["name"])
  })
})

describe("POST /v1/clients/{id}/rotate-secret", () => {
  it("returns a new secret once; the old one stops matching; get never shows it", async () => {
    const created = (await create(bff())).json
    const res = await app.management(`/v1/clients/${created.id}/rotate-secret`, { method: "POST" })
    expect(res.status).toBe(200)
    expect(res.headers["cache-control"]).toBe("no-store")
    expect(res.json.id).toBe(created.id)
    expect(res.json.client_secret).toMatch(/^[\w-]{43}$/)
    expect(res.json.client_secret).not.toBe(created.client_secret)
    expect(res.headers["etag"]).toBe(`"${created.id}.2"`)
    const [row] = await query<{ secret_hash: string }>(app, "select secret_hash from clients where id = $1", [
      created.id,
    ])
    expect(clientSecretMatches(row!, res.json.client_secret)).toBe(true)
    expect(clientSecretMatches(row!, created.client_secret)).toBe(false)
    const got = await app.management(`/v1/clients/${created.id}`)
    expect(got.text).not.toContain(res.json.client_secret)
  })

  it("needs clients:rotate_secret (clients:write is not enough) and a secret-method client", async () => {
    const created = (await create(bff())).json
    const writer = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["clients:write", "clients:read"] })
    expectProblem(
      await app.management(`/v1/clients/${created.id}/rotate-secret`, { method: "POST", key: writer }),
      403,
      "insufficient_scope",
    )
    const rotator = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["clients:rotate_secret"] })
    expect(
      (await app.management(`/v1/clients/${created.id}/rotate-secret`, { method: "POST", key: rotator })).status,
    ).toBe(200)
    const pub = (await create(spa())).json
    expectProblem(
      await app.management(`/v1/clients/${pub.id}/rotate-secret`, { method: "POST" }),
      400,
      "invalid_request",
    )
    const [row] = await query<{ secret_hash: string | null; version: number }>(
      app,
      "select secret_hash, version from clients where id = $1",
      [pub.id],
    )
    expect(row).toEqual({ secret_hash: null, version: 1 })
  })

  it("honours If-Match", async () => {
    const created = (await create(bff())).json
    expectProblem(
      await app.management(`/v1/clients/${created.id}/rotate-secret`, {
        method: "POST",
        headers: { "if-match": `"${created.id}.9"` },
      }),
      412,
      "precondition_failed",
    )
    const [row] = await query<{ secret_hash: string }>(app, "select secret_hash from clients where id = $1", [
      created.id,
    ])
    expect(row!.secret_hash).toBe(sha256(created.client_secret))
  })
})

const listAll = async (path: string, key?: string) => {
  const ids: Array<string> = []
  let cursor: string | null = null
  do {
    const res = await app.management(`${path}&limit=100${cursor ? `&cursor=${cursor}` : ""}`, key ? { key } : {})
    expect(res.status).toBe(200)
    ids.push(...res.json.data.map((c: { id: string }) => c.id))
    cursor = res.json.next_cursor
  } while (cursor)
  return ids
}

describe("GET /v1/clients", () => {
  it("pages by keyset with limit/cursor and filters by client_type", async () => {
    const env = await makeEnvironment(app, a.workspace_id, a.project_id)
    const made = []
    for (const body of [spa(), bff(), native(), spa(), bff()])
      made.push((await create(body, { env })).json.id as string)
    const first = await app.management(`/v1/clients?environment_id=${env}&limit=2`)
    expect(first.json.data).toHaveLength(2)
    expect(first.json.next_cursor).toEqual(expect.any(String))
    const second = await app.management(`/v1/clients?environment_id=${env}&limit=2&cursor=${first.json.next_cursor}`)
    const third = await app.management(`/v1/clients?environment_id=${env}&limit=2&cursor=${second.json.next_cursor}`)
    expect(third.json.next_cursor).toBeNull()
    const ids = [...first.json.data, ...second.json.data, ...third.json.data].map((c: { id: string }) => c.id)
    expect(ids).toEqual([...made].sort())
    const spas = await app.management(`/v1/clients?environment_id=${env}&client_type=web_spa`)
    expect(spas.json.data.map((c: { id: string }) => c.id).sort()).toEqual([made[0], made[3]].sort())
    expect(spas.json.next_cursor).toBeNull()
    expectProblem(await app.management(`/v1/clients?environment_id=${env}&client_type=native`), 400, "invalid_request")
    expectProblem(await app.management(`/v1/clients?environment_id=${env}&limit=101`), 400, "invalid_request")
    expectProblem(await app.management("/v1/clients"), 400, "invalid_request")
    expectProblem(
      await app.management(`/v1/clients?environment_id=${env}&workspace_id=${b.workspace_id}`),
      400,
      "invalid_request",
    )
  })
})

describe("scopes and tenant isolation", () => {
  it("clients:write does not imply clients:read, nor the reverse", async () => {
    const writer = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["clients:write"] })
    const reader = await makeKey(app, { workspaceId: a.workspace_id, scopes: ["clients:read"] })
    const created = await create(spa(), { key: writer })
    expect(created.status).toBe(201)
    expectProblem(
      await app.management(`/v1/clients?environment_id=${a.environment_id}`, { key: writer }),
      403,
      "insufficient_scope",
    )
    expectProblem(await app.management(`/v1/clients/${created.json.id}`, { key: writer }), 403, "insufficient_scope")
    expectProblem(await create(spa(), { key: reader }), 403, "insufficient_scope")
    expectProblem(
      await app.management(`/v1/clients/${created.json.id}`, { method: "PATCH", body: { name: "x" }, key: reader }),
      403,
      "insufficient_scope",
    )
    expectProblem(
      await app.management(`/v1/clients/${created.json.id}`, { method: "DELETE", key: reader }),
      403,
      "insufficient_scope",
    )
    expect((await app.management(`/v1/clients/${created.json.id}`, { key: reader })).status).toBe(200)
  })

  it("a key of Workspace B never sees or changes Workspace A's clients (404), and lists never leak", async () => {
    const mine = (await create(bff())).json
    const theirs = (await create(spa(), { key: b.api_key, env: b.environment_id })).json
    const bKey = { key: b.api_key }
    expectProblem(await app.management(`/v1/clients/${mine.id}`, bKey), 404, "not_found")
    expectProblem(
      await app.management(`/v1/clients/${mine.id}`, { ...bKey, method: "PATCH", body: { name: "pwned" } }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/clients/${mine.id}`, { ...bKey, method: "DELETE" }), 404, "not_found")
    expectProblem(
      await app.management(`/v1/clients/${mine.id}/rotate-secret`, { ...bKey, method: "POST" }),
      404,
      "not_found",
    )
    expectProblem(await app.management(`/v1/clients?environment_id=${a.environment_id}`, bKey), 404, "not_found")
    expect(await listAll(`/v1/clients?environment_id=${b.environment_id}`, b.api_key)).toEqual([theirs.id])
    expect(await listAll(`/v1/clients?environment_id=${a.environment_id}`)).not.toContain(theirs.id)
    const [row] = await query<{ name: string; version: number; deleted_at: Date | null }>(
      app,
      "select name, version, deleted_at from clients where id = $1",
      [mine.id],
    )
    expect(row).toEqual({ name: "BFF", version: 1, deleted_at: null })
  })

  it("an Environment-pinned key reaches only its own Environment", async () => {
    const env2 = await makeEnvironment(app, a.workspace_id, a.project_id)
    const pinned = await makeKey(app, {
      workspaceId: a.workspace_id,
      environmentId: env2,
      scopes: ["clients:read", "clients:write", "clients:rotate_secret"],
    })
    const inEnv1 = (await create(bff())).json
    expectProblem(await app.management(`/v1/clients/${inEnv1.id}`, { key: pinned }), 404, "not_found")
    expectProblem(
      await app.management(`/v1/clients/${inEnv1.id}/rotate-secret`, { method: "POST", key: pinned }),
      404,
      "not_found",
    )
    expectProblem(
      await app.management(`/v1/clients?environment_id=${a.environment_id}`, { key: pinned }),
      404,
      "not_found",
    )
    expectProblem(await create(spa(), { key: pinned }), 404, "not_found")
    const inEnv2 = await create(spa(), { key: pinned, env: env2 })
    expect(inEnv2.status).toBe(201)
    expect((await app.management(`/v1/clients/${inEnv2.json.id}`, { key: pinned })).status).toBe(200)
  })
})

describe("Idempotency-Key on client writes", () => {
  it("replays the first answer (same client, same secret) and refuses the key with another body", async () => {
    const before = await countRows(app, "clients", a.environment_id)
    const headers = { "idempotency-key": "create-bff-1" }
    const [one, two] = await Promise.all([
      create(bff({ name: "Idem" }), { headers }),
      create(bff({ name: "Idem" }), { headers }),
    ])
    expect([one!.status, two!.status]).toEqual([201, 201])
    expect(two!.json).toEqual(one!.json)
    expect([one!.headers["idempotent-replayed"], two!.headers["idempotent-replayed"]].filter(Boolean)).toEqual(["true"])
    expect(await countRows(app, "clients", a.environment_id)).toBe(before + 1)
    expectProblem(await create(bff({ name: "Other" }), { headers }), 409, "idempotency_key_conflict")
    // The same key on another resource's path is a conflict, not a replay.
    const x = (await create(bff())).json
    const y = (await create(bff())).json
    const rotateHeaders = { "idempotency-key": "rotate-1" }
    expect(
      (await app.management(`/v1/clients/${x.id}/rotate-secret`, { method: "POST", headers: rotateHeaders })).status,
    ).toBe(200)
    expectProblem(
      await app.management(`/v1/clients/${y.id}/rotate-secret`, { method: "POST", headers: rotateHeaders }),
      409,
      "idempotency_key_conflict",
    )
  })
})

describe("OpenAPI", () => {
  it("documents the Clients, Connections and Domains routes from the schemas that decode them", async () => {
    const res = await app.management("/v1/openapi.json")
    expect(res.status).toBe(200)
    const paths = res.json.paths as Record<
      string,
      Record<string, { "x-required-scope"?: string; requestBody?: unknown; parameters?: Array<{ name: string }> }>
    >
    const scopes = {
      "/v1/clients": { get: "clients:read", post: "clients:write" },
      "/v1/clients/{clientId}": { get: "clients:read", patch: "clients:write", delete: "clients:write" },
      "/v1/clients/{clientId}/rotate-secret": { post: "clients:rotate_secret" },
      "/v1/connections": { get: "connections:read", post: "connections:write" },
      "/v1/connections/{connectionId}": {
        get: "connections:read",
        patch: "connections:write",
        delete: "connections:write",
      },
      "/v1/domains": { get: "domains:read", post: "domains:write" },
      "/v1/domains/{domainId}": { get: "domains:read", patch: "domains:write", delete: "domains:write" },
      "/v1/domains/{domainId}/retry-validation": { post: "domains:write" },
    } as const
    for (const [path, methods] of Object.entries(scopes)) {
      for (const [method, scope] of Object.entries(methods))
        expect(paths[path]?.[method]?.["x-required-scope"]).toBe(scope)
    }
    expect(paths["/v1/clients"]!["post"]!.requestBody).toBeDefined()
    expect(paths["/v1/clients"]!["get"]!.parameters!.map((p) => p.name)).toEqual(
      expect.arrayContaining(["environment_id", "client_type", "limit", "cursor"]),
    )
    expect(paths["/v1/clients"]!["post"]!.parameters!.map((p) => p.name)).toContain("Idempotency-Key")
    // The write-only provider secret is in the create body schema, never in the response schema.
    expect(JSON.stringify(res.json.paths["/v1/connections"].post.responses)).not.toContain("provider_client_secret")
  })
})
