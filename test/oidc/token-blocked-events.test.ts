import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import {
  createClient,
  createUser,
  exchangeCode,
  expectOAuthError,
  mintCode,
  queryRows,
  refresh,
  type TestClient,
  type TestUser,
} from "./support.js"

// Spec, OAuth error responses: "access_denied 403 blocked user" — with the real block route,
// which also raises the security version and revokes the sessions and refresh families.
// And the decision on events of a refresh (docs/decisions/login-and-tokens.md, "Tokens: refresh events").

let app: TestApp
let env: Bootstrapped
let spa: TestClient

beforeAll(async () => {
  app = await startApp()
  env = await app.bootstrap()
  spa = await createClient(app, env)
})
afterAll(async () => {
  await app?.close()
})

const login = async (who: TestUser) => {
  const minted = await mintCode(app, env, spa, who)
  const res = await exchangeCode(app, env, spa, minted)
  expect(res.status).toBe(200)
  return { ...(res.json as { access_token: string; refresh_token: string }), sessionId: minted.sessionId }
}
const block = async (who: TestUser) => {
  const res = await app.management(`/v1/users/${who.id}/block?environment_id=${env.environment_id}`, {
    method: "POST",
    body: {},
  })
  expect(res.status).toBe(200)
}
const familyOf = (token: string) => token.slice(3, token.indexOf("."))
const familyRow = async (token: string) =>
  (
    await queryRows<{ generation: number; revoked_at: Date | null; revoked_reason: string | null }>(
      app,
      "select generation, revoked_at, revoked_reason from refresh_families where id = $1",
      [familyOf(token)],
    )
  )[0]!
const outbox = async (type: string, userId: string) =>
  queryRows<{ envelope: { payload: Record<string, unknown>; actor?: unknown } }>(
    app,
    "select envelope from event_outbox where type = $1 and envelope->'payload'->>'userId' = $2 order by occurred_at, id",
    [type, userId],
  )

describe("a blocked user's grants answer 403 access_denied", () => {
  it("refresh after POST /users/{id}/block (which revoked the family): 403 access_denied, every generation, nothing changes", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    const rotated = await refresh(app, env, spa, first.refresh_token)
    expect(rotated.status).toBe(200)
    await block(who)
    const before = await familyRow(first.refresh_token)
    expect(before.revoked_reason).toBe("revoked")
    // the current generation, and the retired one (which would otherwise be reuse)
    expectOAuthError(await refresh(app, env, spa, rotated.json.refresh_token), 403, "access_denied")
    await app.advance("10 seconds")
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 403, "access_denied")
    expect(await familyRow(first.refresh_token)).toEqual(before)
    expect(await outbox("session.revoked", who.id)).toHaveLength(1) // the block's own, no reuse revocation
    // a forged secret proves nothing: still invalid_grant, the block is not revealed
    const forged = rotated.json.refresh_token.replace(/\.[^.]+$/, "." + "A".repeat(43))
    expectOAuthError(await refresh(app, env, spa, forged), 400, "invalid_grant")
  })

  it("a blocked user's expired family still answers 403 access_denied", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    await block(who)
    await app.advance("31 days")
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 403, "access_denied")
  })

  it("code exchange after a block: 403 access_denied, the code is not consumed; a used code replayed after a block too", async () => {
    const who = await createUser(app, env)
    const minted = await mintCode(app, env, spa, who)
    const used = await mintCode(app, env, spa, who)
    expect((await exchangeCode(app, env, spa, used)).status).toBe(200)
    await block(who)
    expectOAuthError(await exchangeCode(app, env, spa, minted), 403, "access_denied")
    const [code] = await queryRows<{ consumed_at: Date | null }>(
      app,
      "select consumed_at from authorization_codes where session_id = $1",
      [minted.sessionId],
    )
    expect(code!.consumed_at).toBeNull()
    const revokedBefore = await outbox("session.revoked", who.id)
    expectOAuthError(await exchangeCode(app, env, spa, used), 403, "access_denied")
    expect(await outbox("session.revoked", who.id)).toEqual(revokedBefore)
    // expired as well
    await app.advance("2 minutes")
    expectOAuthError(await exchangeCode(app, env, spa, minted), 403, "access_denied")
  })

  it("the block is revealed only to the holder of the verifier: a wrong verifier or redirect_uri is invalid_grant, the right one 403", async () => {
    const who = await createUser(app, env)
    const minted = await mintCode(app, env, spa, who)
    const used = await mintCode(app, env, spa, who)
    expect((await exchangeCode(app, env, spa, used)).status).toBe(200)
    await block(who)
    const wrongVerifier = { code_verifier: "b".repeat(43) }
    const wrongRedirect = { redirect_uri: spa.redirectUri + "/other" }
    for (const extra of [wrongVerifier, wrongRedirect]) {
      for (const code of [minted, used]) {
        const res = await exchangeCode(app, env, spa, code, extra)
        expectOAuthError(res, 400, "invalid_grant")
        expect(res.json.error_description).not.toMatch(/block|used/i)
      }
    }
    expectOAuthError(await exchangeCode(app, env, spa, minted), 403, "access_denied")
    expectOAuthError(await exchangeCode(app, env, spa, used), 403, "access_denied")
  })

  it("unblocked again, the old grants stay dead with invalid_grant (the block raised the security version)", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    await block(who)
    const res = await app.management(`/v1/users/${who.id}/unblock?environment_id=${env.environment_id}`, {
      method: "POST",
      body: {},
    })
    expect(res.status).toBe(200)
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 400, "invalid_grant")
  })
})

