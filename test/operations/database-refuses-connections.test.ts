import { inject } from "vitest"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { allowConnections } from "../support/template.js"
import type { TestResponse } from "../support/http.js"
import { publicApi } from "../passkeys/support/flow.js"
import { introspect, me, signedInUser, tryRefresh, useMeApp, userinfo } from "../me/support.js"

// Postgres up but refusing this database's connections (`ALTER DATABASE ... ALLOW_CONNECTIONS
// false`, its sessions terminated): every new connection fails with SQLSTATE 55000 "database is
// not currently accepting connections", which is neither a connection-exception (08) nor an
// operator-intervention (57) class. Every surface answers 503 with Retry-After, never 500, and
// recovers by itself once connections are allowed again (decisions: Production operation).

const ctx = useMeApp()
let database: string

const setConnections = (allowed: boolean) => allowConnections(inject("serverUrl"), database, allowed)

beforeAll(() => {
  database = new URL(ctx.app.databaseUrl).pathname.slice(1)
})
afterAll(async () => {
  await setConnections(true).catch(() => {})
})

const expectProblem503 = (res: TestResponse, code: string) => {
  expect(res.status, res.text).toBe(503)
  expect(res.headers["content-type"]).toBe("application/problem+json")
  expect(res.json).toMatchObject({ status: 503, code })
  expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1)
}

const expectOAuth503 = (res: TestResponse) => {
  expect(res.status, res.text).toBe(503)
  expect(res.json).toMatchObject({ error: "server_error" })
  expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1)
  expect(res.headers["cache-control"]).toBe("no-store")
}

describe("the database refuses connections (allow_connections false)", () => {
  it("Management API, token endpoint, Public API, /me, UserInfo, introspection and revocation answer 503 with Retry-After; all recover", async () => {
    const signed = await signedInUser(ctx, "outage")
    const workspace = () => ctx.app.management(`/v1/workspaces/${ctx.b.workspace_id}`, { key: ctx.b.api_key })
    const createTxn = () =>
      publicApi(ctx.app, ctx.b, "/auth/transactions", {
        body: {
          client_id: ctx.client.client_id,
          redirect_uri: ctx.client.redirect_uri,
          code_challenge_method: "S256",
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          state: "s-1",
          nonce: "n-1",
          scope: "openid email",
        },
      })
    const revoke = () =>
      ctx.app.issuer(ctx.b.environment_id, "/oauth2/revoke", {
        method: "POST",
        body: new URLSearchParams({ token: signed.tokens.refresh_token }).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      })
    // Healthy first (and every cache that could hide the outage is warm: the Environment, the client).
    expect((await workspace()).status).toBe(200)
    expect((await createTxn()).status).toBe(201)
    expect((await me(ctx, signed.token, "")).status).toBe(200)

    await setConnections(false)
    try {
      expectProblem503(await workspace(), "service_unavailable")
      expectProblem503(
        await ctx.app.management("/v1/users?environment_id=" + ctx.b.environment_id, { key: ctx.b.api_key }),
        "service_unavailable",
      )
      expectOAuth503(await tryRefresh(ctx, signed.tokens.refresh_token))
      expectProblem503(await createTxn(), "service_unavailable")
      expectProblem503(await me(ctx, signed.token, ""), "user_unavailable")
      expectProblem503(await userinfo(ctx, signed.token), "user_unavailable")
      expectOAuth503(await introspect(ctx, signed.token))
      expectOAuth503(await revoke())
      const ready = await ctx.app.request(ctx.app.config.managementHost, "/readyz")
      expectProblem503(ready, "service_unavailable")
    } finally {
      await setConnections(true)
    }

    // Back: the same calls succeed without a restart.
    expect((await workspace()).status).toBe(200)
    expect((await createTxn()).status).toBe(201)
    expect((await me(ctx, signed.token, "")).status).toBe(200)
    expect((await userinfo(ctx, signed.token)).status).toBe(200)
    const refreshed = await tryRefresh(ctx, signed.tokens.refresh_token)
    expect(refreshed.status, refreshed.text).toBe(200)
    expect((await introspect(ctx, refreshed.json.access_token)).json).toMatchObject({ active: true })
  })
})
