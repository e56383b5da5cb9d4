import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  basic,
  createClient,
  createUser,
  exchangeCode,
  mintCode,
  postForm,
  queryRows,
  stableHeaders,
  type TestClient,
  userinfo,
} from "./support.js"

// UserInfo and introspection answers are remembered by the application and replayed by the
// listener (src/oidc/access-token/fast-lane.ts) only while they are still true: the replay equals the full
// answer, and a change on this replica (logout, profile, block, secret rotation), the token's
// expiry or the session's, ends it at once; another replica's change within the live-state
// bound (test/faults/live-state.test.ts) or the Environment cache's bound plus one second.

let app: TestApp
let env: Bootstrapped
let bff: TestClient
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  bff = await createClient(app, env, { type: "web_bff", allowedOrigins: ["https://app.example.com"] })
})
afterAll(async () => {
  await app?.close()
})

const signIn = async (name = "Ada") => {
  const user = await createUser(app, env, { name })
  const minted = await mintCode(app, env, bff, user)
  const res = await exchangeCode(app, env, bff, minted)
  expect(res.status).toBe(200)
  return { user, sessionId: minted.sessionId, accessToken: (res.json as { access_token: string }).access_token }
}
const introspect = (token: string, secret = bff.secret!) =>
  postForm(app, env, "/oauth2/introspect", { token }, { authorization: basic(bff.id, secret) })

describe("remembered UserInfo answers", () => {
  it("the replay equals the application's answer: status, body, headers; each answer its own request id", async () => {
    const { accessToken } = await signIn()
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(await userinfo(app, env, accessToken))
    for (const res of answers.slice(1)) {
      expect(res.status).toBe(200)
      expect(res.text).toBe(answers[0]!.text)
      expect(stableHeaders(res.headers)).toEqual(stableHeaders(answers[0]!.headers))
    }
    expect(new Set(answers.map((r) => r.headers["x-request-id"])).size).toBe(3)
  })

  it("a cross-origin call after a remembered answer still gets its CORS answer", async () => {
    const { accessToken } = await signIn()
    await userinfo(app, env, accessToken)
    const res = await app.issuer(env.environment_id, "/oauth2/userinfo", {
      headers: { authorization: `Bearer ${accessToken}`, origin: "https://app.example.com" },
    })
    expect(res.status).toBe(200)
    expect(res.headers["access-control-allow-origin"]).toBe("https://app.example.com")
  })

  it("a profile change, a logout and a block made on this replica apply to the very next call", async () => {
    const a = await signIn("Before")
    await userinfo(app, env, a.accessToken)
    const patched = await app.management(`/v1/users/${a.user.id}?environment_id=${env.environment_id}`, {
      method: "PATCH",
      body: { name: "After" },
    })
    expect(patched.status).toBe(200)
    expect((await userinfo(app, env, a.accessToken)).json).toMatchObject({ name: "After" })

    const b = await signIn()
    await userinfo(app, env, b.accessToken)
    const revoked = await app.management(
      `/v1/users/${b.user.id}/sessions/${b.sessionId}?environment_id=${env.environment_id}`,
      { method: "DELETE" },
    )
    expect(revoked.status).toBe(200)
    expect((await userinfo(app, env, b.accessToken)).status).toBe(401)

    const c = await signIn()
    await userinfo(app, env, c.accessToken)
    expect(
      (
        await app.management(`/v1/users/${c.user.id}/block?environment_id=${env.environment_id}`, {
          method: "POST",
          body: {},
        })
      ).status,
    ).toBe(200)
    expect((await userinfo(app, env, c.accessToken)).status).toBe(401)
  })

  it("ends with the access token's expiry and with the session's", async () => {
    const { accessToken, sessionId } = await signIn()
    expect((await userinfo(app, env, accessToken)).status).toBe(200)
    await app.advance("301 seconds")
    expect((await userinfo(app, env, accessToken)).status).toBe(401)

    const later = await signIn()
    // The session's idle expiry, moved earlier by hand (announced) to 30 s from now.
    await queryRows(app, "update login_sessions set idle_expires_at = $2 where id = $1", [
      later.sessionId,
      new Date(app.now() + 30_000),
    ])
    await new Promise((resolve) => setTimeout(resolve, 200)) // the announcement has come back
    expect((await userinfo(app, env, later.accessToken)).status).toBe(200)
    expect((await userinfo(app, env, later.accessToken)).status).toBe(200)
    await app.advance("31 seconds")
    expect((await userinfo(app, env, later.accessToken)).status).toBe(401)
    expect(sessionId).not.toBe(later.sessionId)
  })

  it("another replica's suspension of the Environment is seen within the Environment cache's bound plus a second", async () => {
    const { accessToken } = await signIn()
    expect((await userinfo(app, env, accessToken)).status).toBe(200)
    await queryRows(app, "update environments set status = 'suspended' where id = $1", [env.environment_id])
    try {
      await app.advance("7 seconds")
      expect((await userinfo(app, env, accessToken)).status).not.toBe(200)
    } finally {
      await queryRows(app, "update environments set status = 'active' where id = $1", [env.environment_id])
      await app.advance("7 seconds")
    }
  })
})

describe("remembered introspection answers", () => {
  it("the replay equals the application's answer; another caller, a wrong secret or another token is judged afresh", async () => {
    const { accessToken } = await signIn()
    const first = await introspect(accessToken)
    expect(first.json).toMatchObject({ active: true })
    const second = await introspect(accessToken)
    expect(second.text).toBe(first.text)
    expect(stableHeaders(second.headers)).toEqual(stableHeaders(first.headers))
    expect((await introspect(accessToken, "wrong-secret")).json).toEqual({ active: false })
    expect((await introspect(`${accessToken}x`)).json).toEqual({ active: false })
  })

  it("a client secret rotation ends the answers of the old secret at once; a block ends the token's", async () => {
    const { user, accessToken } = await signIn()
    expect((await introspect(accessToken)).json).toMatchObject({ active: true })
    const rotated = await app.management(`/v1/clients/${bff.id}/rotate-secret`, { method: "POST" })
    expect(rotated.status).toBe(200)
    const secret = (rotated.json as { client_secret: string }).client_secret
    expect((await introspect(accessToken)).json).toEqual({ active: false })
    expect((await introspect(accessToken, secret)).json).toMatchObject({ active: true })
    bff = { ...bff, secret }
    expect(
      (
        await app.management(`/v1/users/${user.id}/block?environment_id=${env.environment_id}`, {
          method: "POST",
          body: {},
        })
      ).status,
    ).toBe(200)
    expect((await introspect(accessToken)).json).toEqual({ active: false })
  })
})
