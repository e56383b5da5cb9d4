import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Keys } from "../../src/platform/keys/service.js"
import { sample } from "../operations/support.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  blockUser,
  createClient,
  createSiblingEnvironment,
  createUser,
  exchangeCode,
  mintCode,
  queryRows,
  revokeSession,
  stableHeaders,
  type TestClient,
  userinfo,
} from "./support.js"

// UserInfo for a token this replica has not answered before is computed by the listener
// (src/oidc/userinfo/from-memory.ts) when everything the application reads for it is in memory:
// the Environment's issuer and key from a template an application 200 left under a second ago,
// the live state from this replica's memory, the application's own checks. Its answer is the
// application's, byte for byte but the request id; every refusal, and every request the
// listener cannot judge from memory, is the application's as before. Which path answered is
// read from authservice_listener_answers_total.

let app: TestApp
let env: Bootstrapped
let bff: TestClient
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  bff = await createClient(app, env, { type: "web_bff" })
})
afterAll(async () => {
  await app?.close()
})

const signIn = async (options: { name?: string; scopes?: ReadonlyArray<string>; on?: Bootstrapped } = {}) => {
  const on = options.on ?? env
  const client = on.environment_id === env.environment_id ? bff : await createClient(app, on, { type: "web_bff" })
  const user = await createUser(app, on, { name: options.name ?? "Grace" })
  const minted = await mintCode(app, on, client, user, options.scopes ? { scopes: options.scopes } : {})
  const res = await exchangeCode(app, on, client, minted)
  expect(res.status).toBe(200)
  return { user, sessionId: minted.sessionId, accessToken: (res.json as { access_token: string }).access_token }
}
/** UserInfo 200s the listener computed so far. */
const computed = async () => {
  const res = await app.request(app.config.managementHost, "/metrics")
  expect(res.status).toBe(200)
  return sample(res.text, "authservice_listener_answers_total", { endpoint: "userinfo", how: "computed" }) ?? 0
}
/** UserInfo 200s the listener replayed so far. */
const replayed = async () => {
  const res = await app.request(app.config.managementHost, "/metrics")
  expect(res.status).toBe(200)
  return sample(res.text, "authservice_listener_answers_total", { endpoint: "userinfo", how: "replayed" }) ?? 0
}
/** The application's answer for a token: the listener answers GET only (OIDC Core 5.3.1: POST answers alike). */
const fromApplication = (accessToken: string) =>
  app.issuer(env.environment_id, "/oauth2/userinfo", {
    method: "POST",
    headers: { authorization: `Bearer ${accessToken}` },
  })
/** One application 200 of this Environment: it leaves the template the listener computes with. */
const warm = async () => {
  const { accessToken } = await signIn()
  expect((await fromApplication(accessToken)).status).toBe(200)
  expect((await userinfo(app, env, accessToken)).status).toBe(200)
}

