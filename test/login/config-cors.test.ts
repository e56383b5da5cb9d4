import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  ALLOWED_ORIGIN,
  createClient,
  createTransaction,
  type LoginClientInfo,
  publicApi,
  query,
  transactionBody,
} from "./support.js"

let app: TestApp
let b: Bootstrapped
let client: LoginClientInfo

beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
  client = await createClient(app, b)
})
afterAll(async () => {
  await app?.close()
})

const insertConnection = (
  envId: string,
  workspaceId: string,
  id: string,
  provider: string,
  extra: { status?: string; owner_confirmed?: boolean; deleted?: boolean } = {},
) =>
  query(
    app,
    `insert into connections (id, workspace_id, environment_id, provider, mode, provider_key, status, owner_confirmed,
      provider_client_secret_sealed, created_at, updated_at, deleted_at)
    values ($1, $2, $3, $4, 'byo', $4, $5, $6, 'v1.sealed-secret-never-returned', now(), now(), $7)`,
    [
      id,
      workspaceId,
      envId,
      provider,
      extra.status ?? "active",
      extra.owner_confirmed ?? false,
      extra.deleted ? new Date() : null,
    ],
  )

describe("GET /config", () => {
  it("returns issuer, rp_id, available_methods, theme, sdk_compatibility_version, legal", async () => {
    const res = await publicApi(app, b, `/config?client_id=${client.client_id}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      issuer: b.issuer,
      rp_id: b.interaction_domain.replace(/:\d+$/, ""),
      available_methods: ["passkey", "email_otp"],
      theme: {},
      sdk_compatibility_version: "1.0.0",
      legal: { terms_url: null, privacy_url: null },
    })
  })

  it("is the same at {issuer}/v1/config", async () => {
    const res = await app.issuer(b.environment_id, `/v1/config?client_id=${client.client_id}`)
    expect(res.status).toBe(200)
    expect(res.json.issuer).toBe(b.issuer)
  })

  it("lists active social providers; generic_oidc only once confirmed; never a secret", async () => {
    const env = await app.bootstrap()
    const c = await createClient(app, env)
    await insertConnection(env.environment_id, env.workspace_id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "github")
    await insertConnection(env.environment_id, env.workspace_id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2", "google")
    await insertConnection(env.environment_id, env.workspace_id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa3", "apple", {
      status: "disabled",
    })
    await insertConnection(env.environment_id, env.workspace_id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa4", "microsoft", {
      deleted: true,
    })
    await insertConnection(env.environment_id, env.workspace_id, "con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa5", "generic_oidc")
    let res = await publicApi(app, env, `/config?client_id=${c.client_id}`)
    expect(res.json.available_methods).toEqual(["passkey", "email_otp", "google", "github"])
    expect(res.text).not.toContain("sealed-secret")
    await query(app, "update connections set owner_confirmed = true where id = 'con_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa5'")
    res = await publicApi(app, env, `/config?client_id=${c.client_id}`)
    expect(res.json.available_methods).toEqual(["passkey", "email_otp", "google", "github", "generic_oidc"])
    // the same list on a transaction
    const txn = await publicApi(app, env, "/auth/transactions", { body: transactionBody(c) })
    expect(txn.json.available_methods).toEqual(["passkey", "email_otp", "google", "github", "generic_oidc"])
  })

  it("returns the Environment's theme and legal links from it", async () => {
    const env = await app.bootstrap()
    const c = await createClient(app, env)
    const theme = {
      primary_color: "#123456",
      terms_url: "https://example.com/terms",
      privacy_url: "http://insecure.example.com/p",
    }
    await query(app, "update environments set theme = $1::jsonb where id = $2", [
      JSON.stringify(theme),
      env.environment_id,
    ])
    const res = await publicApi(app, env, `/config?client_id=${c.client_id}`)
    expect(res.json.theme).toEqual(theme)
    expect(res.json.legal).toEqual({ terms_url: "https://example.com/terms", privacy_url: null })
  })

  it("legal follows the theme set through the Management API (terms_url, privacy_url); clearing them gives null again", async () => {
    const env = await app.bootstrap()
    const c = await createClient(app, env)
    const path = `/v1/environments/${env.environment_id}/theme`
    const put = await app.management(path, {
      method: "PUT",
      key: env.api_key,
      headers: { "if-match": `"${env.environment_id}.theme.1"` },
      body: { terms_url: "https://app.example.com/terms", privacy_url: "https://app.example.com/privacy" },
    })
    expect(put.status, put.text).toBe(200)
    const res = await publicApi(app, env, `/config?client_id=${c.client_id}`)
    expect(res.json.legal).toEqual({
      terms_url: "https://app.example.com/terms",
      privacy_url: "https://app.example.com/privacy",
    })
    expect(res.json.theme).toMatchObject({
      terms_url: "https://app.example.com/terms",
      privacy_url: "https://app.example.com/privacy",
    })
    const cleared = await app.management(path, {
      method: "PUT",
      key: env.api_key,
      headers: { "if-match": put.headers["etag"] as string },
      body: { privacy_url: null },
    })
    expect(cleared.status, cleared.text).toBe(200)
    expect((await publicApi(app, env, `/config?client_id=${c.client_id}`)).json.legal).toEqual({
      terms_url: null,
      privacy_url: null,
    })
  })

  it("400 invalid_request for a missing, unknown, disabled or foreign client_id", async () => {
    const disabled = await createClient(app, b, { status: "disabled" })
    const other = await app.bootstrap()
    const foreign = await createClient(app, other)
    for (const q of [
      "",
      "?client_id=cli_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      `?client_id=${disabled.client_id}`,
      `?client_id=${foreign.client_id}`,
    ]) {
      const res = await publicApi(app, b, `/config${q}`)
      expect([res.status, res.json.code], q).toEqual([400, "invalid_request"])
    }
  })
})

describe("CORS", () => {
  it("preflight from a registered Origin: 204 with the CORS headers, no credentials", async () => {
    const res = await publicApi(app, b, "/auth/transactions", {
      method: "OPTIONS",
      headers: {
        origin: ALLOWED_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    })
    expect(res.status).toBe(204)
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN)
    expect(res.headers["access-control-allow-methods"]).toContain("POST")
    expect(String(res.headers["access-control-allow-headers"]).toLowerCase()).toContain("content-type")
    expect(res.headers["access-control-max-age"]).toBe("600")
    expect(res.headers["vary"]).toContain("Origin")
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined()
    // on parameterised paths and at {issuer}/v1 too
    const txn = await createTransaction(app, b, client)
    const res2 = await publicApi(app, b, `/auth/transactions/${txn}/email/verify`, {
      method: "OPTIONS",
      headers: { origin: ALLOWED_ORIGIN },
    })
    expect(res2.status).toBe(204)
    const res3 = await app.issuer(b.environment_id, "/v1/config", {
      method: "OPTIONS",
      headers: { origin: ALLOWED_ORIGIN },
    })
    expect(res3.status).toBe(204)
  })

  it("an unregistered Origin: 403 origin_not_allowed on preflight and on the real request, nothing created", async () => {
    for (const origin of [
      "https://evil.example.com",
      "https://app.example.com:8443",
      "http://app.example.com",
      "https://APP.example.com",
      "null",
    ]) {
      const pre = await publicApi(app, b, "/auth/transactions", {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST" },
      })
      expect([pre.status, pre.json?.code], origin).toEqual([403, "origin_not_allowed"])
      expect(pre.headers["access-control-allow-origin"]).toBeUndefined()
      const before = (await query<{ n: number }>(app, "select count(*)::int as n from auth_transactions"))[0]!.n
      const real = await publicApi(app, b, "/auth/transactions", { body: transactionBody(client), headers: { origin } })
      expect([real.status, real.json.code], origin).toEqual([403, "origin_not_allowed"])
      expect((await query<{ n: number }>(app, "select count(*)::int as n from auth_transactions"))[0]!.n).toBe(before)
    }
  })

  it("a registered Origin on the real request: Access-Control-Allow-Origin on success and on errors", async () => {
    const ok = await publicApi(app, b, "/auth/transactions", {
      body: transactionBody(client),
      headers: { origin: ALLOWED_ORIGIN },
    })
    expect(ok.status).toBe(201)
    expect(ok.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN)
    expect(ok.headers["vary"]).toContain("Origin")
    const err = await publicApi(app, b, "/auth/transactions/txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", {
      headers: { origin: ALLOWED_ORIGIN },
    })
    expect([err.status, err.json.code]).toEqual([404, "auth_transaction_not_found"])
    expect(err.headers["access-control-allow-origin"]).toBe(ALLOWED_ORIGIN)
  })

  it("the real request is checked against its own client: another client's Origin is refused", async () => {
    const other = await createClient(app, b, { allowed_origins: ["https://other-app.example.com"] })
    // preflight passes: some active client of the Environment registers it
    const pre = await publicApi(app, b, "/auth/transactions", {
      method: "OPTIONS",
      headers: { origin: "https://other-app.example.com" },
    })
    expect(pre.status).toBe(204)
    // but client A does not
    const res = await publicApi(app, b, "/auth/transactions", {
      body: transactionBody(client),
      headers: { origin: "https://other-app.example.com" },
    })
    expect([res.status, res.json.code]).toEqual([403, "origin_not_allowed"])
    const cfg = await publicApi(app, b, `/config?client_id=${client.client_id}`, {
      headers: { origin: "https://other-app.example.com" },
    })
    expect([cfg.status, cfg.json.code]).toEqual([403, "origin_not_allowed"])
    const txn = await createTransaction(app, b, client)
    const get = await publicApi(app, b, `/auth/transactions/${txn}`, {
      headers: { origin: "https://other-app.example.com" },
    })
    expect([get.status, get.json.code]).toEqual([403, "origin_not_allowed"])
    // client B itself works from there
    expect(
      (
        await publicApi(app, b, "/auth/transactions", {
          body: transactionBody(other),
          headers: { origin: "https://other-app.example.com" },
        })
      ).status,
    ).toBe(201)
  })

  it("a disabled client's origins do not count; no Origin (native, server) and same-origin calls pass", async () => {
    await createClient(app, b, { allowed_origins: ["https://disabled-app.example.com"], status: "disabled" })
    const pre = await publicApi(app, b, "/config", {
      method: "OPTIONS",
      headers: { origin: "https://disabled-app.example.com" },
    })
    expect([pre.status, pre.json.code]).toEqual([403, "origin_not_allowed"])
    expect((await publicApi(app, b, "/auth/transactions", { body: transactionBody(client) })).status).toBe(201)
    const same = await publicApi(app, b, "/auth/transactions", {
      body: transactionBody(client),
      headers: { origin: `http://${b.interaction_domain}` },
    })
    expect(same.status).toBe(201)
    expect(same.headers["access-control-allow-origin"]).toBeUndefined()
    const noOrigin = await publicApi(app, b, "/config", { method: "OPTIONS" })
    expect(noOrigin.status).toBe(204)
  })
})
