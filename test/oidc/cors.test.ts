import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createUser,
  exchangeCode,
  form,
  mintCode,
  queryRows,
  type TestClient,
  type TestUser,
} from "./support.js"

// A web_spa exchanges its code and refreshes from the browser: the token, userinfo and revoke
// endpoints follow the Public API's CORS rules (registered Origins only, preflight answered).

let app: TestApp
let env: Bootstrapped
let spa: TestClient
let other: TestClient
let user: TestUser
const ORIGIN = "https://spa.example.com"
const OTHER_ORIGIN = "https://other.example.com"

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env, { allowedOrigins: [ORIGIN] })
  other = await createClient(app, env, { allowedOrigins: [OTHER_ORIGIN] })
  user = await createUser(app, env)
})
afterAll(async () => {
  await app?.close()
})

const preflight = (path: string, origin: string) =>
  app.issuer(env.environment_id, path, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
  })

describe("CORS on /oauth2/token, /oauth2/userinfo, /oauth2/revoke", () => {
  it("a preflight from a registered Origin is answered 204; an unknown Origin gets 403 origin_not_allowed", async () => {
    for (const path of ["/oauth2/token", "/oauth2/userinfo", "/oauth2/revoke"]) {
      const ok = await preflight(path, ORIGIN)
      expect(ok.status).toBe(204)
      expect(ok.headers["access-control-allow-origin"]).toBe(ORIGIN)
      expect(String(ok.headers["access-control-allow-headers"])).toContain("Authorization")
      const refused = await preflight(path, "https://evil.example.com")
      expect(refused.status).toBe(403)
      expect(refused.json.code).toBe("origin_not_allowed")
    }
  })

  it("the code exchange from the client's Origin carries Access-Control-Allow-Origin; another client's Origin is refused before anything changes", async () => {
    const minted = await mintCode(app, env, spa, user)
    const body = form({
      grant_type: "authorization_code",
      code: minted.code,
      redirect_uri: spa.redirectUri,
      code_verifier: minted.verifier,
      client_id: spa.id,
    })
    const headers = { "content-type": "application/x-www-form-urlencoded" }
    const foreign = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body,
      headers: { ...headers, origin: OTHER_ORIGIN },
    })
    expect(foreign.status).toBe(403)
    expect(foreign.json.code).toBe("origin_not_allowed")
    const [row] = await queryRows<{ consumed_at: Date | null }>(
      app,
      "select consumed_at from authorization_codes where session_id = $1",
      [minted.sessionId],
    )
    expect(row!.consumed_at).toBeNull()

    const res = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body,
      headers: { ...headers, origin: ORIGIN },
    })
    expect(res.status).toBe(200)
    expect(res.headers["access-control-allow-origin"]).toBe(ORIGIN)
    expect(res.headers["cache-control"]).toBe("no-store")

    const info = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      headers: { origin: ORIGIN, authorization: `Bearer ${res.json.access_token}` },
    })
    expect(info.status).toBe(200)
    expect(info.headers["access-control-allow-origin"]).toBe(ORIGIN)
    // error bodies are readable by the page too
    const bad = await app.issuer(env.environment_id, "/oauth2/token", {
      method: "POST",
      body: form({ grant_type: "password" }),
      headers: { ...headers, origin: ORIGIN },
    })
    expect(bad.status).toBe(400)
    expect(bad.headers["access-control-allow-origin"]).toBe(ORIGIN)
    expect(other.id).not.toBe(spa.id)
  })

  it("server-side calls without an Origin are unaffected", async () => {
    const res = await exchangeCode(app, env, spa, await mintCode(app, env, spa, user))
    expect(res.status).toBe(200)
    expect(res.headers["access-control-allow-origin"]).toBeUndefined()
  })
})
