import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, startApp, type TestApp } from "../../support/app.js"
import { apiKey, dashboardUser } from "../support/callers.js"
import { expectProblem } from "../support/problem.js"

// Every 401 names its scheme (RFC 9110 11.6.1) with the RFC 6750 error code where credentials
// were sent: the Management API (realm "management"), /me and the rest of the Public API,
// and the token endpoint's Basic challenge when the client tried Basic (RFC 6749 5.2).
// (docs/decisions/management-api.md, "401s carry WWW-Authenticate")

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const mgmt = (headers: Record<string, string>) => app.request(app.config.managementHost, "/v1/projects", { headers })

describe("WWW-Authenticate on the Management API", () => {
  it("no credentials: the Bearer scheme and realm, no error code (RFC 6750 3.1)", async () => {
    const res = await mgmt({})
    expectProblem(res, 401, "unauthorized")
    expect(res.json.detail).toBe("Send Authorization: Bearer <API key>")
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="management"')
  })

  it("an Authorization header of another scheme: invalid_request", async () => {
    const res = await mgmt({ authorization: "Basic dXNlcjpwYXNz" })
    expectProblem(res, 401, "unauthorized")
    expect(res.headers["www-authenticate"]).toMatch(
      /^Bearer realm="management", error="invalid_request", error_description="[^"]+"$/,
    )
  })

  it("an unknown, revoked or non-key token and an unknown Dashboard session: invalid_token", async () => {
    for (const token of [`sk_live_${"a".repeat(43)}`, "not-a-key", `dsh_${"b".repeat(43)}`]) {
      const res = await mgmt({ authorization: `Bearer ${token}` })
      expectProblem(res, 401, "unauthorized")
      expect(res.headers["www-authenticate"], token).toMatch(
        /^Bearer realm="management", error="invalid_token", error_description="[^"]+"$/,
      )
    }
    const revoked = await apiKey(app, { workspaceId: b.workspace_id, scopes: ["projects:read"] })
    const revoke = await app.management(`/v1/api-keys/${revoked.id}/revoke`, { method: "POST" })
    expect(revoke.status).toBe(200)
    const res = await mgmt({ authorization: `Bearer ${revoked.secret}` })
    expectProblem(res, 401, "unauthorized")
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer realm="management", error="invalid_token", error_description="The API key is unknown, revoked or expired"',
    )
  })

  it("a key without the route's scope: 403 insufficient_scope naming the scope", async () => {
    const narrow = await apiKey(app, { workspaceId: b.workspace_id, scopes: ["users:read"] })
    const res = await mgmt({ authorization: `Bearer ${narrow.secret}` })
    expectProblem(res, 403, "insufficient_scope")
    expect(res.headers["www-authenticate"]).toBe(
      'Bearer realm="management", error="insufficient_scope", scope="projects:read"',
    )
  })

  it("a working key and a Dashboard session get no challenge", async () => {
    expect((await mgmt({ authorization: `Bearer ${b.api_key}` })).headers["www-authenticate"]).toBeUndefined()
    const member = await dashboardUser(app, { workspaceId: b.workspace_id, role: "owner" })
    const res = await app.request(app.config.managementHost, "/v1/workspaces", { headers: member.headers })
    expect(res.status).toBe(200)
    expect(res.headers["www-authenticate"]).toBeUndefined()
  })
})

describe("WWW-Authenticate on the Public API and the token endpoint", () => {
  it("/me without a token and with a bad one", async () => {
    const none = await app.issuer(b.environment_id, "/v1/me")
    expect(none.status).toBe(401)
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer realm="[^"]+"$/)
    const bad = await app.issuer(b.environment_id, "/v1/me", { headers: { authorization: "Bearer abc.def.ghi" } })
    expect(bad.status).toBe(401)
    expect(bad.headers["www-authenticate"]).toMatch(/^Bearer realm="[^"]+", error="invalid_token"/)
  })

  it("the token endpoint answers a failed HTTP Basic client authentication with a Basic challenge", async () => {
    const client = await app.management("/v1/clients", {
      method: "POST",
      body: {
        environment_id: b.environment_id,
        client_type: "web_bff",
        name: "basic",
        token_endpoint_auth_method: "client_secret_basic",
        redirect_uris: ["https://app.example.com/cb"],
      },
    })
    expect(client.status).toBe(201)
    const res = await app.issuer(b.environment_id, "/oauth2/token", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${client.json.id}:wrong`).toString("base64")}`,
      },
      body:
        "grant_type=authorization_code&code=x&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb&code_verifier=" +
        "v".repeat(43),
    })
    expect(res.status).toBe(401)
    expect(res.json.error).toBe("invalid_client")
    expect(res.headers["www-authenticate"]).toMatch(/^Basic realm="[^"]+"/)
  })
})