describe("events of a refresh", () => {
  it("a rotation emits login.succeeded with method refresh_token (same session and client), never session.created", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    expect((await outbox("login.succeeded", who.id)).map((e) => e.envelope.payload["method"])).toEqual(["email_otp"])
    await app.advance("1 second") // the outbox is read in occurred_at order
    const res = await refresh(app, env, spa, first.refresh_token)
    expect(res.status).toBe(200)
    const logins = await outbox("login.succeeded", who.id)
    expect(logins).toHaveLength(2)
    expect(logins[1]!.envelope.payload).toMatchObject({
      userId: who.id,
      sessionId: first.sessionId,
      method: "refresh_token",
      clientId: spa.id,
    })
    expect(logins[1]!.envelope.payload["ipPrefixHash"]).toMatch(/^[0-9a-f]{64}$/)
    expect(logins[1]!.envelope.actor).toEqual({ type: "end_user", id: who.id })
    expect(await outbox("session.created", who.id)).toHaveLength(1)
  })

  it("a grace-window replay and a refused refresh emit nothing", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    await app.advance("1 second")
    const res = await refresh(app, env, spa, first.refresh_token)
    const again = await refresh(app, env, spa, first.refresh_token)
    expect(again.text).toBe(res.text)
    expectOAuthError(
      await refresh(app, env, spa, res.json.refresh_token, { scope: "openid admin" }),
      400,
      "invalid_scope",
    )
    expect((await outbox("login.succeeded", who.id)).map((e) => e.envelope.payload["method"])).toEqual([
      "email_otp",
      "refresh_token",
    ])
  })

  it("a blocked user's refresh emits login.failed with method refresh_token, reason user_blocked; a forged one emits nothing", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    await block(who)
    expectOAuthError(await refresh(app, env, spa, first.refresh_token), 403, "access_denied")
    const failed = await outbox("login.failed", who.id)
    expect(failed).toHaveLength(1)
    expect(failed[0]!.envelope.payload).toMatchObject({
      userId: who.id,
      method: "refresh_token",
      reason: "user_blocked",
      clientId: spa.id,
    })
    expect(failed[0]!.envelope.payload["ipPrefixHash"]).toMatch(/^[0-9a-f]{64}$/)
    expect(failed[0]!.envelope.actor).toEqual({ type: "end_user", id: who.id })
    const forged = first.refresh_token.replace(/\.[^.]+$/, "." + "A".repeat(43))
    expectOAuthError(await refresh(app, env, spa, forged), 400, "invalid_grant")
    expect(await outbox("login.failed", who.id)).toHaveLength(1)
    expect(await outbox("login.succeeded", who.id)).toHaveLength(1)
  })

  it("of concurrent refreshes of one generation exactly one emits", async () => {
    const who = await createUser(app, env)
    const first = await login(who)
    const results = await Promise.all(Array.from({ length: 8 }, () => refresh(app, env, spa, first.refresh_token)))
    expect(results.every((r) => r.status === 200)).toBe(true)
    expect(new Set(results.map((r) => r.text)).size).toBe(1)
    expect(
      (await outbox("login.succeeded", who.id)).filter((e) => e.envelope.payload["method"] === "refresh_token"),
    ).toHaveLength(1)
  })
})