describe("UserInfo computed by the listener", () => {
  it("answers a token it has not seen with the application's answer: status, body, headers", async () => {
    await warm()
    const before = await computed()
    const { user, accessToken } = await signIn({ name: "Computed" })
    const res = await userinfo(app, env, accessToken)
    expect(await computed()).toBe(before + 1)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      sub: user.id,
      name: "Computed",
      locale: "en-GB",
      updated_at: expect.any(Number),
      email: user.email,
      email_verified: true,
    })
    const application = await fromApplication(accessToken)
    expect(application.status).toBe(200)
    expect(res.text).toBe(application.text)
    expect(stableHeaders(res.headers)).toEqual(stableHeaders(application.headers))
  })

  it("answers whatever query the request carries (UserInfo reads none), each request its own computation", async () => {
    await warm()
    const before = await computed()
    const { user, accessToken } = await signIn()
    for (let i = 0; i < 3; i++) {
      const res = await app.issuer(env.environment_id, `/oauth2/userinfo?nocache=${i}`, {
        headers: { authorization: `Bearer ${accessToken}` },
      })
      expect(res.status).toBe(200)
      expect((res.json as { sub: string }).sub).toBe(user.id)
    }
    expect(await computed()).toBe(before + 3)
    // Except a query holding %00, which the application refuses before routing: so is it here.
    const nul = await app.issuer(env.environment_id, "/oauth2/userinfo?x=%00", {
      headers: { authorization: `Bearer ${accessToken}` },
    })
    expect(nul.status).toBe(400)
    expect(nul.json).toMatchObject({ status: 400, code: "invalid_request" })
    expect(await computed()).toBe(before + 3)
  })

  it("leaves every refusal to the application: blocked user, ended session, expired or forged token, no openid scope, another Environment", async () => {
    await warm()
    const blocked = await signIn()
    const revoked = await signIn()
    const noOpenid = await signIn({ scopes: ["profile"] })
    const sibling = await createSiblingEnvironment(app, env)
    const elsewhere = await signIn({ on: { ...env, environment_id: sibling.id } })
    await blockUser(app, env, blocked.user.id)
    await revokeSession(app, env, revoked.user.id, revoked.sessionId)
    await warm()
    const before = await computed()
    const forged = `${revoked.accessToken.slice(0, -4)}AAAA`
    for (const [token, status] of [
      [blocked.accessToken, 401],
      [revoked.accessToken, 401],
      [forged, 401],
      [noOpenid.accessToken, 400],
      [elsewhere.accessToken, 401],
    ] as const) {
      const res = await userinfo(app, env, token)
      expect(res.status).toBe(status)
      const application = await fromApplication(token)
      expect(res.status).toBe(application.status)
      const { request_id: _r, ...refusal } = res.json as Record<string, unknown>
      const { request_id: _a, ...expected } = application.json as Record<string, unknown>
      expect(refusal).toEqual(expected)
      expect(res.headers["www-authenticate"]).toBe(application.headers["www-authenticate"])
    }
    expect(await computed()).toBe(before)
  })

  it("renews the template ahead of its end: one request goes to the application, the others stay computed past the first template's second", async () => {
    const tokens = await Promise.all([signIn(), signIn(), signIn(), signIn()])
    await warm()
    await app.advance("800 millis")
    const before = await computed()
    // In the template's last 250 ms: the first request renews it through the application.
    for (const { accessToken } of tokens.slice(0, 2)) expect((await userinfo(app, env, accessToken)).status).toBe(200)
    expect(await computed()).toBe(before + 1)
    // 1.3 s after the first template was made: still computed, from the renewed one.
    await app.advance("500 millis")
    for (const { accessToken } of tokens.slice(2)) expect((await userinfo(app, env, accessToken)).status).toBe(200)
    expect(await computed()).toBe(before + 3)
  })

  it("replays a computed answer no longer than the template it was computed from lives (another replica's suspension is seen within the same bound)", async () => {
    await warm()
    const fresh = await signIn()
    await app.advance("700 millis")
    const [computedBefore, replayedBefore] = [await computed(), await replayed()]
    expect((await userinfo(app, env, fresh.accessToken)).status).toBe(200)
    expect(await computed()).toBe(computedBefore + 1)
    // Within the template's second: replayed.
    expect((await userinfo(app, env, fresh.accessToken)).status).toBe(200)
    expect(await replayed()).toBe(replayedBefore + 1)
    // Past it (1.1 s after the template, 0.4 s after the computation): the application answers.
    await app.advance("400 millis")
    expect((await userinfo(app, env, fresh.accessToken)).status).toBe(200)
    expect(await replayed()).toBe(replayedBefore + 1)
  })

  it("refuses a token past its expiry though its user and session are in memory and the template is fresh", async () => {
    const old = await signIn()
    await app.advance("300 seconds")
    await warm()
    const before = await computed()
    expect((await userinfo(app, env, old.accessToken)).status).toBe(401)
    expect(await computed()).toBe(before)
  })

  it("computes nothing once the template is a second old: another replica's suspension is seen within the Environment cache's bound plus a second", async () => {
    await warm()
    const fresh = await signIn()
    await queryRows(app, "update environments set status = 'suspended' where id = $1", [env.environment_id])
    try {
      await app.advance("7 seconds")
      const before = await computed()
      expect((await userinfo(app, env, fresh.accessToken)).status).not.toBe(200)
      expect(await computed()).toBe(before)
    } finally {
      await queryRows(app, "update environments set status = 'active' where id = $1", [env.environment_id])
      await app.advance("7 seconds")
    }
  })

  it("a token this replica signed is known authentic here: the signer's public key is the verifier's, one object for the process", async () => {
    const keyObjects = () =>
      app.run(
        Effect.gen(function* () {
          const keys = yield* Keys
          const signing = yield* keys.signingKey(env.environment_id)
          const verifying = yield* keys.verificationKey(env.environment_id, signing.kid)
          return { signer: signing.publicKey, verifier: Option.getOrThrow(verifying) }
        }),
      )
    const before = await keyObjects()
    expect(before.signer).toBe(before.verifier)
    // Past the key caches' 10 seconds the rows are read again: still the same objects, so the
    // signatures remembered under them still count.
    await app.advance("11 seconds")
    const after = await keyObjects()
    expect(after.verifier).toBe(before.verifier)
    expect(after.signer).toBe(before.signer)
  })
})
