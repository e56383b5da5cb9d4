import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { createClient, createUser, exchangeCode, mintCode, queryRows, type TestClient, userinfo } from "./support.js"

// The live-state memory keeps expiry times, not verdicts (src/oidc/access-token/live-cache.ts):
// an earlier expiry is announced and applies; a later one is not announced (sql/0140), so a
// remembered expiry that has passed is read again instead of refusing a renewed session.

let app: TestApp
let env: Bootstrapped
let client: TestClient
beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  client = await createClient(app, env)
})
afterAll(async () => { await app?.close() })

const until = async (probe: () => Promise<boolean>) => {
  const deadline = Date.now() + 2_000
  while (!(await probe())) {
    expect(Date.now()).toBeLessThan(deadline)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe("session expiry in the live-state memory", () => {
  it("a session renewed without announcement is read again once the remembered expiry passes; a shortened one applies", async () => {
    const user = await createUser(app, env)
    const minted = await mintCode(app, env, client, user)
    const t = (await exchangeCode(app, env, client, minted)).json as { access_token: string }
    const setIdle = (ms: number) => queryRows(app, "update login_sessions set idle_expires_at = $2 where id = $1", [minted.sessionId, new Date(app.now() + ms)])

    // Shortened (announced): remembered with the 60 s expiry once the notification has come back.
    await setIdle(60_000)
    await new Promise((resolve) => setTimeout(resolve, 200)) // the announcement of the change has come back
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    // Renewed to 200 s (not announced), then past the remembered 60 s: still accepted.
    await setIdle(200_000)
    await app.advance("90 seconds")
    expect((await userinfo(app, env, t.access_token)).status).toBe(200)
    // Shortened again (announced): refused once past it.
    await setIdle(10_000)
    await app.advance("20 seconds")
    await until(async () => (await userinfo(app, env, t.access_token)).status === 401)
  })
})
